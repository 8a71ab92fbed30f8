/**
 * Several rollout lock-steps on the device with ONE read (model/webgpu/lock-step.ts): where no
 * episode can end before the last of S steps (RetrievalEpisode.stepsBeforeEnd), nothing the host
 * does between them depends on what happened, except the picks themselves; those are sampled on
 * the device from numbers the host draws now, in the order the host path draws them, and the
 * next state is packed there. The host then reads the environments' selected lists once and
 * replays the S steps (rewards, texts, values) as the step-by-step path would have. Runs can be
 * queued back to back before that read where every episode surely ends with a run (rollout.ts
 * deviceRuns): their rows are read together (readLockStepRuns).
 *
 * Applies on webgpu to encoders that pack states on the device (encoder.ts DeviceStates: the
 * built-in transformer and a Hugging Face BERT), up to the fused top-k's 8,192 candidates;
 * elsewhere (the bag-of-words encoder, the cpu backends) null, and the rollout reads every step.
 * Equal to the step-by-step path's picks wherever the float32 sampling lands on the same side of
 * each boundary (its float64 one, on values read from the same device), and its
 * states' embeddings bit for bit without dropout: a forward's rows may pad to a longer length
 * (the bound below), which the masks make no difference to, but with dropout on the masks are
 * drawn over the padded shape, so they differ from the step-by-step path's (an equally valid draw).
 */
import * as tf from "@tensorflow/tfjs";
import type { RetrievalEpisode } from "../env/episode.ts";
import type { QEncoder } from "../model/base.ts";
import { POOL_SCALE, type DeviceStates } from "../model/encoder.ts";
import { chunkAt } from "../types.ts";
import { nextPow2 } from "../model/ops.ts";
import { defaultRotary } from "../model/rotary.ts";
import { maxValueOf } from "../env/positions.ts";
import { rotaryRows } from "../model/device-ops.ts";
import { storageBufferLimit } from "../model/webgpu/raw-program.ts";
import { ENV_HEADER, lockStep, type LockStepInputs, type LockStepShape } from "../model/webgpu/lock-step.ts";
import { availTensor } from "./device-scoring.ts";
import { joinFlat } from "../model/webgpu/join-rows.ts";
import { scoreLayout, type CandidateRef, type JoinedBlocks } from "./device-candidates.ts";
import { rotaryPositions } from "./rotary-positions.ts";
import { drawPick, pickDraws } from "./policy.ts";
import type { Rng } from "../util/rng.ts";

/** The fused top-k's row bound (device-scoring.ts). */
const MAX_CANDIDATES = 8192;
/** Storage buffers the rotary lock-step program binds. */
const BINDINGS = 15;

export interface LockStepEnv {
  episode: RetrievalEpisode;
  ref: CandidateRef;
}

export interface LockStepSettings {
  maxInMemory: number;
  topk: number;
  sortByIndex: boolean;
  alpha: number;
  eps: number;
}

/** How many lock-steps (at most `left`) can run on the device from here: no episode ends before the last of them. */
export function lockStepSpan(episodes: readonly RetrievalEpisode[], left: number): number {
  return Math.min(left, ...episodes.map((ep) => ep.stepsBeforeEnd));
}

/** An episode's pieces as the encoder packs them: the question's ids and each candidate's (cut at P). */
interface Pieces {
  q: Int32Array;
  ids: Int32Array;
  lens: Int32Array;
}

/** Each episode's pieces, made at its first run (by this encoder, at this cap), for its later runs. */
const piecesCache = new WeakMap<RetrievalEpisode, { enc: QEncoder; P: number; pieces: Pieces }>();

function piecesOf(ep: RetrievalEpisode, enc: QEncoder, ds: DeviceStates, P: number): Pieces {
  const hit = piecesCache.get(ep);
  if (hit && hit.enc === enc && hit.P === P) return hit.pieces;
  const n = ep.numChunks;
  const q = new Int32Array(P);
  const qLen = ds.pieceIds(ep.sample.question, P, q, 0);
  const ids = new Int32Array(n * P);
  const lens = new Int32Array(n);
  for (let j = 0; j < n; j++) lens[j] = ds.pieceIds(chunkAt(ep.sample.chunks, j), P, ids, j * P);
  const pieces = { q: q.subarray(0, qLen), ids, lens };
  piecesCache.set(ep, { enc, P, pieces });
  return pieces;
}

/** A state's row length as packStates makes it (before maxLen): [cls], then each piece and [sep]. */
function rowLength(p: Pieces, selected: readonly number[]): number {
  let len = 2 + p.q.length;
  for (const j of selected) len += p.lens[j] + 1;
  return len;
}

/**
 * The run's first states as a lock-step writes a state's tokens (lock-step.ts writeTokens), from
 * the pieces on the host: [2, E, T] ids and the mask's float bits ([cls], the question, [sep],
 * each selected piece in retrieval or index order and [sep], cut at maxLen).
 */
function firstTokens(pieces: readonly Pieces[], eps: readonly RetrievalEpisode[], T: number, ds: DeviceStates, P: number, sortByIndex: boolean): Int32Array {
  const E = eps.length, N = E * T;
  const out = new Int32Array(2 * N);
  const one = new Int32Array(new Float32Array([1]).buffer)[0];
  eps.forEach((ep, e) => {
    const p = pieces[e];
    const order = sortByIndex ? [...ep.selected].sort((a, b) => a - b) : ep.selected;
    const row = [ds.cls, ...p.q, ds.sep, ...order.flatMap((j) => [...p.ids.subarray(j * P, j * P + p.lens[j]), ds.sep])];
    const len = Math.min(row.length, ds.maxLen);
    out.set(row.slice(0, len), e * T);
    out.fill(one, N + e * T, N + e * T + len);
  });
  return out;
}

/**
 * `S` lock-steps of `envs` queued on the device and not read: the environments' rows after the
 * last step (`env`, int32; each row's selected list holds the run's picks), to read once the
 * caller has nothing left to queue (readLockStepRuns). `numSteps`: each episode's steps before the run.
 */
export interface LockStepRun {
  env: tf.Tensor;
  S: number;
  /** Ints per environment row (ENV_HEADER + 2·M). */
  H: number;
  numSteps: number[];
}

/**
 * The padded length of a queued forward whose rows are only bounded, not known (the picks are
 * drawn on the device): the next power of two up to 64 tokens, then the next multiple of 64, at
 * most `maxLen`. The bound adds the longest still-available pieces, any of which could be picked,
 * so it runs well past the rows' real lengths (`babilong-gpu`: pieces up to 64 tokens); its power
 * of two was up to twice the multiple of 64, and every padded row and attention key is computed
 * and masked. Padding is masked, so the values do not depend on it.
 */
export function boundLength(bound: number, maxLen: number): number {
  const n = Math.max(1, bound);
  return Math.min(maxLen, n <= 64 ? nextPow2(n) : Math.ceil(n / 64) * 64);
}

/** A run's picks [S][E] from its environment rows, read at `offset` of `rows` (several runs read together). */
function lockStepPicks(run: LockStepRun, rows: Int32Array, offset: number): number[][] {
  return Array.from({ length: run.S }, (_, s) => run.numSteps.map((n, e) => rows[offset + e * run.H + ENV_HEADER + n + s]));
}

/** The picks [S][E] of queued runs, in their order, with one read (their rows joined by buffer copies). */
export async function readLockStepRuns(runs: readonly LockStepRun[]): Promise<number[][][]> {
  const all = runs.length === 1 ? runs[0].env : joinFlat(runs.map((r) => r.env));
  try {
    const rows = (await all.data()) as Int32Array;
    let offset = 0;
    return runs.map((r) => {
      const picks = lockStepPicks(r, rows, offset);
      offset += r.env.size;
      return picks;
    });
  } finally {
    if (all !== runs[0].env) all.dispose();
  }
}

/**
 * Queues `S` ≥ 1 lock-steps of `envs` on the device (the first on `first`, the states as the host
 * packs them; the picks' numbers drawn from `rng` now), or returns null where this path does not
 * apply (the caller then steps one read at a time; nothing was drawn).
 */
export function queueLockSteps(enc: QEncoder, envs: readonly LockStepEnv[], joined: JoinedBlocks, S: number, st: LockStepSettings, rng: Rng): LockStepRun | null {
  const ds = enc.deviceStates();
  const E = envs.length;
  if (!ds || S < 1 || E === 0 || storageBufferLimit() < BINDINGS) return null;
  const eps = envs.map((e) => e.episode);
  const nMax = Math.max(1, ...eps.map((ep) => ep.numChunks));
  if (nMax > MAX_CANDIDATES) return null;
  const P = Math.max(0, st.maxInMemory);
  const pieces = eps.map((ep) => piecesOf(ep, enc, ds, P));
  // each forward's padded length: a row grows by at most the s longest pieces still available
  const grows = eps.map((ep, e) => {
    const lens = pieces[e].lens.filter((_, j) => ep.available[j]).sort((a, b) => b - a);
    let len = rowLength(pieces[e], ep.selected);
    return Array.from({ length: S }, (_, s) => (len += s < lens.length ? lens[s] + 1 : 0));
  });
  // the first forward's padded length (its rows known), then each later one's bound
  const T0 = boundLength(Math.max(...eps.map((ep, e) => rowLength(pieces[e], ep.selected))), ds.maxLen);
  const Ts = Array.from({ length: S - 1 }, (_, s) => boundLength(Math.max(...grows.map((g) => g[s])), ds.maxLen));
  if (![T0, ...Ts].every((T) => ds.fits(E, T, true))) return null;

  const D = enc.dim;
  const M = Math.max(1, ...eps.map((ep) => Math.min(ep.maxSteps, ep.numChunks)));
  const H = ENV_HEADER + 2 * M;
  const env = new Int32Array(E * H);
  eps.forEach((ep, e) => {
    const o = e * H;
    env.set([ep.numSteps, ep.numChunks, pieces[e].q.length, 0], o);
    env.set(ep.selected, o + ENV_HEADER);
    env.set([...ep.selected].sort((a, b) => a - b), o + ENV_HEADER + M);
  });
  const nu = pickDraws(st.eps);
  // consts' parts one after another (lock-step.ts): question ids, piece ids, their lengths, pooling weights, the picks' numbers
  const cOff = E * P;
  const lOff = cOff + E * nMax * P;
  const pOff = lOff + E * nMax;
  const uOff = pOff + ds.maxLen + 1;
  const { mode, stepSize } = eps[0];
  const sh: LockStepShape = {
    E, nMax, M, Pq: P, P, nu, k: st.topk, alpha: st.alpha, eps: Math.fround(st.eps), cOff, lOff, pOff, uOff,
    relative: mode === "relative", stepSize, maxValue: maxValueOf(stepSize),
    maxLen: ds.maxLen, cls: ds.cls, sep: ds.sep, sortByIndex: st.sortByIndex,
  };
  const consts = new Uint32Array(uOff + S * E * nu);
  const f32 = new Float32Array(consts.buffer);
  pieces.forEach((p, e) => {
    consts.set(p.q, e * P);
    for (let j = 0; j < p.lens.length; j++) {
      consts.set(p.ids.subarray(j * P, j * P + p.lens[j]), cOff + (e * nMax + j) * P);
      consts[lOff + e * nMax + j] = p.lens[j];
    }
  });
  for (let len = 1; len <= ds.maxLen; len++) f32[pOff + len] = POOL_SCALE / len; // maskedMeanWeights's weight
  // the picks' numbers, step by step and environment by environment, as the host path draws them
  let at = uOff;
  for (let s = 0; s < S; s++) {
    for (let e = 0; e < E; e++) for (const x of drawPick(rng, st.eps)) f32[at++] = x;
  }
  const layout = scoreLayout(envs.map((x) => ({ ref: x.ref, positions: rotaryPositions(x.episode) })), joined);
  const rot = rotaryRows(D, layout.positions);
  const maxPos = defaultRotary(D).maxPositions;
  // the environments as each step leaves them, the next forward's states, and what stays put
  const padIdx = tf.tensor1d(layout.padIdx, "int32");
  const packed = tf.tensor1d(new Int32Array(consts.buffer), "int32");
  let cur: (Pick<LockStepInputs, "avail" | "env"> & { rows: tf.Tensor | null }) | null = null;
  // the last step's environment rows, handed to the caller
  let out: LockStepRun | null = null;
  let next: tf.Tensor | null = null;
  try {
    cur = { avail: availTensor(eps.map((ep) => ep.available), nMax), env: tf.tensor1d(env, "int32"), rows: rot ? tf.tensor1d(rot.rows, "int32") : null };
    next = tf.tensor1d(firstTokens(pieces, eps, T0, ds, P, st.sortByIndex), "int32");
    for (let s = 0; s < S; s++) {
      // each step's tokens: the first packed here, the others by the lock-step before (Tn > 0 but at the last)
      const tokens = next!;
      const T = s === 0 ? T0 : Ts[s - 1];
      const states = ds.rowsOfTokens(tokens, E, T, true);
      tokens.dispose();
      next = null;
      if (!states) throw new Error(`lock-steps: no recorded forward of ${E} rows of ${T} tokens, which fits() took`);
      const table = rot && cur.rows ? { rows: cur.rows, c: rot.c, s: rot.s, maxPos } : null;
      const step = lockStep({ states, cands: joined.cands, padIdx, rot: table, avail: cur.avail, env: cur.env, consts: packed }, sh, s, s + 1 < S ? Ts[s] : 0);
      tf.dispose([states.rows, cur.avail, cur.env, ...(cur.rows ? [cur.rows] : [])]);
      cur = { avail: step.avail, env: step.env, rows: step.rows };
      next = step.next;
    }
    out = { env: cur.env, S, H, numSteps: eps.map((ep) => ep.numSteps) };
    return out;
  } finally {
    tf.dispose([padIdx, packed, ...(next ? [next] : []), ...(cur ? [cur.avail, ...(cur.env === out?.env ? [] : [cur.env]), ...(cur.rows ? [cur.rows] : [])] : [])]);
  }
}
