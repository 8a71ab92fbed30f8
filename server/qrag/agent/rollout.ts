/**
 * PQN rollout (docs/method.md §3.2, §3.7): E environments step in lock-step; candidate embeddings
 * are computed at rollout start with the current weights (dropout on), for the episodes the
 * rollout surely starts too (drawAhead), else once per new episode, and only re-rotated at each
 * step; the E_a' ones, which only the values read, once after the rollout. The behaviour policy
 * is uniform during warm-up, then Boltzmann over the top-5. V_target(s_t) for the λ-returns is
 * computed once at the end of the rollout for all its states (and the bootstrap states) in one
 * batch: the target encoders do not change during a rollout (Polyak runs in the update), so this
 * equals the reference's value at collection time, but costs one forward instead of one per step
 * (on webgpu ~28 dispatches and 2 submits a step).
 */
import type { Sample, SampleSource } from "../types.ts";
import { RetrievalEpisode, type EpisodeConfig } from "../env/episode.ts";
import { applyPartialStart, type PartialStartConfig } from "../env/partial-start.ts";
import { scoreCandidates } from "../model/rotary.ts";
import * as tf from "@tensorflow/tfjs";
import { boltzmannTop5, drawPick, sampleTopK, uniformAvailable } from "./policy.ts";
import { lockStepSpan, queueLockSteps, readLockStepRuns, type LockStepRun } from "./lock-steps.ts";
import { availTensor, scorePolicyTopKJoined, scoreSoftValue } from "./device-scoring.ts";
import { joinFlat } from "../model/webgpu/join-rows.ts";
import { disposeJoined, joinBlocks, newBlock, releaseRef, scoreLayout, targetsJoined, type CandidateRef, type JoinedBlocks } from "./device-candidates.ts";
import { onDevice, withPhase, withPhaseAsync } from "../backend/device.ts";
import { softValue, type SoftValueHeads } from "./soft-value.ts";
import { rotaryPositions } from "./rotary-positions.ts";
import { embedActions, embedActionsDevice, embedStates, embedStatesDevice, type QNetworks } from "./networks.ts";
import type { Rng } from "../util/rng.ts";
import { breather } from "../util/breathe.ts";
import { recordJointly } from "../model/webgpu/recorded-encoder.ts";

export interface RolloutSettings {
  envs: number;
  /** Steps per env in one rollout (the lock-step count, B/E + 1 in the reference). */
  stepsPerEnv: number;
  maxActionLength: number;
  maxInMemory: number;
  sortByIndex: boolean;
  topk: number;
  /** How the target's soft value combines the two heads (soft-value.ts). */
  softValueHeads: SoftValueHeads;
  /**
   * Ours: the targets stop at completion (notDone 0 from the completing step on) while the episode
   * runs on: every later reward is 0 by construction, so V there is known to be 0 and bootstrapping
   * the estimate (the maximum over ~100 noisy candidates, ≈ 0.3–0.5 on qa2) only adds its bias.
   */
  absorbCompletion: boolean;
  episode: EpisodeConfig;
  /** Training episodes that start with some support already retrieved (env/partial-start.ts). */
  partialStarts?: PartialStartConfig;
  /** Device path: padded score slots (states × candidates) per batch of the deferred values (default VALUE_SLOTS_PER_BATCH). */
  valueSlotsPerBatch?: number;
}

/** The transitions of one rollout, env-major rows of length L = stepsPerEnv. */
export interface RolloutBatch {
  E: number;
  L: number;
  states: string[][];
  actionTexts: string[];
  actionPositions: Int32Array;
  reward: Float32Array;
  notDone: Float32Array;
  value: Float32Array;
  /** V_target of each environment's state after the rollout [E] (when `bootstrap` was asked for). */
  bootstrap: Float32Array | null;
  /**
   * With `valuesOnDevice` on the device path: V_target of the E·L states, then the E bootstrap
   * states, left on the device (`value` is then empty and `bootstrap` null). The caller disposes it.
   */
  deviceValues?: tf.Tensor1D;
}

/** What one rollout runs with (ParallelEnvs.collect). */
export interface CollectOptions {
  random: boolean;
  alpha: number;
  exploreEps: number;
  /** Also V_target of the states after the rollout (batch.bootstrap). */
  bootstrap?: boolean;
  /**
   * The device path leaves the values where they were computed (batch.deviceValues) instead of
   * reading them: the λ-returns are then taken there (iteration.ts), with no read in between.
   */
  valuesOnDevice?: boolean;
  signal?: AbortSignal;
}

/** A state whose V_target is computed at the end of the rollout: its episode's slot and the step's view of it. */
interface PendingValue {
  slot: EnvSlot;
  state: string[];
  positions: Int32Array;
  avail: Uint8Array;
}

/**
 * Whether the device path defers its reads (the default): a rollout's runs of lock-steps queued
 * back to back and read at once (deviceRuns), and a training iteration's values left on the
 * device (iteration.ts). Off, a run reads at its end and the values are read, as before
 * 2026-11-29: the bench's `--deferred-reads 0`, so one lease times both.
 */
let readsDeferred = true;

export function setDeferredReads(on: boolean): void {
  readsDeferred = on;
}

export const deferredReads = (): boolean => readsDeferred;

/** Padded score slots (states × candidates) per batch of deferred values: bounds its q1/q2/avail. */
const VALUE_SLOTS_PER_BATCH = 1 << 22;

interface EnvSlot {
  episode: RetrievalEpisode;
  online: Float32Array;
  /** E_a' embeddings (cpu path), made after the rollout with the values (targetValues). */
  target: Float32Array;
  q1: Float32Array;
  q2: Float32Array;
  ret: number;
  /** Device path: the rows of its candidates' E_a embeddings, kept on the device. */
  cands?: CandidateRef;
}

/** Each slot's rows of `flat`, the embeddings of the slots' candidates one slot after another. */
function perSlot(slots: readonly EnvSlot[], flat: Float32Array, D: number): Float32Array[] {
  let off = 0;
  return slots.map((s) => flat.subarray(off, (off += s.episode.numChunks * D)));
}

function disposeSlot(s: EnvSlot): void {
  if (s.cands) releaseRef(s.cands);
  s.cands = undefined;
}

/** Whether a slot's candidates are embedded (device rows, or cpu embeddings). */
const embedded = (s: EnvSlot): boolean => s.cands !== undefined || s.online.length > 0;

export class ParallelEnvs {
  private slots: EnvSlot[] = [];
  /** Per environment, the fresh episodes collect drew ahead (drawAhead), in the order its renewals take them. */
  private ahead: EnvSlot[][] = [];
  /** Whether the rollout under way scores the states after it (its bootstrap): episodes renewed at its end then need their candidates now. */
  private bootstrapping = false;
  /** The blocks of the current slots' E_a embeddings joined, until the slots change. */
  private joinedOnline: JoinedBlocks | null = null;
  /** Returns of episodes finished since the last call to takeFinishedReturns(). */
  private finished: number[] = [];
  /** Index of the next training sample (the generator is infinite; files wrap around). */
  sampleCursor: number;

  constructor(
    private readonly source: SampleSource,
    private readonly settings: RolloutSettings,
    private readonly rng: Rng,
    sampleCursor = 0,
  ) {
    this.sampleCursor = sampleCursor;
  }

  private nextSample(): Sample {
    const size = this.source.size;
    // finite files: draw at random like the reference's reset (np.random.randint(N))
    const i = Number.isFinite(size) ? this.rng.int(size) : this.sampleCursor;
    this.sampleCursor++;
    return this.source.sample(i);
  }

  private newSlot(): EnvSlot {
    const episode = new RetrievalEpisode(this.nextSample(), this.settings.episode);
    applyPartialStart(episode, this.rng, this.settings.partialStarts);
    const n = episode.numChunks;
    return { episode, online: new Float32Array(0), target: new Float32Array(0), q1: new Float32Array(n), q2: new Float32Array(n), ret: 0 };
  }

  private chunkTexts(ep: RetrievalEpisode): string[] {
    const c = ep.sample.chunks;
    const out = new Array<string>(c.length);
    for (let i = 0; i < c.length; i++) out[i] = c.at(i)!;
    return out;
  }

  /**
   * (Re-)embeds the candidates of these slots with E_a, all slots in one batch. E_a' embeds them
   * after the rollout, all of the rollout's slots in one batch (targetValues).
   */
  private embed(nets: QNetworks, slots: EnvSlot[]): void {
    const texts = slots.flatMap((s) => this.chunkTexts(s.episode));
    if (onDevice()) return withPhase("encode", () => this.embedDevice(nets, slots, texts));
    const online = withPhase("encode", () => embedActions(nets.action, texts, this.settings.maxActionLength, true));
    perSlot(slots, online, nets.dim).forEach((rows, i) => (slots[i].online = rows));
  }

  /** Device path of embed: the embeddings stay on the device, one block the slots reference. */
  private embedDevice(nets: QNetworks, slots: EnvSlot[], texts: string[]): void {
    const block = newBlock(embedActionsDevice(nets.action, texts, this.settings.maxActionLength, true), texts, slots.length);
    let row = 0;
    for (const s of slots) {
      const n = s.episode.numChunks;
      disposeSlot(s);
      s.cands = { block, row, n };
      row += n;
    }
  }

  /** Cpu path: E_a' embeddings of the slots the deferred values score, in one batch. */
  private embedTargets(nets: QNetworks, pending: readonly PendingValue[]): void {
    const slots = [...new Set(pending.map((p) => p.slot))];
    const target = embedActions(nets.actionTarget, slots.flatMap((s) => this.chunkTexts(s.episode)), this.settings.maxActionLength, true);
    perSlot(slots, target, nets.dim).forEach((rows, i) => (slots[i].target = rows));
  }

  /**
   * The policy's lock-step on the device for all environments: top-k candidate indices and values
   * per environment, in one fused program and one read. Row e: [topIdx(k), topVal(k)].
   */
  private async devicePolicy(nets: QNetworks, states: string[][]): Promise<{ data: Float32Array; k: number }> {
    const { maxInMemory, topk } = this.settings;
    const slots = this.slots;
    this.joinedOnline ??= joinBlocks(slots.map((s) => s.cands!));
    const layout = scoreLayout(slots.map((s) => ({ ref: s.cands!, positions: rotaryPositions(s.episode) })), this.joinedOnline);
    const k = Math.min(topk, layout.nMax);
    const cands = this.joinedOnline.cands;
    const top = tf.tidy(() => {
      const avail = availTensor(slots.map((s) => s.episode.available), layout.nMax);
      const sPolicy = embedStatesDevice(nets.policy, states, maxInMemory, true);
      return scorePolicyTopKJoined(sPolicy, cands, layout, avail, k);
    });
    const data = (await top.data()) as Float32Array;
    top.dispose();
    return { data, k };
  }

  private dropJoined(): void {
    disposeJoined(this.joinedOnline);
    this.joinedOnline = null;
  }

  /**
   * V_target of the deferred states, in their order: one batched target forward for all of them;
   * with `keep` on the device path, left there as one tensor (no read).
   */
  private async targetValues(nets: QNetworks, pending: readonly PendingValue[], alpha: number, keep: boolean): Promise<Float32Array | tf.Tensor1D> {
    const { maxInMemory, topk, softValueHeads } = this.settings;
    const states = pending.map((p) => p.state);
    if (!onDevice()) {
      this.embedTargets(nets, pending);
      const s = embedStates(nets.stateTarget, states, maxInMemory, true);
      const D = nets.dim;
      return Float32Array.from(pending, (p, i) => {
        const { slot } = p;
        scoreCandidates(s.subarray(i * D, (i + 1) * D), slot.target, p.positions, slot.q1, slot.q2);
        return softValue(slot.q1, slot.q2, p.avail, alpha, topk, softValueHeads);
      });
    }
    // the candidates of every episode the rollout saw, each block once; the states index into them
    // E_a' and E_s' forwards recorded together: their programs interleaved, one of each as one dispatch where they may be
    const [joined, sTarget] = recordJointly(() => [
      targetsJoined(pending.map((p) => p.slot.cands!), (texts) => embedActionsDevice(nets.actionTarget, texts, this.settings.maxActionLength, true)),
      embedStatesDevice(nets.stateTarget, states, maxInMemory, true),
    ] as const);
    const nMax = Math.max(1, ...pending.map((p) => p.avail.length));
    const per = Math.max(1, Math.floor((this.settings.valueSlotsPerBatch ?? VALUE_SLOTS_PER_BATCH) / nMax));
    const out = new Float32Array(pending.length);
    const kept: tf.Tensor1D[] = [];
    try {
      for (let i0 = 0; i0 < pending.length; i0 += per) {
        const rows = pending.slice(i0, i0 + per);
        const layout = scoreLayout(rows.map((p) => ({ ref: p.slot.cands!, positions: p.positions })), joined);
        const v = tf.tidy(() => {
          const s = rows.length === pending.length ? sTarget : tf.slice(sTarget, [i0, 0], [rows.length, -1]);
          return scoreSoftValue(s, joined.cands, layout, availTensor(rows.map((p) => p.avail), layout.nMax), alpha, topk, softValueHeads);
        });
        if (keep) {
          kept.push(v as tf.Tensor1D);
          continue;
        }
        out.set((await v.data()) as Float32Array, i0);
        v.dispose();
      }
      if (keep) return kept.length === 1 ? kept.pop()! : joinFlat(kept);
    } finally {
      tf.dispose(kept);
      sTarget.dispose();
      disposeJoined(joined);
    }
    return out;
  }

  /** Releases the device-resident candidate embeddings. */
  dispose(): void {
    this.slots.forEach(disposeSlot);
    this.dropJoined();
  }

  takeFinishedReturns(): number[] {
    const r = this.finished;
    this.finished = [];
    return r;
  }

  /**
   * Runs one rollout of E × stepsPerEnv transitions. `exploreEps`: the chance of a uniform pick among
   * the policy's top-k (policy.ts; 0 = the reference's policy), per rollout since it may be annealed.
   * `bootstrap`: also V_target of the states after the rollout (batch.bootstrap), in the same batch.
   */
  async collect(nets: QNetworks, opts: CollectOptions): Promise<RolloutBatch> {
    const { envs: E, stepsPerEnv: L } = this.settings;
    while (this.slots.length < E) this.slots.push(this.newSlot());
    this.bootstrapping = opts.bootstrap ?? false;
    this.drawAhead(L);
    // Embeddings are recomputed at rollout start with the current weights (docs/method.md §3.2),
    // the episodes drawn ahead's with them: the weights do not change during a rollout.
    this.embed(nets, [...this.slots, ...this.ahead.flat()]);
    this.dropJoined();
    const batch: RolloutBatch = {
      E, L,
      states: new Array(E * L),
      actionTexts: new Array(E * L),
      actionPositions: new Int32Array(E * L),
      reward: new Float32Array(E * L),
      notDone: new Float32Array(E * L),
      value: new Float32Array(E * L),
      bootstrap: null,
    };
    // pending[e * L + t] (then the E bootstrap states); episodes that ended stay alive until their values are in
    const pending = new Array<PendingValue>(E * L);
    const retired: EnvSlot[] = [];
    try {
      await this.steps(nets, opts, batch, pending, retired);
      if (opts.bootstrap) {
        for (const slot of this.slots) pending.push(this.pendingOf(slot, slot.episode.stateTexts(this.settings.sortByIndex)));
      }
      const v = await withPhaseAsync("target", () => this.targetValues(nets, pending, opts.alpha, opts.valuesOnDevice ?? false));
      if (v instanceof Float32Array) {
        batch.value.set(v.subarray(0, E * L));
        if (opts.bootstrap) batch.bootstrap = v.slice(E * L);
      } else {
        batch.value = new Float32Array(0);
        batch.deviceValues = v;
      }
    } finally {
      retired.forEach(disposeSlot);
      // left only by an aborted rollout: they are drawn again (from the rng's later numbers) by the next
      for (const q of this.ahead) q.forEach(disposeSlot);
      this.ahead = [];
    }
    return batch;
  }

  /**
   * Draws, before any pick, the fresh episodes this rollout of L lock-steps surely starts, in the
   * order renewals draw them (by lock-step, then environment): an episode that can end only by
   * truncation (never_terminate, as the paper's recipe runs) ends at a step known now. collect
   * then embeds their candidates with the rollout's others in one forward (on webgpu one encoder
   * forward a rollout instead of one a renewal: 30 programs fewer an iteration of the reference
   * workload). An episode that may end earlier stops its environment's chain: its successor is
   * drawn when it ends, as is one starting at the rollout's end. Both backends draw in this order.
   */
  private drawAhead(L: number): void {
    // the lock-step after which each environment's episode surely ends (Infinity: not known now)
    const endAt = (ep: RetrievalEpisode, t0: number): number => {
      const left = ep.stepsToTruncation;
      return left > 0 && ep.stepsBeforeEnd === left ? t0 + left : Infinity;
    };
    const ends = this.slots.map((s) => endAt(s.episode, 0));
    this.ahead = this.slots.map(() => []);
    for (let t = Math.min(...ends); t < L; t = Math.min(...ends)) {
      ends.forEach((end, e) => {
        if (end !== t) return;
        const slot = this.newSlot();
        this.ahead[e].push(slot);
        ends[e] = endAt(slot.episode, t);
      });
    }
  }

  private pendingOf(slot: EnvSlot, state: string[]): PendingValue {
    // positions are replaced, never changed in place, by a step; availability is changed in place
    return { slot, state, positions: rotaryPositions(slot.episode), avail: slot.episode.available.slice() };
  }

  /**
   * The rollout's lock-steps: actions, rewards and the states whose values are pending. On the
   * device, runs of lock-steps no episode can end inside go to the device (lock-steps.ts) and are
   * replayed here (deviceRuns); the others read their picks one step at a time.
   */
  private async steps(nets: QNetworks, opts: CollectOptions, batch: RolloutBatch, pending: PendingValue[], retired: EnvSlot[]): Promise<void> {
    const device = onDevice();
    // on the CPU backends a rollout runs without awaiting anything: let a cancel in between steps
    const breathe = breather();
    const { stepsPerEnv: L, sortByIndex } = this.settings;
    for (let t = 0; t < L; ) {
      await breathe();
      opts.signal?.throwIfAborted();
      const ran = device && !opts.random ? await this.deviceRuns(nets, opts, t, batch, pending, retired) : 0;
      if (ran > 0) {
        t += ran;
        continue;
      }
      const states = this.slots.map((s) => s.episode.stateTexts(sortByIndex));
      this.applyStep(nets, t, this.slots, states, await this.pickActions(nets, opts, states), true, batch, pending, retired);
      t++;
    }
  }

  /**
   * Runs of lock-steps from step t0 queued on the device one after another, and read once. A run
   * ends where an episode may end; where every episode surely ends there (truncation at max_steps,
   * whatever was picked), the next episodes do not depend on the picks, so they are drawn and
   * embedded here and the next run is queued behind it: a rollout with one environment and
   * never_terminate (the paper's recipe) reads once instead of once an episode, and the GPU does
   * not wait on the host between episodes. The picks are then replayed in order, as if read run by
   * run (the rng's numbers are drawn in the same order). Returns the lock-steps run: 0 where the
   * device path does not apply (nothing drawn) or a lone step, which devicePolicy reads as cheaply.
   */
  private async deviceRuns(nets: QNetworks, opts: CollectOptions, t0: number, batch: RolloutBatch, pending: PendingValue[], retired: EnvSlot[]): Promise<number> {
    const { stepsPerEnv: L, maxInMemory, topk, sortByIndex } = this.settings;
    const runs: { slots: EnvSlot[]; states: string[][]; t: number; run: LockStepRun; renewed: boolean }[] = [];
    try {
      for (let t = t0; t < L; ) {
        const slots = [...this.slots];
        const S = lockStepSpan(slots.map((s) => s.episode), L - t);
        const renew = readsDeferred && t + S < L && slots.every((s) => s.episode.stepsToTruncation === S);
        if (S < 1 || (S < 2 && !renew && !runs.length)) break;
        if (runs.length) opts.signal?.throwIfAborted();
        this.joinedOnline ??= joinBlocks(slots.map((s) => s.cands!));
        const states = slots.map((s) => s.episode.stateTexts(sortByIndex));
        const envs = slots.map((s) => ({ episode: s.episode, ref: s.cands! }));
        const run = queueLockSteps(nets.policy, envs, this.joinedOnline, S, { maxInMemory, topk, sortByIndex, alpha: opts.alpha, eps: opts.exploreEps }, this.rng);
        if (!run) break;
        runs.push({ slots, states, t, run, renewed: renew });
        t += S;
        if (!renew) break;
        // as applyStep does after a run's last step, in the same order
        this.renew(nets, slots.map((_, e) => e), retired);
      }
      if (!runs.length) return 0;
      const picks = await readLockStepRuns(runs.map((r) => r.run));
      runs.forEach((r, k) =>
        picks[k].forEach((actions, i) => {
          const states = i === 0 ? r.states : r.slots.map((s) => s.episode.stateTexts(sortByIndex));
          this.applyStep(nets, r.t + i, r.slots, states, actions, i === r.run.S - 1, batch, pending, retired, r.renewed);
        }),
      );
      return runs.reduce((n, r) => n + r.run.S, 0);
    } finally {
      for (const r of runs) r.run.env.dispose();
    }
  }

  /** One lock-step's picks, one per environment: the policy's (its top-k read from the device, or scored here), or uniform in the random phase. */
  private async pickActions(nets: QNetworks, opts: CollectOptions, states: string[][]): Promise<number[]> {
    const device = onDevice();
    const { maxInMemory, topk } = this.settings;
    const D = nets.dim;
    const dev = device && !opts.random ? await this.devicePolicy(nets, states) : null;
    const sPolicy = device || opts.random ? null : embedStates(nets.policy, states, maxInMemory, true);
    return this.slots.map((slot, e) => {
      const ep = slot.episode;
      const avail = ep.available;
      if (dev) {
        const row = dev.data.subarray(e * 2 * dev.k, (e + 1) * 2 * dev.k);
        const top: number[] = [];
        const vals: number[] = [];
        for (let i = 0; i < dev.k; i++) {
          const j = row[i];
          if (j < ep.numChunks && avail[j]) {
            top.push(j);
            vals.push(row[dev.k + i]);
          }
        }
        return sampleTopK(top, vals, opts.alpha, drawPick(this.rng, opts.exploreEps), opts.exploreEps);
      }
      if (sPolicy) {
        scoreCandidates(sPolicy.subarray(e * D, (e + 1) * D), slot.online, rotaryPositions(ep), slot.q1, slot.q2);
        const logits = slot.q1.map((v, j) => v + slot.q2[j]);
        return boltzmannTop5(logits, avail, opts.alpha, this.rng, topk, opts.exploreEps);
      }
      return uniformAvailable(avail, this.rng);
    });
  }

  /**
   * Applies lock-step t's picks to `slots` (the environments as the step found them): the
   * transitions into the batch, the states' pending values, and (when `last`, the end of a device
   * run) fresh episodes for those that ended, unless deviceRuns `renewed` them all already. An
   * episode ending before its run's last step is a bug in lockStepSpan, and throws.
   */
  private applyStep(nets: QNetworks, t: number, slots: readonly EnvSlot[], states: string[][], actions: readonly number[], last: boolean, batch: RolloutBatch, pending: PendingValue[], retired: EnvSlot[], renewed = false): void {
    const L = this.settings.stepsPerEnv;
    const ended: number[] = [];
    slots.forEach((slot, e) => {
      const ep = slot.episode;
      const k = e * L + t;
      pending[k] = this.pendingOf(slot, states[e]);
      const action = actions[e];
      const rotPos = rotaryPositions(ep)[action];
      const r = ep.step(action);
      batch.states[k] = states[e];
      batch.actionTexts[k] = r.item.text;
      batch.actionPositions[k] = rotPos; // selection-time position (docs/method.md §3.5)
      batch.reward[k] = r.reward;
      batch.notDone[k] = r.done || (this.settings.absorbCompletion && r.completed) ? 0 : 1;
      slot.ret += r.reward;
      if (r.done) {
        if (!last) throw new Error(`rollout: an episode ended at lock-step ${t}, inside a device run`);
        this.finished.push(slot.ret);
        ended.push(e);
      }
    });
    if (renewed) {
      if (last && ended.length !== slots.length) throw new Error(`rollout: ${slots.length - ended.length} episode(s) ran on past lock-step ${t}, where truncation had to end them`);
    } else if (ended.length) {
      this.renew(nets, ended, retired, t + 1 < L || this.bootstrapping);
    }
  }

  /**
   * Fresh episodes in place of the slots `ended` (in that order): those drawAhead drew, else new
   * ones, whose candidates are embedded together (one batch per encoder) unless `now` is false
   * (renewed at the rollout's end with no bootstrap: the next rollout embeds them at its start).
   */
  private renew(nets: QNetworks, ended: readonly number[], retired: EnvSlot[], now = true): void {
    const fresh = ended.map((e) => this.ahead[e]?.shift() ?? this.newSlot());
    const bare = fresh.filter((s) => !embedded(s));
    if (now && bare.length) this.embed(nets, bare);
    ended.forEach((e, i) => {
      retired.push(this.slots[e]);
      this.slots[e] = fresh[i];
    });
    this.dropJoined();
  }
}
