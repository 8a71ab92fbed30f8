/**
 * Soft value of a state for the λ-return targets (docs/method.md §2.5, reference `TextVNet`): per
 * head h, take the top-k candidates by q_h over ALL candidates (before the availability mask), then
 *   v_h = m + α·log(clamp(Σ_{j ∈ topk ∩ available} exp((q_h,j − m)/α), 1e-10)),
 * with m the max over the whole top-k (masked ones included). If no top-k candidate is
 * available, v_h = m − 23.03·α. V = v1 + v2 (each head is trained towards G/2).
 */
import { topkIndices } from "./topk.ts";

const LOG_CLAMP = Math.log(1e-10);

export function softValueHead(q: Float32Array, avail: Uint8Array, alpha: number, k = 5): number {
  if (q.length === 0) throw new RangeError("softValueHead: no candidates");
  if (avail.length !== q.length) throw new RangeError(`softValueHead: mask length ${avail.length} ≠ ${q.length}`);
  const top = topkIndices(q, k);
  const m = q[top[0]];
  if (!(alpha > 0)) {
    // α → 0 limit (the reference would divide by zero when the schedule reaches ratio 0):
    // hard max over the available top-k, or m when none is available (α·log(1e-10) → 0).
    let best = -Infinity;
    for (const j of top) if (avail[j] && q[j] > best) best = q[j];
    return best === -Infinity ? m : best;
  }
  let s = 0;
  for (const j of top) if (avail[j]) s += Math.exp((q[j] - m) / alpha);
  return m + alpha * (s > 1e-10 ? Math.log(s) : LOG_CLAMP);
}

/**
 * How V combines the two heads: "per_head" (the reference) takes each head's own soft maximum and
 * adds them, so V ≥ the soft maximum of Q = q1 + q2 and the targets lean high; "joint" (ours) is
 * the soft maximum of Q itself, one value per candidate as the greedy policy sees it.
 */
export type SoftValueHeads = "per_head" | "joint";

/** V(s) over the two half-dot-product heads: v1 + v2, or with "joint" softValueHead(q1 + q2). */
export function softValue(q1: Float32Array, q2: Float32Array, avail: Uint8Array, alpha: number, k = 5, heads: SoftValueHeads = "per_head"): number {
  if (heads === "joint") {
    const q = new Float32Array(q1.length);
    for (let j = 0; j < q.length; j++) q[j] = q1[j] + q2[j];
    return softValueHead(q, avail, alpha, k);
  }
  return softValueHead(q1, avail, alpha, k) + softValueHead(q2, avail, alpha, k);
}
