/**
 * Debiased exponential moving average, as TensorBoard smooths scalar curves:
 *   ema_t = w·ema_{t−1} + (1−w)·x_t,  ema_0 = 0,  shown value = ema_t / (1 − w^t)
 * The bias correction keeps the first points from being pulled towards zero. Non-finite inputs
 * (NaN, ±Infinity) are passed through unchanged and do not move the average.
 */
export function debiasedEma(values: readonly number[], weight: number): number[] {
  const w = Math.min(Math.max(weight, 0), 0.999999);
  const out = new Array<number>(values.length);
  let ema = 0;
  let n = 0; // finite points seen so far (the t in 1 − w^t)
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    if (!Number.isFinite(x)) {
      out[i] = x;
      continue;
    }
    n++;
    ema = w * ema + (1 - w) * x;
    out[i] = w === 0 ? x : ema / (1 - Math.pow(w, n));
  }
  return out;
}

/**
 * Fewest points a series needs before it is smoothed. An average over a handful of points (an
 * evaluation series, an imported run) misplaces its ends: a final coverage of 0.95 drew at 0.85.
 */
export const SMOOTH_FROM = 50;

/** debiasedEma for a dense series; a sparse one (< SMOOTH_FROM points) as it is. */
export function smoothDense(values: readonly number[], weight: number): number[] {
  return values.length >= SMOOTH_FROM ? debiasedEma(values, weight) : [...values];
}
