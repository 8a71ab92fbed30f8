/**
 * Position values of candidate chunks (docs/method.md §1.4, docs/workload.md §1.3). The rotary
 * lookup floors positions, so they are produced directly as integers with exact integer arithmetic:
 * the reference's float32 `linspace` + floor can land one below an integer, this cannot.
 */
export type PositionsMode = "relative" | "none" | "absolute";

/** The top value inside a gap: floor(0.9·stepSize) in integers, so no float rounding can shift it. */
export const maxValueOf = (stepSize: number) => Math.floor((9 * stepSize) / 10);

/**
 * Relative positions ("which gap between selected chunks, and where inside it"): segment k
 * (k = number of selected indices ≤ i) gets `stepSize·k + floor(maxValue·j/(len−1))`, j the offset
 * inside the segment, `stepSize·k` when len = 1; maxValue = floor(0.9·stepSize) (18 for 20).
 * A selected chunk is the first element of the segment after it. O(n + s·log s).
 */
export function relativePositions(n: number, selected: readonly number[], stepSize = 20): Int32Array {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`relativePositions: bad n ${n}`);
  const maxValue = maxValueOf(stepSize);
  const cuts = [...new Set(selected)].sort((a, b) => a - b);
  for (const c of cuts) {
    if (!Number.isInteger(c) || c < 0 || c >= n) throw new RangeError(`relativePositions: index ${c} not in [0, ${n})`);
  }
  const out = new Int32Array(n);
  let start = 0;
  for (let k = 0; k <= cuts.length; k++) {
    const end = k < cuts.length ? cuts[k] : n;
    const len = end - start;
    const base = stepSize * k;
    if (len === 1) {
      out[start] = base;
    } else {
      const den = len - 1;
      // maxValue·j stays far below 2^53 for any realistic n, so the division is exact.
      for (let j = 0; j < len; j++) out[start + j] = base + Math.floor((maxValue * j) / den);
    }
    start = end;
  }
  return out;
}

/**
 * The relative position of one chunk `i` given the selected set: `relativePositions(n, selected)[i]`
 * without building the whole array (O(s·log s)), for re-scoring a few chunks under a hypothetical
 * selection (leave-one-out.ts).
 */
export function relativePositionOf(n: number, selected: readonly number[], i: number, stepSize = 20): number {
  if (!Number.isInteger(i) || i < 0 || i >= n) throw new RangeError(`relativePositionOf: index ${i} not in [0, ${n})`);
  const maxValue = maxValueOf(stepSize);
  const cuts = [...new Set(selected)].sort((a, b) => a - b);
  let k = 0;
  while (k < cuts.length && cuts[k] <= i) k++;
  const start = k === 0 ? 0 : cuts[k - 1];
  const len = (k < cuts.length ? cuts[k] : n) - start;
  return len === 1 ? stepSize * k : stepSize * k + Math.floor((maxValue * (i - start)) / (len - 1));
}

/** Absolute positions 0..n−1 (also what the reference enumerates with in mode "none"). */
export function absolutePositions(n: number): Int32Array {
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) out[i] = i;
  return out;
}

/** Positions for a mode; "none" keeps absolute indices, which the position-free embedder ignores. */
export function positionsFor(mode: PositionsMode, n: number, selected: readonly number[], stepSize = 20): Int32Array {
  return mode === "relative" ? relativePositions(n, selected, stepSize) : absolutePositions(n);
}
