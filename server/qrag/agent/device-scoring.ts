/**
 * Candidate scoring on the device (device.ts `onDevice()`): the rollout and greedy evaluation keep
 * candidate embeddings on the device and bring back only what the host loop needs, in ONE read per
 * environment step for all environments: the top-k candidate indices and values of the policy, and
 * the soft values V(s) of the targets. Same formulas as the host versions (rotary.ts
 * scoreCandidates, policy.ts boltzmannTop5, soft-value.ts softValue).
 */
import * as tf from "@tensorflow/tfjs";
import { rotateDevice } from "../model/device-ops.ts";
import { onDevice } from "../backend/device.ts";
import { greedyPickFused, pickFits, type PickSpec } from "../model/webgpu/greedy-pick.ts";
import { paddedLayout, policyTopKFused, policyTopKJoinedFused, scorePolicyTopKJoinedFused, scoreRowsFused, scoreSoftValueFused, softValueFused, type ScoreLayout } from "../model/webgpu/twin-q.ts";
import type { SoftValueHeads } from "./soft-value.ts";

/**
 * Twin-head Q of every candidate row against its environment's state: states [E, D], candidates
 * [R, D] (environments one after another, `counts[e]` rows each), rotated by `positions` [R]
 * → q1, q2 as [E, nMax] (nMax = max count; rows past an environment's count are −∞).
 */
export function scorePadded(states: tf.Tensor2D, cands: tf.Tensor2D, positions: Int32Array, counts: readonly number[]): { q1: tf.Tensor2D; q2: tf.Tensor2D } {
  return scoreRows(states, cands, paddedLayout(positions, counts, cands.shape[0]));
}

/**
 * Twin-head Q of states [N, D] against candidate rows [R, D] as `layout` assigns them (each state
 * its nMax slots: a candidate row and a rotary position, or padding) → q1, q2 [N, nMax], −∞ at
 * padding.
 */
export function scoreRows(states: tf.Tensor2D, cands: tf.Tensor2D, layout: ScoreLayout): { q1: tf.Tensor2D; q2: tf.Tensor2D } {
  // on webgpu: one fused program (model/webgpu/twin-q.ts); the ops below are its reference
  if (onDevice()) return scoreRowsFused(states, cands, layout);
  const [R, D] = cands.shape;
  const { nMax, padIdx } = layout;
  const slots = padIdx.length;
  const N = slots / nMax;
  const pad = new Int32Array(slots);
  const rowIdx = new Int32Array(slots);
  for (let i = 0; i < slots; i++) {
    pad[i] = padIdx[i] >= R ? 1 : 0;
    rowIdx[i] = pad[i] ? 0 : padIdx[i];
  }
  const rot = rotateDevice(tf.gather(cands, tf.tensor1d(rowIdx, "int32")), layout.positions); // [N·nMax, D]
  const sRows = tf.reshape(tf.tile(tf.expandDims(states, 1), [1, nMax, 1]), [slots, D]);
  const halves = tf.sum(tf.reshape(tf.mul(rot, sRows), [slots, 2, D / 2]), 2); // [N·nMax, 2]
  const isPad = tf.greater(tf.tensor2d(pad, [slots, 1], "int32"), 0);
  const q = tf.reshape(tf.where(tf.tile(isPad, [1, 2]), tf.fill([slots, 2], -Infinity), halves), [N, nMax, 2]);
  const [q1, q2] = tf.unstack(q, 2) as tf.Tensor2D[];
  return { q1, q2 };
}

/**
 * Candidates per environment up to which top-k runs as one fused program (twin-q.ts: one thread
 * per environment scans its row). Longer rows (greedy evaluation over 40,000+ chunks) keep tfjs's
 * parallel topk: a single GPU thread scanning them would cost more than its dispatches.
 */
const FUSED_TOPK_MAX = 8192;

function fusedTopK(q: tf.Tensor2D): boolean {
  return onDevice() && q.shape[1] <= FUSED_TOPK_MAX;
}

/**
 * The policy's top-k (policy.ts boltzmannTop5 before its sampling): unavailable logits become
 * min(logits) − 1, padding stays −∞, then top-k of q1 + q2 per environment → values, indices [E, k].
 */
export function policyTopK(q1: tf.Tensor2D, q2: tf.Tensor2D, avail: tf.Tensor2D, k: number): { values: tf.Tensor2D; indices: tf.Tensor2D } {
  if (fusedTopK(q1)) return policyTopKFused(q1, q2, avail, k); // one fused program (twin-q.ts)
  const logits = tf.add(q1, q2);
  const finite = tf.isFinite(logits);
  const min = tf.min(tf.where(finite, logits, tf.fill(logits.shape, Infinity)), 1, true);
  const masked = tf.where(tf.greater(avail, 0), logits, tf.where(finite, tf.sub(min, 1), logits));
  const kk = Math.min(k, q1.shape[1]);
  const { values, indices } = tf.topk(masked, kk);
  return { values: values as tf.Tensor2D, indices: indices as tf.Tensor2D };
}

/** policyTopK with both results in one float row per environment, [indices(k), values(k)]. */
export function policyTopKJoined(q1: tf.Tensor2D, q2: tf.Tensor2D, avail: tf.Tensor2D, k: number): tf.Tensor2D {
  if (fusedTopK(q1)) return policyTopKJoinedFused(q1, q2, avail, k);
  const { values, indices } = policyTopK(q1, q2, avail, k);
  return tf.concat([tf.cast(indices, "float32"), values], 1) as tf.Tensor2D;
}

/**
 * A rollout step's policy after its forward: scoreRows, then policyTopKJoined of the scores; on
 * webgpu one program (twin-q.ts scoreThenRowCode) where the fused top-k takes the rows.
 */
export function scorePolicyTopKJoined(states: tf.Tensor2D, cands: tf.Tensor2D, layout: ScoreLayout, avail: tf.Tensor2D, k: number): tf.Tensor2D {
  if (onDevice() && layout.nMax <= FUSED_TOPK_MAX) return scorePolicyTopKJoinedFused(states, cands, layout, avail, k);
  const { q1, q2 } = scoreRows(states, cands, layout);
  return policyTopKJoined(q1, q2, avail, k);
}

/** scoreRows, then softValueDevice of the scores (the rollout's deferred values): one program on webgpu where the fused soft value takes the rows. */
export function scoreSoftValue(states: tf.Tensor2D, cands: tf.Tensor2D, layout: ScoreLayout, avail: tf.Tensor2D, alpha: number, k: number, heads: SoftValueHeads = "per_head"): tf.Tensor1D {
  if (onDevice() && heads !== "joint" && layout.nMax <= FUSED_TOPK_MAX) return scoreSoftValueFused(states, cands, layout, avail, alpha, k);
  const { q1, q2 } = scoreRows(states, cands, layout);
  return softValueDevice(q1, q2, avail, alpha, k, heads);
}

/** softValueHead (soft-value.ts) per row of q [E, nMax] → [E]. */
function softValueHeadDevice(q: tf.Tensor2D, avail: tf.Tensor2D, alpha: number, k: number): tf.Tensor1D {
  const kk = Math.min(k, q.shape[1]);
  const { values, indices } = tf.topk(q, kk);
  const availK = tf.gather(avail, indices, 1, 1) as tf.Tensor2D;
  const m = tf.slice(values, [0, 0], [-1, 1]);
  if (!(alpha > 0)) {
    const best = tf.max(tf.where(tf.greater(availK, 0), values, tf.fill(values.shape, -Infinity)), 1, true);
    return tf.reshape(tf.where(tf.isFinite(best), best, m), [-1]);
  }
  // exp(−∞) of padding is 0; unavailable top-k entries are multiplied out
  const s = tf.sum(tf.mul(availK, tf.exp(tf.div(tf.sub(values, m), alpha))), 1, true);
  return tf.reshape(tf.add(m, tf.mul(tf.log(tf.maximum(s, 1e-10)), alpha)), [-1]);
}

/** V(s) per environment (soft-value.ts softValue: v1 + v2, or the joint soft maximum) → [E]. */
export function softValueDevice(q1: tf.Tensor2D, q2: tf.Tensor2D, avail: tf.Tensor2D, alpha: number, k: number, heads: SoftValueHeads = "per_head"): tf.Tensor1D {
  if (heads === "joint") return softValueHeadDevice(tf.add(q1, q2), avail, alpha, k);
  if (fusedTopK(q1)) return softValueFused(q1, q2, avail, alpha, k); // one fused program (twin-q.ts)
  return tf.add(softValueHeadDevice(q1, avail, alpha, k), softValueHeadDevice(q2, avail, alpha, k));
}

/**
 * A greedy step's pick on each row of [E, n] (an episode each) as one float row per episode:
 * [indices(K), q(K), q1(K), q2(K), V] with q = q1 + q2 over available candidates, top-K
 * descending (ties to the lower index; past the available ones q is −∞), and V the soft value (0
 * without `spec.value`) → [E, 4K + 1].
 */
export function greedyPick(q1: tf.Tensor2D, q2: tf.Tensor2D, avail: tf.Tensor2D, spec: PickSpec): tf.Tensor2D {
  if (onDevice() && pickFits(spec)) return greedyPickFused(q1, q2, avail, spec); // two fused programs (greedy-pick.ts)
  const E = q1.shape[0];
  const q = tf.where(tf.greater(avail, 0), tf.add(q1, q2), tf.fill(q1.shape, -Infinity));
  const { values, indices } = tf.topk(q, spec.K);
  const v = spec.value ? softValueDevice(q1, q2, avail, spec.value.alpha, spec.value.k, spec.value.heads) : tf.zeros([E]);
  const cols = [tf.cast(indices, "float32"), values, tf.gather(q1, indices, 1, 1), tf.gather(q2, indices, 1, 1), tf.reshape(v, [E, 1])];
  return tf.concat(cols, 1) as tf.Tensor2D;
}

/** Availability [E, nMax] as a 0/1 float tensor (padding 0). */
export function availTensor(avails: readonly Uint8Array[], nMax: number): tf.Tensor2D {
  const E = avails.length;
  const a = new Float32Array(E * nMax);
  avails.forEach((m, e) => {
    for (let j = 0; j < m.length; j++) a[e * nMax + j] = m[j] ? 1 : 0;
  });
  return tf.tensor2d(a, [E, nMax]);
}
