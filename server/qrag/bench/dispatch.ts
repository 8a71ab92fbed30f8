/**
 * `--parts dispatch`: what one training iteration of the reference workload (transformer encoder,
 * E=4, B=64, N=100) costs the host: GPU programs dispatched, kernels that went through tfjs's
 * engine (its per-op JavaScript is the overhead to remove), command buffers submitted, and the
 * host milliseconds that are not spent waiting for the GPU (iteration wall time minus the time
 * awaited in reads). Runs on any backend; on webgpu it is compared with the hot-loop budget.
 */
import * as tf from "@tensorflow/tfjs";
import { Rng } from "../util/rng.ts";
import { QNetworks } from "../agent/networks.ts";
import { kernelNameCounts } from "../backend/device.ts";
import { benchTraining, workloadConfig } from "./workload-bench.ts";
import type { DispatchSummary } from "./dispatch-summary.ts";

/**
 * The hot-loop figures, plus `readRoundTripMs` (one GPU sum and its `await data()` on an idle
 * queue: the floor under each of a rollout's reads) and the kernels per iteration by name.
 */
export async function benchDispatch(log: (m: string) => void, iterations = 2): Promise<DispatchSummary & { readRoundTripMs: number; kernelsByName: Record<string, number> }> {
  const nets = new QNetworks(workloadConfig("transformer").algo.encoder, new Rng(1));
  try {
    const t = await benchTraining("transformer", nets, log, iterations);
    // per iteration, most frequent first: which ops a recorded loop has to replace
    const kernelsByName = Object.fromEntries(kernelNameCounts().map(([k, n]) => [k, Math.round((n / t.iterationSeconds.attempts) * 10) / 10]));
    const s = { ...t.hotLoop, readRoundTripMs: await readRoundTrip(), kernelsByName };
    log(`  dispatch: ${s.dispatchesPerIteration} dispatches, ${s.tfjsKernelsPerIteration} tfjs kernels, ${s.submitsPerIteration} submits, host ${s.hostMsPerIteration} ms per iteration; a read round trip ${s.readRoundTripMs} ms`);
    return s;
  } finally {
    nets.dispose();
  }
}

/**
 * Median of 21 round trips: the sum of 4,096 ones, then `await data()` (big enough that tfjs-webgpu
 * does not hand the op to the CPU, as it does below 128 elements).
 */
async function readRoundTrip(): Promise<number> {
  const times: number[] = [];
  const x = tf.ones([4096]);
  for (let i = 0; i < 21; i++) {
    const t0 = performance.now();
    const y = tf.sum(x);
    await y.data();
    times.push(performance.now() - t0);
    y.dispose();
  }
  x.dispose();
  times.sort((a, b) => a - b);
  return Math.round(times[10] * 1000) / 1000;
}
