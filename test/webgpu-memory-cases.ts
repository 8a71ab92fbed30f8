/**
 * The case of webgpu-memory.test.ts, run in a fresh Node process like engine-device-cases.ts (Dawn
 * per process, a large V8 semi-space): training iterations, greedy episodes and a tiny train() run
 * on samples whose chunk counts vary, so every step brings buffer sizes the pool has not seen.
 * Prints one JSON line: tfjs's allocated and live GPU bytes and the step's peak after each step,
 * and the run's gpu_memory_mb / gpu_memory_live_mb / gpu_memory_peak_mb / gpu_memory_plans_mb metrics.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as tf from "@tensorflow/tfjs";
import { onBackend } from "./device-case-runner.ts";
import { QNetworks } from "../server/qrag/agent/networks.ts";
import { Learner } from "../server/qrag/agent/learner.ts";
import { ParallelEnvs } from "../server/qrag/agent/rollout.ts";
import { rolloutSettings, trainIteration } from "../server/qrag/agent/iteration.ts";
import { evalOptions, train } from "../server/qrag/training/train.ts";
import { greedyEpisode } from "../server/qrag/agent/greedy.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { workloadSource } from "../server/qrag/bench/workload.ts";
import type { SampleSource } from "../server/qrag/types.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { stepPeakBytes } from "../server/qrag/backend/webgpu-pool.ts";

export interface GpuBytes {
  allocated: number;
  live: number;
  /** The most bytes the step held at once (webgpu-pool.ts). */
  peak: number;
}
export interface MemoryCase {
  iterations: GpuBytes[];
  episodes: GpuBytes[];
  metrics: { allocatedMiB: number; liveMiB: number; peakMiB: number; planMiB: number }[];
  seconds: { iterations: number; episodes: number; run: number };
}

const ITERATIONS = Number(process.argv[3] ?? 1000);
const EPISODES = 12;

/** 10 to 59 chunks per sample: encoder batches, states and candidate sets of ever new sizes. */
const varying: SampleSource = { name: "varying", size: Infinity, sample: (i) => workloadSource(10 + ((i * 7) % 50), i).sample(i) };

function gpuBytes(): GpuBytes {
  const m = tf.memory() as tf.MemoryInfo & { numBytesInGPU: number; numBytesAllocatedInGPU: number };
  return { allocated: m.numBytesAllocatedInGPU, live: m.numBytesInGPU, peak: stepPeakBytes() ?? NaN };
}

async function memoryCase(): Promise<MemoryCase> {
  await onBackend("webgpu");
  const config = resolveConfig({
    preset: "tiny",
    overrides: ["envs_parallel=1", "batch_size=2", "learning_start=1", "algo.hyperparams.drop_last_transition=false", "algo.encoder.type=bow"],
  });
  const nets = new QNetworks(config.algo.encoder, new Rng(1));
  const learner = new Learner(nets, config.algo, 10, 1);
  const envs = new ParallelEnvs(varying, rolloutSettings(config), new Rng(2));
  const t0 = performance.now();
  const iterations: GpuBytes[] = [];
  let step = 0;
  for (let i = 0; i < ITERATIONS; i++) {
    step += (await trainIteration(envs, learner, nets, config, step < 2 * config.learning_start)).transitions;
    iterations.push(gpuBytes());
  }
  const t1 = performance.now();
  const episodes: GpuBytes[] = [];
  const gOpts = evalOptions(config);
  for (let i = 0; i < EPISODES; i++) {
    await greedyEpisode(nets, varying.sample(1000 + i), { ...gOpts, alpha: learner.alpha });
    episodes.push(gpuBytes());
  }
  const t2 = performance.now();
  envs.dispose();
  learner.dispose();
  nets.dispose();

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-memory-"));
  const metrics: MemoryCase["metrics"] = [];
  const pending = new Map<number, { allocatedMiB?: number; liveMiB?: number; peakMiB?: number }>();
  try {
    // a transformer (the tiny preset's bow keeps no activations): its recorded plans hold memory of their own
    const runConfig = resolveConfig({ preset: "tiny", overrides: ["steps_count=10", "eval_interval=10", "eval_episodes=1", "envs_parallel=1", "batch_size=2", "learning_start=1", "algo.encoder.type=transformer", "algo.encoder.layers=1", "algo.encoder.heads=2", "algo.encoder.max_len=64"] });
    await train(runConfig, {
      runDir: path.join(tmp, "run"),
      onEvent: (e) => {
        if (e.type !== "metric" || !e.key.startsWith("gpu_memory")) return;
        const m = pending.get(e.update) ?? {};
        pending.set(e.update, m);
        if (e.key === "gpu_memory_mb") m.allocatedMiB = e.value;
        else if (e.key === "gpu_memory_live_mb") m.liveMiB = e.value;
        else if (e.key === "gpu_memory_peak_mb") m.peakMiB = e.value;
        else metrics.push({ allocatedMiB: m.allocatedMiB ?? NaN, liveMiB: m.liveMiB ?? NaN, peakMiB: m.peakMiB ?? NaN, planMiB: e.value });
      },
    });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const s = (a: number, b: number) => Math.round(b - a) / 1000;
  return { iterations, episodes, metrics, seconds: { iterations: s(t0, t1), episodes: s(t1, t2), run: s(t2, performance.now()) } };
}

if (process.argv[2] !== "memory") throw new Error(`unknown case "${process.argv[2]}" (one of memory)`);
process.stdout.write(JSON.stringify(await memoryCase()) + "\n");
process.exit(0);
