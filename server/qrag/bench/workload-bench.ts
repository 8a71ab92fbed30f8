/**
 * The reference workload (docs/workload.md) on our engine: training transitions/s and
 * update time (E=4, B=64, N=100, never_terminate, 6-step episodes), encode chunks/s (40,000
 * chunks, batch 1024) and greedy episode latency at N = 40,000 and 400,000 candidates. The
 * training loop is `trainIteration`, the code `train()` runs.
 */
import * as tf from "@tensorflow/tfjs";
import { resolveConfig, type RunConfig } from "../config/config.ts";
import { Rng } from "../util/rng.ts";
import { QNetworks } from "../agent/networks.ts";
import { Learner } from "../agent/learner.ts";
import { ParallelEnvs } from "../agent/rollout.ts";
import { rolloutSettings, trainIteration } from "../agent/iteration.ts";
import { disposeCandidates, embedSampleChunks, greedyEpisode, type CandidateEmbeddings } from "../agent/greedy.ts";
import { countersOn, kernelNameCounts, phaseClock, resetCounters, type PhaseCounters } from "../backend/device.ts";
import { dawnPolls } from "../backend/dawn-poll.ts";
import { evalOptions } from "../training/train.ts";
import { materialized, materializedSource, workloadSource } from "./workload.ts";
import type { SampleSource } from "../types.ts";
import { measure, stats, timeRepeat } from "./harness.ts";
import { summarizeDispatch } from "./dispatch-summary.ts";
import { recorderStats } from "../model/webgpu/recorded-encoder.ts";
import { gpuTimingOn, settledCounters } from "../backend/gpu-timing.ts";
import { programTimes, topPrograms } from "./program-times.ts";
import { hostProfile, hostProfileIterations, hostProfileLine } from "./host-profile.ts";

/**
 * `reference`: docs/workload.md's sizes. `counts`: the same loop at a sliver of its compute (the
 * encoder at d 4, a shorter random phase) for counting what an iteration dispatches, submits and
 * runs through tfjs: the same programs in the same order, so the same counts (checked on lavapipe:
 * 1,452 dispatches, 637 tfjs kernels, 97 submits in both; 393 dispatches both on 2026-11-29, 317
 * both with the layer tail, which takes d 4 as it takes d 128: layer-tail.ts), in
 * seconds instead of minutes on a CPU adapter, which is what lets CI hold the hot-loop ceiling.
 * Its max_len stays the reference's 256: states pad to the same lengths, and whether a forward's
 * pooling rides on its last program depends on that length (recorded-encoder.ts poolFuses; with
 * max_len 64 it always did, up to 11 dispatches fewer than the reference).
 */
export type WorkloadShape = "reference" | "counts";

const COUNTS_OVERRIDES = ["algo.encoder.dim=4", "algo.encoder.hidden=16", "learning_start=10"];

export function workloadConfig(encoder: "bow" | "transformer", shape: WorkloadShape = "reference"): RunConfig {
  return resolveConfig({
    preset: "babilong",
    overrides: [
      ...(encoder === "bow" ? ["algo=pqn_cpu"] : []),
      "envs_parallel=4", "batch_size=64", "accumulate_grads=1", "steps_count=50000", "learning_start=200",
      "max_action_length=32", "max_action_length_in_memory=32",
      "envs.feedback.never_terminate=true", "envs.test_env.feedback.never_terminate=true",
      ...(shape === "counts" ? COUNTS_OVERRIDES : []),
    ],
  });
}

/** Training iterations of the reference workload, timed after the warm-up, with per-phase counts. */
export function benchTraining(encoder: "bow" | "transformer", nets: QNetworks, log: (m: string) => void, want = 6, shape: WorkloadShape = "reference") {
  return benchTrainingOf(encoder, workloadConfig(encoder, shape), materializedSource(workloadSource(100, 1)), nets, log, want);
}

/** Training iterations of `config` on `source` (`label` names them in the log), timed after the warm-up, with per-phase counts. */
export async function benchTrainingOf(label: string, config: RunConfig, source: SampleSource, nets: QNetworks, log: (m: string) => void, want: number) {
  // as train() makes it: the config's accumulation and pass size (babilong-gpu: passes of 16)
  const learner = new Learner(nets, config.algo, config.steps_count, config.accumulate_grads, config.pass_batch_size);
  const envs = new ParallelEnvs(source, rolloutSettings(config), new Rng(2));
  let step = 0;
  const iterate = async () => {
    const r = await trainIteration(envs, learner, nets, config, step < 2 * config.learning_start);
    step += r.transitions;
    return r;
  };
  // warm-up: the uniform-random phase (6 iterations = 408 transitions) and one Boltzmann iteration
  while (step < 2 * config.learning_start) await iterate();
  await iterate();
  countersOn();
  // GPU time per phase where the adapter has timestamp queries (read after the counts; its flush not counted)
  const gpuTimed = gpuTimingOn();
  resetCounters();
  // the phases' wall time (host ms by phase) over the iterations only, not the bench's work between them
  phaseClock(false);
  const [bindGroups, plans, planBytes] = [recorderStats.bindGroups, recorderStats.plans, recorderStats.bytes];
  const polls0 = { ...dawnPolls };
  const iters: { wall: number; update: number; rollout: number; transitions: number; clean: boolean }[] = [];
  while (iters.filter((i) => i.clean).length < want && iters.length < want * 2) {
    let res: Awaited<ReturnType<typeof iterate>> | undefined;
    const rep = await timeRepeat(async () => {
      phaseClock(true);
      try {
        res = await iterate();
      } finally {
        phaseClock(false);
      }
    });
    iters.push({ wall: rep.wall, update: res!.updateSeconds, rollout: res!.rolloutSeconds, transitions: res!.transitions, clean: rep.clean });
    log(`  ${label} iteration ${iters.length}: ${rep.wall.toFixed(2)} s (update ${res!.updateSeconds.toFixed(2)} s)${rep.clean ? "" : " [busy machine, discarded]"}`);
  }
  // bind groups the recorded plans made again (a variable's buffer changed) or anew (a plan built)
  const perIteration = (n: number): number => Math.round((n / iters.length) * 10) / 10;
  const bindGroupsPerIteration = perIteration(recorderStats.bindGroups - bindGroups);
  const plansPerIteration = perIteration(recorderStats.plans - plans);
  const planMiBPerIteration = perIteration((recorderStats.bytes - planBytes) / 2 ** 20);
  // Dawn's polls of the reads' waits (dawn-poll.ts): "timed" ones are waits past the spin (2 ms on a CPU adapter, 50 on a GPU)
  const dawnPollsPerIteration = { immediate: perIteration(dawnPolls.immediate - polls0.immediate), timed: perIteration(dawnPolls.timed - polls0.timed) };
  const { counts, timed } = await countsSince(iters.length, gpuTimed, log);
  phaseClock(true);
  const kernelsByName = Object.fromEntries(kernelNameCounts().map(([k, n]) => [k, perIteration(n)]));
  // one more iteration, each program timed apart (null without timestamp queries)
  const gpuByProgram = await programTimes(async () => void (await iterate()));
  log(`  ${label} iteration, GPU per program: ${topPrograms(gpuByProgram)}`);
  // `--host-profile N`: N more iterations under the CPU profiler (host-profile.ts)
  const n = hostProfileIterations();
  const hostByFunction = n > 0 ? await hostProfile(async () => { for (let i = 0; i < n; i++) await iterate(); }) : null;
  if (hostByFunction) log(`  ${label} iteration ×${n}, host profile: ${hostProfileLine(hostByFunction)}`);
  learner.dispose();
  envs.dispose();
  const use = iters.filter((i) => i.clean).length ? iters.filter((i) => i.clean) : iters;
  const wall = stats(use.map((i) => i.wall), iters.length);
  return {
    iterationSeconds: wall,
    transitionsPerSecond: use[0].transitions / wall.median,
    trainedTransitionsPerSecond: config.batch_size / wall.median,
    updateSeconds: stats(use.map((i) => i.update)),
    rolloutSeconds: stats(use.map((i) => i.rollout)),
    /** Reads, kernels and GPU dispatches per phase, per iteration (mean over the timed iterations). */
    countsPerIteration: counts,
    /** The same counts summed, against the hot-loop budget (what `--parts dispatch` prints). */
    hotLoop: { ...summarizeDispatch(counts, wall.median * 1000, timed), bindGroupsPerIteration, plansPerIteration, planMiBPerIteration, dawnPollsPerIteration },
    /** Kernels by name per iteration (device.ts kernelNameCounts over the timed iterations). */
    kernelsByName,
    /** GPU time per program over one extra iteration (program-times.ts). */
    gpuByProgram,
    /** The host's time by function over `--host-profile N` more iterations (host-profile.ts; null without the flag). */
    hostByFunction: hostByFunction && { iterations: n, ...hostByFunction },
  };
}

export async function benchWorkload(encoder: "bow" | "transformer", log: (m: string) => void, opts: { iterations?: number; evalLengths?: number[] } = {}): Promise<Record<string, unknown>> {
  const config = workloadConfig(encoder);
  const nets = new QNetworks(config.algo.encoder, new Rng(1));
  const training = await benchTraining(encoder, nets, log, opts.iterations ?? 6);

  // encode throughput: 40,000 chunks, eval mode, batch 1024
  const encSample = materialized(workloadSource(40_000, 3).sample(0));
  await settled(await embedSampleChunks(nets, workloadSource(1024, 9).sample(0), config.max_action_length, 1024));
  const encTimed = gpuTimingOn();
  resetCounters();
  const enc = await measure(async () => {
    await settled(await embedSampleChunks(nets, encSample, config.max_action_length, 1024));
  }, encoder === "bow" ? 5 : 2, encoder === "bow" ? 8 : 3);
  const encode = { chunks: 40_000, seconds: enc.stats, chunksPerSecond: 40_000 / enc.stats.median, countsPerCall: (await countsSince(enc.repeats.length, encTimed, log)).counts };
  log(`  ${encoder} encode: ${encode.chunksPerSecond.toFixed(0)} chunks/s`);

  // greedy episodes (6 steps, never_terminate): embedding all candidates + the steps
  const gOpts = { ...evalOptions(config, { neverTerminate: true }), embedBatch: 1024 };
  const episodes: Record<string, unknown> = {};
  const lengths = opts.evalLengths ?? (encoder === "bow" ? [40_000, 400_000] : [40_000]);
  for (const n of lengths) {
    const sample = materialized(workloadSource(n, 5).sample(0));
    let embedSeconds = 0;
    let emb: CandidateEmbeddings | undefined;
    const full = await measure(async () => {
      const t0 = performance.now();
      disposeCandidates(emb);
      emb = await embedSampleChunks(nets, sample, config.max_action_length, 1024);
      embedSeconds = (performance.now() - t0) / 1000;
      await greedyEpisode(nets, sample, gOpts, emb);
    }, n >= 400_000 ? 2 : 3, n >= 400_000 ? 3 : 4);
    const stepsTimed = gpuTimingOn();
    resetCounters();
    const steps = await measure(async () => {
      await greedyEpisode(nets, sample, gOpts, emb);
    }, 5, 8);
    const stepCounts = (await countsSince(steps.repeats.length, stepsTimed, log)).counts;
    disposeCandidates(emb);
    episodes[String(n)] = { episodeSeconds: full.stats, lastEmbedSeconds: embedSeconds, sixStepsSeconds: steps.stats, sixStepsCounts: stepCounts };
    log(`  ${encoder} episode N=${n}: ${full.stats.median.toFixed(2)} s (6 steps alone ${steps.stats.median.toFixed(3)} s)`);
  }
  if (encoder === "transformer" && !lengths.includes(400_000)) {
    // 400k candidates take ~10x the 40k embedding time; estimated from measured parts, labelled so
    const e40 = episodes["40000"] as { episodeSeconds: { median: number }; sixStepsSeconds: { median: number } };
    episodes["400000"] = { estimated: true, episodeSeconds: 400_000 / encode.chunksPerSecond + 10 * e40.sixStepsSeconds.median };
  }
  nets.dispose();
  return { encoder: config.algo.encoder, training, encode, episodes };
}

/** settledCounters per run, saying so when some passes went untimed. */
async function countsSince(runs: number, gpuTimed: boolean, log: (m: string) => void): Promise<{ counts: Record<string, PhaseCounters>; timed: boolean }> {
  const { counts, timed, untimed } = await settledCounters(gpuTimed);
  if (untimed) log(`  GPU timing: ${untimed} passes untimed (more than a query set holds): no GPU figure`);
  return { counts: perRun(counts, runs), timed };
}

/** Counters divided by the number of runs (rounded to 0.1). */
function perRun(c: Partial<Record<string, PhaseCounters>>, runs: number): Record<string, PhaseCounters> {
  const out: Record<string, PhaseCounters> = {};
  const r = (x: number) => Math.round((x / Math.max(1, runs)) * 10) / 10;
  for (const [p, v] of Object.entries(c)) if (v) out[p] = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, r(x)])) as unknown as PhaseCounters;
  return out;
}

/** Waits for device work behind candidate embeddings (one scalar read; a no-op on the host path). */
export async function settled(c: CandidateEmbeddings): Promise<void> {
  if (c instanceof Float32Array) return;
  const s = tf.sum(c);
  await s.data();
  s.dispose();
  c.dispose();
}
