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
import { resetCounters, type PhaseCounters } from "../backend/device.ts";
import { disposeCandidates, embedSampleChunks, greedyEpisode } from "../agent/greedy.ts";
import { evalOptions } from "../training/train.ts";
import { benchTraining, settled, workloadConfig, type WorkloadShape } from "./workload-bench.ts";
import { materialized, materializedSource, workloadSource } from "./workload.ts";
import { benchEvalGroups, evalBenchOn, type EvalGroupsFigures } from "./eval-groups.ts";
import { compileNote, phaseList, summarizeDispatch, type DispatchSummary } from "./dispatch-summary.ts";
import { recorderStats } from "../model/webgpu/recorded-encoder.ts";
import { gpuTimingOn, settledCounters } from "../backend/gpu-timing.ts";
import { programTimes, topPrograms, type ProgramTimes } from "./program-times.ts";
import type { HostProfile } from "./host-profile.ts";

/** The four hot-loop figures of one call of something other than a training iteration. */
export interface CallCounts {
  dispatches: number;
  tfjsKernels: number;
  submits: number;
  hostMs: number;
  /** GPU time inside its compute passes (null where the adapter has no timestamp queries). */
  gpuMs: number | null;
  perPhase: Record<string, PhaseCounters>;
  /** GPU time per program over one more call (program-times.ts). */
  gpuByProgram: ProgramTimes | null;
}

/**
 * The hot-loop figures (with `gpuByProgram`: GPU time per program over one more iteration), plus `readRoundTripMs` (one GPU sum and its `await data()` on an idle
 * queue: the floor under each of a rollout's reads) and the kernels per iteration by name.
 */
export async function benchDispatch(log: (m: string) => void, iterations = 2, shape: WorkloadShape = "reference"): Promise<DispatchSummary & { shape: WorkloadShape; readRoundTripMs: number; kernelsByName: Record<string, number>; recorder: typeof recorderStats; gpuByProgram: ProgramTimes | null; hostByFunction: (HostProfile & { iterations: number }) | null; greedyEpisode: CallCounts; evalEncode: CallCounts; evaluation: EvalGroupsFigures | null }> {
  const config = workloadConfig("transformer", shape);
  const nets = new QNetworks(config.algo.encoder, new Rng(1));
  try {
    const t = await benchTraining("transformer", nets, log, iterations, shape);
    // what the recorded encoder made over the warm-up, the timed and the profiled iterations (plans churn when shapes outnumber its cache)
    const recorder = { ...recorderStats };
    // kernelsByName: per iteration, most frequent first (which ops a recorded loop has to replace)
    const hot = { ...t.hotLoop, shape, readRoundTripMs: await readRoundTrip(), kernelsByName: t.kernelsByName, recorder, gpuByProgram: t.gpuByProgram, hostByFunction: t.hostByFunction };
    log(`  dispatch: ${hot.dispatchesPerIteration} dispatches, ${hot.tfjsKernelsPerIteration} tfjs kernels, ${hot.submitsPerIteration} submits, ${hot.readsPerIteration} reads, host ${hot.hostMsPerIteration} ms (${phaseList(hot.hostMsByPhase)}), GPU ${hot.gpuMsPerIteration ?? "(untimed)"} ms per iteration${compileNote(hot)}; a read round trip ${hot.readRoundTripMs} ms`);

    // one greedy episode at N = 1,000 (its candidates' embedding included) and one eval encode of 1,024 chunks
    const maxTokens = config.max_action_length;
    const episode = materialized(workloadSource(1000, 5).sample(0));
    const gOpts = { ...evalOptions(config, { neverTerminate: true }), embedBatch: 1024 };
    const greedy = await countCall(async () => {
      const emb = await embedSampleChunks(nets, episode, maxTokens, 1024);
      await greedyEpisode(nets, episode, gOpts, emb);
      disposeCandidates(emb);
    });
    const chunks = materialized(workloadSource(1024, 9).sample(0));
    const encode = await countCall(async () => settled(await embedSampleChunks(nets, chunks, maxTokens, 1024)));
    for (const [what, c] of [["greedy episode N=1000", greedy], ["eval encode 1024 chunks", encode]] as const) {
      log(`  dispatch: ${what}: ${c.dispatches} dispatches, ${c.tfjsKernels} tfjs kernels, ${c.submits} submits, host ${c.hostMs} ms, GPU ${c.gpuMs ?? "(untimed)"} ms; per program ${topPrograms(c.gpuByProgram)}`);
    }
    // a run's evaluation both ways (eval-groups.ts); the reference shape only: CI's counting run (`counts`) needs none
    const evaluation = shape === "reference" && evalBenchOn() ? await benchEvalGroups(nets, config, materializedSource(workloadSource(100, 5)), log) : null;
    return { ...hot, greedyEpisode: greedy, evalEncode: encode, evaluation };
  } finally {
    nets.dispose();
  }
}

/** Counts of one call of `fn` after a warm-up call (pipelines compiled, buffers allocated). */
async function countCall(fn: () => Promise<void>): Promise<CallCounts> {
  await fn();
  const gpuTimed = gpuTimingOn();
  resetCounters();
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  const { counts, timed } = await settledCounters(gpuTimed);
  const perPhase = counts as Record<string, PhaseCounters>;
  const s = summarizeDispatch(perPhase, ms, timed);
  const gpuByProgram = await programTimes(fn);
  return { dispatches: s.dispatchesPerIteration, tfjsKernels: s.tfjsKernelsPerIteration, submits: s.submitsPerIteration, hostMs: s.hostMsPerIteration, gpuMs: s.gpuMsPerIteration, perPhase, gpuByProgram };
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
