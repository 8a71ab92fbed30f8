/**
 * Action choice (docs/method.md §3.3, §4.1): greedy argmax at evaluation, uniform over available
 * chunks during the first 2·learning_start transitions, then Boltzmann sampling restricted to the
 * top-k available candidates. The reference has no ε-greedy; ours optionally (`explore_eps`, off by
 * default) picks uniformly among those top-k with probability ε, so the learner also sees states an
 * almost-greedy soft policy never reaches (e.g. two moves of the holder before the pickup), which
 * the leave-one-out pruning rule (leave-one-out.ts) evaluates.
 */
import type { Rng } from "../util/rng.ts";
import { topkIndices } from "./topk.ts";

/** Argmax of q over available candidates (lowest index on ties). Throws if none is available. */
export function greedyAction(q: ArrayLike<number>, avail: Uint8Array): number {
  let best = -1;
  let bestV = -Infinity;
  for (let i = 0; i < q.length; i++) {
    if (avail[i] && (best < 0 || q[i] > bestV)) {
      best = i;
      bestV = q[i];
    }
  }
  if (best < 0) throw new RangeError("greedyAction: no available candidate");
  return best;
}

/** Uniform over available candidates. */
export function uniformAvailable(avail: Uint8Array, rng: Rng): number {
  let count = 0;
  for (let i = 0; i < avail.length; i++) count += avail[i] ? 1 : 0;
  if (count === 0) throw new RangeError("uniformAvailable: no available candidate");
  let r = rng.int(count);
  for (let i = 0; i < avail.length; i++) {
    if (avail[i] && r-- === 0) return i;
  }
  throw new Error("unreachable");
}

/**
 * Reference `TextQNetPolicy`: unavailable logits are set to min(logits) − 1, top-k is taken on
 * those masked logits (so with fewer than k available it may include masked slots, which get
 * probability 0), and p ∝ exp((l − max)/α) over top-k ∩ available. α ≤ 0 (end of a ratio-0
 * schedule) degrades to greedy instead of producing NaN.
 */
export function boltzmannTop5(logits: ArrayLike<number>, avail: Uint8Array, alpha: number, rng: Rng, k = 5, eps = 0): number {
  const n = logits.length;
  let min = Infinity;
  for (let i = 0; i < n; i++) if (logits[i] < min) min = logits[i];
  const masked = new Float64Array(n);
  for (let i = 0; i < n; i++) masked[i] = avail[i] ? logits[i] : min - 1;
  const top = topkIndices(masked, k).filter((j) => avail[j] !== 0);
  return sampleTopK(top, top.map((j) => masked[j]), alpha, drawPick(rng, eps), eps);
}

/**
 * The uniform numbers one pick uses, always as many (1, or 3 with ε > 0: explore, its pick, the
 * Boltzmann draw) whatever the pick then needs, each a float32 in [0, 1): a pick made on the
 * device (model/webgpu/lock-step.ts) is given the numbers the host drew in the same order, so
 * both take the same action and leave the generator in the same state.
 */
export function drawPick(rng: Rng, eps: number): number[] {
  return Array.from({ length: pickDraws(eps) }, () => (rng.nextU32() >>> 8) / 16777216);
}

/** How many numbers drawPick draws. */
export function pickDraws(eps: number): number {
  return eps > 0 ? 3 : 1;
}

/**
 * The sampling half of boltzmannTop5: `top` = the available top-k candidates, largest first, with
 * their masked logits `values`; p ∝ exp((l − max)/α), drawn with `u` (drawPick's numbers). Shared
 * with the device paths (the lock-step program samples the same way in float32). With `eps` > 0,
 * a uniform pick among `top` with probability eps.
 */
export function sampleTopK(top: readonly number[], values: readonly number[], alpha: number, u: readonly number[], eps = 0): number {
  if (top.length === 0) throw new RangeError("boltzmannTop5: no available candidate");
  // float32 products and comparisons, as the device makes them, so both pick the same index
  if (eps > 0 && u[0] < Math.fround(eps)) return top[Math.min(top.length - 1, Math.floor(Math.fround(u[1] * top.length)))];
  // top[0] holds the max of the masked logits, which is available whenever anything is.
  const max = values[0];
  if (!(alpha > 0)) return top[0];
  const w = values.map((v) => Math.exp((v - max) / alpha));
  let total = 0;
  for (const x of w) total += x;
  if (!(total > 0) || !Number.isFinite(total)) return top[0];
  let r = u[u.length - 1] * total;
  for (let t = 0; t < top.length; t++) {
    r -= w[t];
    if (r < 0) return top[t];
  }
  return top[top.length - 1];
}
