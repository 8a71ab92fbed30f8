/**
 * Wilson score interval for a proportion (coverage over samples): unlike the normal
 * approximation it stays inside [0, 1] and is honest at 0/n and n/n, which is where retrieval
 * coverage lives. `z` = 1.96 gives 95 %. In the contract because the engine's reports and the
 * browser's charts must give the same intervals.
 */
export interface Interval {
  low: number;
  high: number;
}

export function wilsonInterval(successes: number, n: number, z = 1.96): Interval | null {
  if (!(n > 0) || successes < 0 || successes > n) return null;
  const p = successes / n;
  const z2 = z * z;
  const denom = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denom;
  // exact at the edges (rounding would give 0.9999999999999999 for n/n)
  return { low: successes === 0 ? 0 : Math.max(0, centre - half), high: successes === n ? 1 : Math.min(1, centre + half) };
}
