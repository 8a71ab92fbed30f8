/**
 * tfjs-webgpu's pool of freed buffers stays bounded (server/qrag/backend/webgpu-pool.ts): on lavapipe, 1,000
 * training iterations, the GPU issue's count (about 35 s on 2 shared cores), 12 greedy
 * episodes and a tiny train() run, on samples of 10 to 59 chunks so that sizes keep changing.
 * The bound is 1.2 × the step's peak bytes in use (its working set), which the pool would pass at
 * once without the trim: it grows from the first iterations on (8 → 31 MiB for 7 MiB live over the
 * first 200). Skipped without an adapter, except under QRAG_REQUIRE_WEBGPU=1.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { webgpuSkip as skip } from "./webgpu-skip.ts";
import { runCaseFile } from "./device-case-runner.ts";
import type { GpuBytes, MemoryCase } from "./webgpu-memory-cases.ts";
import { POOL_RATIO } from "../server/qrag/backend/webgpu-pool.ts";

// The trim leaves allocated ≤ 1.2 × the step's peak exactly, and these are read right after it: no slack is
// needed, 4 KiB only absorbs a uniform or read-back buffer should one be pooled in between.
const SLACK_BYTES = 4096;
// The metrics are MiB rounded to 0.1 (±0.05 each), read after the loss read that follows the
// trim pooled its small staging buffer: 1.2 × 0.05 + 0.05 < 0.15.
const SLACK_MIB = 0.15;

let result: MemoryCase | undefined;
const run = (): MemoryCase => (result ??= runCaseFile<MemoryCase>("test/webgpu-memory-cases.ts", "memory"));

function assertBounded(label: string, xs: GpuBytes[]): void {
  xs.forEach((x, i) => {
    assert.ok(x.live > 0 && x.peak >= x.live, `${label} ${i + 1}: ${x.live} live, peak ${x.peak}`);
    assert.ok(x.allocated <= POOL_RATIO * x.peak + SLACK_BYTES, `${label} ${i + 1}: ${x.allocated} bytes allocated for a peak of ${x.peak} (${(x.allocated / x.peak).toFixed(2)}×)`);
  });
}

test("webgpu buffer pool: allocated ≤ 1.2 × the step's peak after each of 1,000 training iterations and 12 greedy episodes, and no growth", { skip }, () => {
  const r = run();
  assert.equal(r.iterations.length, 1000);
  assertBounded("iteration", r.iterations);
  assertBounded("episode", r.episodes);
  // the sample sizes cycle every 50 iterations: the last cycle holds no more than the second, but
  // for a few small uniform and read-back buffers (untrimmed, the pool grows by a third a cycle)
  const most = (xs: { allocated: number }[]) => Math.max(...xs.map((x) => x.allocated));
  assert.ok(most(r.iterations.slice(950)) <= 1.02 * most(r.iterations.slice(50, 100)), `${most(r.iterations.slice(50, 100))} → ${most(r.iterations.slice(950))} bytes`);
});

test("gpu_memory_mb, gpu_memory_live_mb, gpu_memory_peak_mb and gpu_memory_plans_mb: all reported per logged update, live ≤ peak, allocated ≥ live + the recorded plans, and allocated less the plans ≤ 1.2 × peak", { skip }, () => {
  const { metrics } = run();
  assert.ok(metrics.length >= 3, `${metrics.length} metric records`);
  for (const m of metrics) {
    assert.ok(m.liveMiB > 0 && m.peakMiB >= m.liveMiB, JSON.stringify(m));
    // the run's transformer records its forwards: their plans hold GPU memory of their own
    assert.ok(m.planMiB > 0 && m.allocatedMiB >= m.liveMiB + m.planMiB - SLACK_MIB, JSON.stringify(m));
    assert.ok(m.allocatedMiB - m.planMiB <= POOL_RATIO * m.peakMiB + SLACK_MIB, JSON.stringify(m));
  }
});
