/**
 * Rows of a padded batch regrouped by length, for encoders whose device forward pays for every
 * padded position (hf BERT: a [rows, len] forward). An episode's 100 candidate sentences pad to
 * 64 tokens for an average of 31; sorted and cut where the padded length changes, they run as a
 * few sub-batches of 16, 32 and 64 tokens, each its own forward. A cut costs a forward (its
 * dispatches: ~110 for BERT-base), so a group is kept apart only where it saves more padded
 * positions than `SPLIT_TOKENS`; otherwise it joins the next longer group.
 */
import type { TokenBatch } from "./encoder.ts";
import { nextPow2 } from "./ops.ts";

/** Padded positions a separate forward must save to pay for itself. */
export const SPLIT_TOKENS = 1024;

export interface LengthGroups {
  /** Row i of the regrouped batch is row order[i] of the original. */
  order: Int32Array;
  /** Where original row r sits in the regrouped batch. */
  inverse: Int32Array;
  /** [first, end) rows of each group in the regrouped batch, shortest first. */
  groups: [number, number][];
}

/** Each row's length: one past its last unmasked position. */
export function rowLengths(b: TokenBatch): Int32Array {
  const out = new Int32Array(b.batch);
  for (let r = 0; r < b.batch; r++) {
    for (let t = b.len - 1; t >= 0; t--) {
      if (b.mask[r * b.len + t] > 0) {
        out[r] = t + 1;
        break;
      }
    }
  }
  return out;
}

/**
 * The batch's rows sorted by length (stable) and cut into groups of one padded length each, where
 * each cut saves at least `splitTokens` padded positions; null where one group would hold them
 * all (nothing to gain: the batch runs as it is, in its own order).
 */
export function lengthGroups(b: TokenBatch, splitTokens = SPLIT_TOKENS): LengthGroups | null {
  const lengths = rowLengths(b);
  const padded = (n: number) => Math.min(b.len, nextPow2(Math.max(1, n)));
  const order = Int32Array.from({ length: b.batch }, (_, i) => i).sort((x, y) => lengths[x] - lengths[y] || x - y);
  // runs of one padded length, shortest first
  const runs: { end: number; len: number }[] = [];
  for (let i = 0; i < b.batch; i++) {
    const len = padded(lengths[order[i]]);
    if (runs.length && runs[runs.length - 1].len === len) runs[runs.length - 1].end = i + 1;
    else runs.push({ end: i + 1, len });
  }
  // a run joins the next longer one unless running apart saves enough padded positions
  const kept: { end: number; len: number }[] = [];
  let start = 0;
  for (let k = 0; k < runs.length; k++) {
    const last = k === runs.length - 1;
    if (last || (runs[k].end - start) * (runs[k + 1].len - runs[k].len) >= splitTokens) {
      kept.push(runs[k]);
      start = runs[k].end;
    }
  }
  if (kept.length < 2) return null;
  const inverse = new Int32Array(b.batch);
  order.forEach((r, i) => (inverse[r] = i));
  let first = 0;
  const groups = kept.map((g): [number, number] => {
    const range: [number, number] = [first, g.end];
    first = g.end;
    return range;
  });
  return { order, inverse, groups };
}

/** The batch's rows in `order` (same padded length). */
export function permuteRows(b: TokenBatch, order: Int32Array): TokenBatch {
  const L = b.len;
  const ids = new Int32Array(b.batch * L);
  const mask = new Float32Array(b.batch * L);
  order.forEach((r, i) => {
    ids.set(b.ids.subarray(r * L, (r + 1) * L), i * L);
    mask.set(b.mask.subarray(r * L, (r + 1) * L), i * L);
  });
  return { ids, mask, batch: b.batch, len: L };
}
