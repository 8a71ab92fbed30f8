/**
 * Indices of the k largest values, largest first, ties broken by lower index (deterministic;
 * torch leaves ties unspecified). One pass with a k-slot insertion list: O(N·k), no allocation
 * per candidate, which matters for 400 000 candidates with k = 5.
 */
export function topkIndices(values: ArrayLike<number>, k: number): number[] {
  const n = values.length;
  const kk = Math.min(k, n);
  const idx: number[] = [];
  if (kk <= 0) return idx;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (idx.length === kk && !(v > values[idx[kk - 1]])) continue;
    // NaN never displaces anything and only fills empty slots.
    let p = idx.length === kk ? kk - 1 : idx.length;
    if (idx.length < kk) idx.push(i);
    while (p > 0 && v > values[idx[p - 1]]) {
      idx[p] = idx[p - 1];
      p--;
    }
    idx[p] = i;
  }
  return idx;
}
