/**
 * PQN rollout (docs/method.md §3.2, §3.7): E environments step in lock-step; candidate embeddings
 * are computed once per episode and per rollout start with the current weights (dropout on), and
 * only re-rotated at each step. The behaviour policy is uniform during warm-up, then Boltzmann
 * over the top-5; V_target(s_t) is stored at collection time for the λ-returns.
 */
import type { Sample, SampleSource } from "../types.ts";
import { RetrievalEpisode, type EpisodeConfig } from "../env/episode.ts";
import { applyPartialStart, type PartialStartConfig } from "../env/partial-start.ts";
import { scoreCandidates } from "../model/rotary.ts";
import * as tf from "@tensorflow/tfjs";
import { boltzmannTop5, sampleTopK, uniformAvailable } from "./policy.ts";
import { availTensor, policyTopK, readJoined, scorePadded, softValueDevice } from "./device-scoring.ts";
import { onDevice, withPhase } from "../backend/device.ts";
import { softValue, type SoftValueHeads } from "./soft-value.ts";
import { rotaryPositions } from "./rotary-positions.ts";
import { embedActions, embedActionsDevice, embedStates, embedStatesDevice, type QNetworks } from "./networks.ts";
import type { Rng } from "../util/rng.ts";
import { breather } from "../util/breathe.ts";

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
}

interface EnvSlot {
  episode: RetrievalEpisode;
  online: Float32Array;
  target: Float32Array;
  q1: Float32Array;
  q2: Float32Array;
  ret: number;
  /** Device path: E_a / E_a' embeddings of the candidates, [n, D], kept on the device. */
  dOnline?: tf.Tensor2D;
  dTarget?: tf.Tensor2D;
}

function disposeSlot(s: EnvSlot): void {
  s.dOnline?.dispose();
  s.dTarget?.dispose();
}

export class ParallelEnvs {
  private slots: EnvSlot[] = [];
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

  /** (Re-)embeds the candidates of these slots with E_a and E_a', all slots in one batch per encoder. */
  private embed(nets: QNetworks, slots: EnvSlot[]): void {
    const texts = slots.flatMap((s) => this.chunkTexts(s.episode));
    if (onDevice()) return withPhase("encode", () => this.embedDevice(nets, slots, texts));
    const { online, target } = withPhase("encode", () => ({
      online: embedActions(nets.action, texts, this.settings.maxActionLength, true),
      target: embedActions(nets.actionTarget, texts, this.settings.maxActionLength, true),
    }));
    const D = nets.dim;
    let off = 0;
    for (const s of slots) {
      const len = s.episode.numChunks * D;
      s.online = online.subarray(off, off + len);
      s.target = target.subarray(off, off + len);
      off += len;
    }
  }

  /** Device path of embed: both encoders' embeddings stay on the device, one slice per slot. */
  private embedDevice(nets: QNetworks, slots: EnvSlot[], texts: string[]): void {
    const { maxActionLength } = this.settings;
    tf.tidy(() => {
      const online = embedActionsDevice(nets.action, texts, maxActionLength, true);
      const target = embedActionsDevice(nets.actionTarget, texts, maxActionLength, true);
      let off = 0;
      for (const s of slots) {
        const n = s.episode.numChunks;
        disposeSlot(s);
        s.dOnline = tf.keep(tf.slice(online, [off, 0], [n, -1]));
        s.dTarget = tf.keep(tf.slice(target, [off, 0], [n, -1]));
        off += n;
      }
    });
  }

  /**
   * One lock-step on the device for all environments: policy top-k (unless random) and target
   * soft values, brought back in one read. Row e of the result: [topIdx(k), topVal(k), V].
   */
  private async deviceStep(nets: QNetworks, states: string[][], random: boolean, alpha: number): Promise<{ data: Float32Array; k: number; width: number }> {
    const { maxInMemory, topk } = this.settings;
    const slots = this.slots;
    const counts = slots.map((s) => s.episode.numChunks);
    const nMax = Math.max(1, ...counts);
    const positions = new Int32Array(counts.reduce((a, b) => a + b, 0));
    let off = 0;
    for (const s of slots) {
      positions.set(rotaryPositions(s.episode), off);
      off += s.episode.numChunks;
    }
    const k = Math.min(topk, nMax);
    const cols = tf.tidy(() => {
      const avail = availTensor(slots.map((s) => s.episode.available), nMax);
      const out: tf.Tensor[] = [];
      if (!random) {
        const sPolicy = embedStatesDevice(nets.policy, states, maxInMemory, true);
        const cand = slots.length === 1 ? slots[0].dOnline! : (tf.concat(slots.map((s) => s.dOnline!), 0) as tf.Tensor2D);
        const { q1, q2 } = scorePadded(sPolicy, cand, positions, counts);
        const top = policyTopK(q1, q2, avail, k);
        out.push(top.indices, top.values);
      }
      return withPhase("target", () => {
        const sTarget = embedStatesDevice(nets.stateTarget, states, maxInMemory, true);
        const cand = slots.length === 1 ? slots[0].dTarget! : (tf.concat(slots.map((s) => s.dTarget!), 0) as tf.Tensor2D);
        const { q1, q2 } = scorePadded(sTarget, cand, positions, counts);
        out.push(softValueDevice(q1, q2, avail, alpha, topk, this.settings.softValueHeads));
        return out;
      });
    });
    const data = await readJoined(cols);
    cols.forEach((c) => c.dispose());
    return { data, k, width: random ? 1 : 2 * k + 1 };
  }

  /** Releases the device-resident candidate embeddings. */
  dispose(): void {
    this.slots.forEach(disposeSlot);
  }

  takeFinishedReturns(): number[] {
    const r = this.finished;
    this.finished = [];
    return r;
  }

  /**
   * Runs one rollout of E × stepsPerEnv transitions. `exploreEps`: the chance of a uniform pick among
   * the policy's top-k (policy.ts; 0 = the reference's policy), per rollout since it may be annealed.
   */
  async collect(nets: QNetworks, opts: { random: boolean; alpha: number; exploreEps: number; signal?: AbortSignal }): Promise<RolloutBatch> {
    const device = onDevice();
    // on the CPU backends a rollout runs without awaiting anything: let a cancel in between steps
    const breathe = breather();
    const { envs: E, stepsPerEnv: L, maxInMemory, sortByIndex, topk } = this.settings;
    while (this.slots.length < E) this.slots.push(this.newSlot());
    // Embeddings are recomputed at rollout start with the current weights (docs/method.md §3.2).
    this.embed(nets, this.slots);
    const D = nets.dim;
    const batch: RolloutBatch = {
      E, L,
      states: new Array(E * L),
      actionTexts: new Array(E * L),
      actionPositions: new Int32Array(E * L),
      reward: new Float32Array(E * L),
      notDone: new Float32Array(E * L),
      value: new Float32Array(E * L),
    };
    for (let t = 0; t < L; t++) {
      await breathe();
      opts.signal?.throwIfAborted();
      const states = this.slots.map((s) => s.episode.stateTexts(sortByIndex));
      const dev = device ? await this.deviceStep(nets, states, opts.random, opts.alpha) : null;
      const sTarget = dev ? null : withPhase("target", () => embedStates(nets.stateTarget, states, maxInMemory, true));
      const sPolicy = dev || opts.random ? null : embedStates(nets.policy, states, maxInMemory, true);
      const ended: number[] = [];
      for (let e = 0; e < E; e++) {
        const slot = this.slots[e];
        const ep = slot.episode;
        const avail = ep.available;
        let action: number;
        let v: number;
        if (dev) {
          const row = dev.data.subarray(e * dev.width, (e + 1) * dev.width);
          if (opts.random) {
            action = uniformAvailable(avail, this.rng);
          } else {
            const top: number[] = [];
            const vals: number[] = [];
            for (let i = 0; i < dev.k; i++) {
              const j = row[i];
              if (j < ep.numChunks && avail[j]) {
                top.push(j);
                vals.push(row[dev.k + i]);
              }
            }
            action = sampleTopK(top, vals, opts.alpha, this.rng, opts.exploreEps);
          }
          v = row[dev.width - 1];
        } else if (sPolicy) {
          scoreCandidates(sPolicy.subarray(e * D, (e + 1) * D), slot.online, rotaryPositions(ep), slot.q1, slot.q2);
          const logits = slot.q1.map((v, j) => v + slot.q2[j]);
          action = boltzmannTop5(logits, avail, opts.alpha, this.rng, topk, opts.exploreEps);
          v = this.targetValue(sTarget!, e, D, slot, opts.alpha, topk);
        } else {
          action = uniformAvailable(avail, this.rng);
          v = this.targetValue(sTarget!, e, D, slot, opts.alpha, topk);
        }
        const rotPos = rotaryPositions(ep)[action];
        const r = ep.step(action);
        const k = e * L + t;
        batch.states[k] = states[e];
        batch.actionTexts[k] = r.item.text;
        batch.actionPositions[k] = rotPos; // selection-time position (docs/method.md §3.5)
        batch.reward[k] = r.reward;
        batch.notDone[k] = r.done || (this.settings.absorbCompletion && r.completed) ? 0 : 1;
        batch.value[k] = v;
        slot.ret += r.reward;
        if (r.done) {
          this.finished.push(slot.ret);
          ended.push(e);
        }
      }
      // reset finished envs; their new candidates are embedded together (one batch per encoder)
      if (ended.length) {
        const fresh = ended.map(() => this.newSlot());
        this.embed(nets, fresh);
        ended.forEach((e, i) => {
          disposeSlot(this.slots[e]);
          this.slots[e] = fresh[i];
        });
      }
    }
    return batch;
  }

  /** Host path: V_target of env e's state (its target embedding row in `sTarget`). */
  private targetValue(sTarget: Float32Array, e: number, D: number, slot: EnvSlot, alpha: number, topk: number): number {
    scoreCandidates(sTarget.subarray(e * D, (e + 1) * D), slot.target, rotaryPositions(slot.episode), slot.q1, slot.q2);
    return softValue(slot.q1, slot.q2, slot.episode.available, alpha, topk, this.settings.softValueHeads);
  }

  /** V_target of the current states, for bootstrapping when the last transition is kept. */
  async bootstrapValues(nets: QNetworks, alpha: number): Promise<Float32Array> {
    const { maxInMemory, sortByIndex, topk } = this.settings;
    const states = this.slots.map((s) => s.episode.stateTexts(sortByIndex));
    if (onDevice()) {
      const dev = await this.deviceStep(nets, states, true, alpha);
      return Float32Array.from(dev.data);
    }
    const s = embedStates(nets.stateTarget, states, maxInMemory, true);
    const D = nets.dim;
    return Float32Array.from(this.slots, (slot, e) => {
      scoreCandidates(s.subarray(e * D, (e + 1) * D), slot.target, rotaryPositions(slot.episode), slot.q1, slot.q2);
      return softValue(slot.q1, slot.q2, slot.episode.available, alpha, topk, this.settings.softValueHeads);
    });
  }
}
