/** Timing helpers of the quick timing prints (model-speed.ts, hf-encode.ts): not the harness. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Median milliseconds of `reps` calls after one warm-up call. */
export function time(reps: number, f: () => void): number {
  f(); // warm-up
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    f();
    ts.push(performance.now() - t0);
  }
  return median(ts);
}
