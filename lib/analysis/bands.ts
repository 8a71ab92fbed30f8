/**
 * Group bands for compare views: runs of one group (same config but the seed) become one band —
 * per step the mean, the sample standard deviation, min and max over the runs that have a point at
 * that step. Runs of unequal length are aligned by step; the band ends where fewer than
 * `minRuns` (2) runs remain, and says where.
 */
import { bucketWidth } from "../contracts/index.ts";

export interface StepValue {
  step: number;
  value: number;
}

export interface BandPoint {
  step: number;
  mean: number;
  /** Sample standard deviation (n − 1). */
  std: number;
  min: number;
  max: number;
  /** Runs with a point at this step. */
  runs: number;
}

export interface Band {
  points: BandPoint[];
  runs: number;
  /** The first step left out because fewer than `minRuns` runs reach it (null: none left out). */
  endsAt: number | null;
}

export function groupBand(series: readonly (readonly StepValue[])[], minRuns = 2): Band {
  const byStep = new Map<number, number[]>();
  for (const s of series) {
    for (const p of s) {
      if (!Number.isFinite(p.value)) continue;
      const list = byStep.get(p.step);
      if (list) list.push(p.value);
      else byStep.set(p.step, [p.value]);
    }
  }
  const steps = [...byStep.keys()].sort((a, b) => a - b);
  // past the last step that enough runs share, the band stops for good (a lone longer run)
  let lastShared = -Infinity;
  for (const step of steps) if (byStep.get(step)!.length >= minRuns) lastShared = step;
  const endsAt = steps.find((s) => s > lastShared) ?? null;
  const points: BandPoint[] = [];
  for (const step of steps) {
    const vs = byStep.get(step)!;
    if (vs.length < minRuns) continue; // a step only one run logged (or past the end)
    const mean = vs.reduce((a, b) => a + b, 0) / vs.length;
    const variance = vs.reduce((a, b) => a + (b - mean) ** 2, 0) / (vs.length - 1);
    points.push({ step, mean, std: Math.sqrt(variance), min: Math.min(...vs), max: Math.max(...vs), runs: vs.length });
  }
  return { points, runs: series.length, endsAt };
}

/**
 * Puts runs on one step grid before `groupBand`: each run comes bucketed by its own last step
 * (lib/contracts/series-buckets.ts), so two runs of unequal length come back with different steps.
 * When all runs together have at most `buckets` distinct steps nothing changes (exact steps).
 * Otherwise the runs are bucketed again by that same rule at the longest run's width (a power of
 * two that every run's own width divides, so no bucket is split); each run gives its last point in
 * a bucket, placed at the bucket's largest step seen in any run (a real step, shared by every run).
 */
export function alignSteps(series: readonly (readonly StepValue[])[], buckets: number): StepValue[][] {
  const steps = new Set<number>();
  for (const s of series) for (const p of s) steps.add(p.step);
  const n = Math.max(1, Math.floor(buckets));
  if (steps.size <= n) return series.map((s) => [...s]);
  let hi = -Infinity;
  for (const st of steps) hi = Math.max(hi, st);
  const w = bucketWidth(hi, n);
  const bin = (step: number) => Math.floor(step / w);
  const binStep = new Map<number, number>();
  for (const st of steps) {
    const b = bin(st);
    binStep.set(b, Math.max(binStep.get(b) ?? -Infinity, st));
  }
  return series.map((s) => {
    const last = new Map<number, number>();
    for (const p of s) last.set(bin(p.step), p.value); // points are in step order: the last wins
    return [...last.entries()].sort((a, b) => a[0] - b[0]).map(([b, value]) => ({ step: binStep.get(b)!, value }));
  });
}
