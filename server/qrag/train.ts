/**
 * `train(config, { onEvent, signal, resumeFrom })`: the Q-RAG training loop (docs/method.md §3.1,
 * §3.7). One rollout of fresh data per micro-step, λ-return targets from collection-time target
 * values, one PQN update; every `eval_interval` optimizer steps (and at step 0) greedy evaluation
 * on the test split, metrics, episodes and a checkpoint. An aborted signal saves a checkpoint and
 * returns.
 */
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import type { RunConfig } from "./config.ts";
import { runName } from "./config.ts";
import type { EngineEvent, EpisodeRecord, MetricKey, EventSink, RunMeta } from "./events.ts";
import { pickBackend } from "./backend.ts";
import { Rng, type RngState } from "./util/rng.ts";
import { QNetworks, type NetworkWeights } from "./agent/networks.ts";
import { Learner, type LearnerState } from "./agent/learner.ts";
import { ParallelEnvs } from "./agent/rollout.ts";
import { rolloutSettings } from "./agent/iteration.ts";
import { trainIteration } from "./agent/iteration.ts";
import { greedyEpisode, type GreedyOptions } from "./agent/greedy.ts";
import { aggregate } from "./metrics.ts";
import { gpuMemoryMiB } from "./gpu-memory.ts";
import { trimWebgpuPool } from "./webgpu-pool.ts";
import { buildSource, buildSources, episodeConfig } from "./sources.ts";
import { initFromWordVectors } from "./agent/word-vector-init.ts";
import { saveCheckpoint, loadCheckpoint } from "./checkpoint.ts";
import { ENGINE_VERSION } from "./version.ts";
import { breather } from "./util/breathe.ts";
import type { SampleSource } from "./types.ts";

interface TrainOptions {
  onEvent?: EventSink;
  signal?: AbortSignal;
  /** A checkpoint folder, or a run folder whose checkpoints/last is used. */
  resumeFrom?: string;
  /** Where checkpoints, metrics.jsonl and episodes.jsonl go (default runs/<name>-<time>). */
  runDir?: string;
  /**
   * Asked before each checkpoint is written: resolves true once every event emitted so far is
   * stored by whoever consumes them (the worker waits for the dashboard's acknowledgement), false
   * to skip this checkpoint. A checkpoint must never run ahead of the stored events: a resumed
   * attempt restarts from it, and points emitted before it but never stored would be lost.
   */
  beforeCheckpoint?: () => Promise<boolean>;
  /** The only folder the config's data files are read from (default QRAG_DATA_ROOT). */
  dataRoot?: string;
  /** Bound on one checkpoint weight shard (default 512 MiB; tests set a few KB). */
  checkpointShardBytes?: number;
}

export interface EvalSummary {
  update: number;
  step: number;
  episodes: number;
  return: number;
  coverage: number;
  f1: number;
  precision: number;
  recall: number;
  steps: number;
  oracle_stop: boolean;
}

interface TrainResult {
  status: "completed" | "cancelled";
  runDir: string;
  updates: number;
  step: number;
  lastEval?: EvalSummary;
  bestEvalReturn: number;
  backend: string;
}

/** What a checkpoint of a training run holds, besides the tensors. */
export interface TrainCheckpoint {
  kind: "qrag-train";
  engineVersion: string;
  config: RunConfig;
  backend: string;
  savedAt: string;
  counters: { step: number; sampleCursor: number; lastEvalUpdate: number; wallSeconds: number };
  learner: LearnerState;
  rng: RngState;
  /** Dropout generators of the five encoders. */
  dropoutRng: RngState[];
  bestEvalReturn: number;
  weights: NetworkWeights;
}

function defaultRunDir(config: RunConfig): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19);
  return path.resolve("runs", `${runName(config)}-${stamp}`);
}

/** Greedy-eval settings of a run (test env feedback: the reference's oracle stop by default). */
export function evalOptions(config: RunConfig, overrides: { neverTerminate?: boolean; threshold?: number; alpha?: number; leaveOneOut?: boolean } = {}): GreedyOptions {
  const ep = episodeConfig(config, "test");
  if (overrides.neverTerminate !== undefined) ep.feedback = { ...ep.feedback, neverTerminate: overrides.neverTerminate };
  return {
    episode: ep,
    maxActionLength: config.max_action_length,
    maxInMemory: config.max_action_length_in_memory,
    sortByIndex: config.envs.sort_by_index,
    threshold: overrides.threshold ?? 0.5,
    logTopK: 5,
    // α follows the LR schedule: callers that know the learner's current α pass it (else α0)
    alpha: overrides.alpha ?? config.algo.hyperparams.alpha,
    softValueTopK: config.algo.hyperparams.topk,
    softValueHeads: config.algo.hyperparams.soft_value_heads,
    leaveOneOut: overrides.leaveOneOut ?? false,
  };
}

export function summarize(records: EpisodeRecord[], update: number, step: number): EvalSummary {
  const m = aggregate(records.map((r) => r.metrics));
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  return {
    update, step,
    episodes: records.length,
    return: mean(records.map((r) => r.return)),
    coverage: m.coverage, f1: m.f1, precision: m.precision, recall: m.recall,
    steps: mean(records.map((r) => r.pred_idx.length)),
    oracle_stop: records.some((r) => r.oracle_stop),
  };
}

export async function train(config: RunConfig, opts: TrainOptions = {}): Promise<TrainResult> {
  const emit: EventSink = opts.onEvent ?? (() => {});
  const { backend, device } = await pickBackend(config.backend === "auto" ? undefined : config.backend);
  const resume = opts.resumeFrom ? loadCheckpoint<TrainCheckpoint>(opts.resumeFrom) : undefined;
  if (resume && resume.state.kind !== "qrag-train") throw new Error(`${resume.dir}: not a training checkpoint`);
  const runDir = path.resolve(opts.runDir ?? (resume ? path.dirname(path.dirname(resume.dir)) : defaultRunDir(config)));
  fs.mkdirSync(path.join(runDir, "checkpoints"), { recursive: true });
  fs.writeFileSync(path.join(runDir, "config.yaml"), YAML.stringify(config));
  const metricsFile = fs.openSync(path.join(runDir, "metrics.jsonl"), "a");
  const episodesFile = fs.openSync(path.join(runDir, "episodes.jsonl"), "a");

  const rng = new Rng(config.seed);
  const nets = new QNetworks(config.algo.encoder, rng.fork("init"), { dataRoot: opts.dataRoot });
  const learner = new Learner(nets, config.algo, config.steps_count, config.accumulate_grads);
  const rolloutRng = rng.fork("rollout");
  let step = 0;
  let lastEvalUpdate = -1;
  let bestEvalReturn = -Infinity;
  let wallBase = 0;
  let sampleCursor = 0;
  if (resume) {
    const s = resume.state;
    nets.importWeights(s.weights);
    learner.setState(s.learner);
    rolloutRng.setState(s.rng);
    nets.importRngStates(s.dropoutRng ?? []);
    step = s.counters.step;
    lastEvalUpdate = s.counters.lastEvalUpdate;
    bestEvalReturn = s.bestEvalReturn;
    wallBase = s.counters.wallSeconds;
    sampleCursor = s.counters.sampleCursor;
  }
  const { train: trainSource, test: testSource } = buildSources(config, opts.dataRoot, () => learner.updates);
  // full-size training samples (not the curriculum's) are what the word counts should describe
  const wordVectors = !resume && config.algo.encoder.word_vectors !== undefined
    ? initFromWordVectors(nets, config.algo.encoder, buildSource(config, "train", undefined, opts.dataRoot), rng.fork("word-vectors"), opts.dataRoot)
    : undefined;
  const envs = new ParallelEnvs(trainSource, rolloutSettings(config), rolloutRng, sampleCursor);

  const t0 = performance.now();
  const wall = () => wallBase + (performance.now() - t0) / 1000;
  const send = (e: EngineEvent) => {
    if (e.type === "metric") fs.writeSync(metricsFile, JSON.stringify(e) + "\n");
    emit(e);
  };
  const metric = (key: MetricKey, value: number) => {
    if (Number.isFinite(value)) send({ type: "metric", key, step, update: learner.updates, value, wall: wall() });
  };
  const meta: RunMeta = {
    name: runName(config), backend, device, engineVersion: ENGINE_VERSION, config,
    startedAt: new Date().toISOString(), ...(resume ? { resumedFrom: resume.dir } : {}),
  };
  emit({ type: "run_start", meta });
  emit({ type: "log", level: "info", message: `${resume ? "resuming" : "starting"} ${meta.name} on ${device}; run folder ${runDir}` });
  if (wordVectors) {
    const w = wordVectors;
    emit({ type: "log", level: "info", message: `word vectors (${config.algo.encoder.word_vectors}): ${w.wordsFound} of ${w.wordsCounted} counted words found (${(100 * w.occurrencesFound).toFixed(1)} % of occurrences), ${w.bucketsSet} table rows set` });
  }

  const checkpoint = async (name: string, best: boolean, evalReturn?: number) => {
    if (opts.beforeCheckpoint && !(await opts.beforeCheckpoint())) {
      emit({ type: "log", level: "warn", message: `checkpoint "${name}" at update ${learner.updates} skipped: earlier events are not yet stored` });
      return;
    }
    const dir = path.join(runDir, "checkpoints", name);
    const state: TrainCheckpoint = {
      kind: "qrag-train", engineVersion: ENGINE_VERSION, config, backend, savedAt: new Date().toISOString(),
      counters: { step, sampleCursor: envs.sampleCursor, lastEvalUpdate, wallSeconds: wall() },
      learner: await learner.getStateAsync(), rng: rolloutRng.getState(), dropoutRng: nets.exportRngStates(), bestEvalReturn, weights: await nets.exportWeightsAsync(),
    };
    saveCheckpoint(dir, state as unknown as Record<string, unknown>, { shardBytes: opts.checkpointShardBytes });
    send({ type: "checkpoint", step, update: learner.updates, path: dir, best, ...(evalReturn !== undefined ? { evalReturn } : {}) });
  };

  const evalSet = fixedEvalSet(testSource, config.eval_episodes);
  const gOpts = evalOptions(config);
  let lastEval: EvalSummary | undefined;
  const breathe = breather();
  /** Greedy evaluation, metrics and checkpoints; false when cancelled midway (nothing emitted). */
  const runEval = async (): Promise<boolean> => {
    const records: EpisodeRecord[] = [];
    for (const i of evalSet) {
      await breathe();
      if (opts.signal?.aborted) return false;
      records.push(await greedyEpisode(nets, testSource.sample(i), { ...gOpts, alpha: learner.alpha }));
    }
    const s = summarize(records, learner.updates, step);
    lastEval = s;
    metric("eval_return", s.return);
    metric("eval_coverage", s.coverage);
    metric("eval_f1", s.f1);
    metric("eval_precision", s.precision);
    metric("eval_recall", s.recall);
    metric("eval_steps", s.steps);
    records.forEach((r, k) => {
      const ev: EngineEvent = { type: "episode", phase: "eval", step, update: learner.updates, record: r };
      fs.writeSync(episodesFile, JSON.stringify(ev) + "\n");
      if (k < config.eval_episodes_logged) emit(ev);
    });
    lastEvalUpdate = learner.updates;
    const best = s.return > bestEvalReturn;
    if (best) bestEvalReturn = s.return;
    emit({ type: "log", level: "info", message: `eval @${learner.updates}: return ${s.return.toFixed(3)} coverage ${s.coverage.toFixed(3)} f1 ${s.f1.toFixed(3)} (${s.oracle_stop ? "oracle stop" : "no oracle stop"})` });
    await checkpoint("last", false, s.return);
    if (best) await checkpoint("best", true, s.return);
    return true;
  };

  const logEvery = Math.max(1, Math.min(10, Math.floor(config.eval_interval / 5)));
  let windowStart = performance.now();
  let windowTransitions = 0;
  let windowUpdates = 0;
  let lastProgress = 0;
  let status: TrainResult["status"] = "completed";
  try {
    while (learner.updates < config.steps_count || lastEvalUpdate < learner.updates) {
      if (opts.signal?.aborted) {
        status = "cancelled";
        await checkpoint("last", false);
        break;
      }
      if (learner.updates % config.eval_interval === 0 && lastEvalUpdate < learner.updates && !(await runEval())) continue;
      if (learner.updates >= config.steps_count) {
        if (lastEvalUpdate < learner.updates && !(await runEval())) continue;
        break;
      }
      // aborted mid-rollout: nothing was updated, the loop's top saves the checkpoint
      const res = await trainIteration(envs, learner, nets, config, step < 2 * config.learning_start, opts.signal).catch((e: unknown) => {
        if (opts.signal?.aborted) return null;
        throw e;
      });
      if (!res) continue;
      step += res.transitions;
      windowTransitions += res.transitions;
      if (res.applied) {
        windowUpdates++;
        if (learner.updates % logEvery === 0 || learner.updates === config.steps_count) {
          const secs = (performance.now() - windowStart) / 1000;
          // one read on the device path, where loss and norm stay on the device between logs
          const last = await learner.lastStats();
          metric("qf_loss", last.loss);
          metric("lr", res.applied.lr);
          metric("alpha", res.applied.alpha);
          metric("grad_norm", last.gradNorm);
          metric("transitions_per_s", windowTransitions / secs);
          metric("updates_per_s", windowUpdates / secs);
          const gpuMem = gpuMemoryMiB(); // webgpu only: buffers the backend holds (pool included), live tensors', the step's peak
          if (gpuMem) {
            metric("gpu_memory_mb", gpuMem.allocatedMiB);
            metric("gpu_memory_live_mb", gpuMem.usedMiB);
            metric("gpu_memory_peak_mb", gpuMem.peakMiB);
          }
          const rets = envs.takeFinishedReturns();
          if (rets.length) metric("train_return", rets.reduce((a, b) => a + b, 0) / rets.length);
          windowStart = performance.now();
          windowTransitions = 0;
          windowUpdates = 0;
        }
        const now = performance.now();
        if (now - lastProgress > 250 || learner.updates === config.steps_count) {
          lastProgress = now;
          const done = learner.updates;
          const rate = done > 0 ? (wall() - wallBase) / Math.max(1, done - (resume?.state.learner.updates ?? 0)) : 0;
          emit({ type: "progress", phase: "train", done, total: config.steps_count, etaSeconds: rate * (config.steps_count - done) });
        }
      }
      // let the event loop breathe (socket acks, abort signals) between iterations
      await new Promise((r) => setImmediate(r));
    }
  } catch (e) {
    emit({ type: "run_end", status: "failed", step, update: learner.updates, error: (e as Error).message });
    throw e;
  } finally {
    fs.closeSync(metricsFile);
    fs.closeSync(episodesFile);
    learner.dispose();
    envs.dispose();
    nets.dispose();
    trimWebgpuPool(); // the process may go on (benches, tests): hand back the pool this run left
  }
  emit({ type: "run_end", status, step, update: learner.updates });
  return { status, runDir, updates: learner.updates, step, lastEval, bestEvalReturn, backend };
}

/** The first `n` samples of the test split (a fixed set, so eval curves compare like with like). */
function fixedEvalSet(source: SampleSource, n: number): number[] {
  const size = Number.isFinite(source.size) ? Math.min(n, source.size) : n;
  return Array.from({ length: size }, (_, i) => i);
}
