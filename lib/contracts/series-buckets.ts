/**
 * The one downsampling rule for metric series, applied by the server to stored points and by the
 * browser to whatever it holds (a reloaded answer plus live appends). x is cut into buckets of a
 * power-of-two width aligned to 0: the narrowest width that leaves at most `width` buckets up to the
 * series' last x. Each non-empty bucket gives its last point, with the bucket's min and max.
 *
 * Why aligned powers of two: the rule composes. As a live series grows its bucket width only
 * doubles, and every old bucket lies inside one new bucket, so bucketing an answer that was already
 * bucketed (plus raw points appended since) gives exactly what bucketing all raw points gives: a
 * live chart and a reloaded one draw the same points at any length.
 */
import type { SeriesPoint } from "./dto.ts";
import type { XAxis } from "./rest.ts";

/** The bucket width (a power of two, possibly below 1 for wall seconds) for a series ending at `last`. */
export function bucketWidth(last: number, width: number): number {
  const n = Math.max(1, Math.floor(width));
  if (!(last > 0)) return 1;
  // buckets 0…floor(last / w) are at most n when w > last / n: the next power of two above it
  let w = 2 ** (Math.floor(Math.log2(last / n)) + 1);
  while (Math.floor(last / w) + 1 > n) w *= 2; // rounding in log2
  while (Math.floor(last / (w / 2)) + 1 <= n) w /= 2;
  return w;
}

/**
 * Bucketed for a chart `width` buckets wide; points sorted by x. A bucket of several points (or of
 * one that was already a bucket) carries min and max; a lone raw point comes back as it was.
 */
export function bucketSeries(points: readonly SeriesPoint[], width: number, x: XAxis = "step"): SeriesPoint[] {
  if (points.length === 0) return [];
  const w = bucketWidth(points[points.length - 1][x], width);
  const out: SeriesPoint[] = [];
  let cur = NaN;
  for (const p of points) {
    const b = Math.floor(p[x] / w);
    const lo = p.min ?? p.value;
    const hi = p.max ?? p.value;
    const acc = out[out.length - 1];
    if (b !== cur || !acc) {
      cur = b;
      out.push(p.min === undefined && p.max === undefined ? { step: p.step, update: p.update, wall: p.wall, value: p.value } : { step: p.step, update: p.update, wall: p.wall, value: p.value, min: lo, max: hi });
    } else {
      out[out.length - 1] = { step: p.step, update: p.update, wall: p.wall, value: p.value, min: Math.min(acc.min ?? acc.value, lo), max: Math.max(acc.max ?? acc.value, hi) };
    }
  }
  return out;
}
