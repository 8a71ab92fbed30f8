/** Y-axis domains and ticks computed from the drawn values, so every chart gets round ticks. */

function niceStep(range: number, count: number): number {
  const raw = range / Math.max(1, count);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * mag;
}

/** A linear [lo, hi] domain on round numbers covering [min, max], with its ticks. */
export function linearAxis(min: number, max: number, count = 5): { domain: [number, number]; ticks: number[] } {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return { domain: [0, 1], ticks: [0, 0.5, 1] };
  // a flat series, or one whose spread is below float precision (lr during warm-up): pad it
  if (max - min <= Math.max(Math.abs(min), Math.abs(max)) * 1e-9) {
    const pad = Math.abs(min) * 0.1 || 1;
    min -= pad;
    max += pad;
  }
  const step = niceStep(max - min, count);
  const first = Math.floor(min / step);
  const n = Math.min(100, Math.ceil(max / step) - first);
  const ticks: number[] = [];
  for (let i = 0; i <= n; i++) ticks.push(Number(((first + i) * step).toPrecision(12)));
  return { domain: [ticks[0], ticks[ticks.length - 1]], ticks };
}

/** A log domain from the power of ten below min to the one above max (positive values only). */
export function logAxis(min: number, max: number): { domain: [number, number]; ticks: number[] } {
  if (!(min > 0) || !Number.isFinite(max)) return { domain: [0.1, 1], ticks: [0.1, 1] };
  const lo = Math.floor(Math.log10(min));
  let hi = Math.ceil(Math.log10(max));
  if (hi === lo) hi++;
  const ticks: number[] = [];
  for (let e = lo; e <= hi; e++) ticks.push(Number(Math.pow(10, e).toPrecision(12)));
  return { domain: [ticks[0], ticks[ticks.length - 1]], ticks };
}
