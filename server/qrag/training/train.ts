/**
 * `train(config, { onEvent, signal, resumeFrom })`: the Q-RAG training loop (docs/method.md §3.1,
 * §3.7), read top to bottom like CleanRL's pqn.py:
 *
 *   1. set-up: backend, run folder, networks, learner, generators, a resumed checkpoint's state,
 *      the train/test sources and the parallel envs;
 *   2. the loop: one rollout of fresh data per micro-step, λ-return targets from collection-time
 *      target values, the twin-Q loss and one AdamW step with Polyak target updates
 *      (`trainIteration`, agent/iteration.ts);
 *   3. every `eval_interval` optimizer steps (and at step 0) greedy evaluation on the test split,
 *      its episodes and the `last` / `best` checkpoints (train-eval.ts, train-checkpoint.ts);
 *   4. the training window's metrics and progress (train-metrics.ts).
 *
 * An aborted signal saves a checkpoint and returns.
 */
import path from "node:path";
import type { RunConfig } from "../config/config.ts";
import { runName } from "../config/config.ts";
import type { EventSink, RunMeta } from "../events.ts";
import { pickBackend } from "../backend/pick.ts";
import { Rng } from "../util/rng.ts";
import { QNetworks } from "../agent/networks.ts";
import { Learner } from "../agent/learner.ts";
import { ParallelEnvs } from "../agent/rollout.ts";
import { rolloutSettings, trainIteration } from "../agent/iteration.ts";
import { trimWebgpuPool } from "../backend/webgpu-pool.ts";
import { applyRunStorage } from "../model/webgpu/half-storage.ts";
import { buildSource, buildSources } from "../data/sources.ts";
import { initFromWordVectors } from "../agent/word-vector-init.ts";
import type { WordTableReport } from "../model/word-vectors.ts";
import { ENGINE_VERSION } from "../version.ts";
import { checkpointer, loadTrainCheckpoint, restoreRun } from "./checkpointing.ts";
import { evaluator, type EvalSummary } from "./eval.ts";
import { RunFiles, TrainMeter, metricSender } from "./metrics.ts";

export { evalOptions, summarize, type EvalSummary } from "./eval.ts";
export type { TrainCheckpoint } from "./checkpointing.ts";

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

interface TrainResult {
  status: "completed" | "cancelled";
  runDir: string;
  updates: number;
  step: number;
  lastEval?: EvalSummary;
  bestEvalReturn: number;
  backend: string;
}

function defaultRunDir(config: RunConfig): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19);
  return path.resolve("runs", `${runName(config)}-${stamp}`);
}

export async function train(config: RunConfig, opts: TrainOptions = {}): Promise<TrainResult> {
  // 1. set-up: backend, run folder, networks, learner, resume
  const emit: EventSink = opts.onEvent ?? (() => {});
  const picked = await pickBackend(config.backend === "auto" ? undefined : config.backend);
  const { backend, device } = withStorage(picked, config, emit);
  const resume = loadTrainCheckpoint(opts.resumeFrom);
  const runDir = path.resolve(opts.runDir ?? (resume ? path.dirname(path.dirname(resume.dir)) : defaultRunDir(config)));
  const files = new RunFiles(runDir, config);

  const rng = new Rng(config.seed);
  const nets = new QNetworks(config.algo.encoder, rng.fork("init"), { dataRoot: opts.dataRoot });
  const learner = new Learner(nets, config.algo, config.steps_count, config.accumulate_grads, config.pass_batch_size);
  const rolloutRng = rng.fork("rollout");
  const counters = restoreRun(resume, nets, learner, rolloutRng);
  const { train: trainSource, test: testSource } = buildSources(config, opts.dataRoot, () => learner.updates);
  // full-size training samples (not the curriculum's) are what the word counts should describe
  const wordVectors = !resume && config.algo.encoder.word_vectors !== undefined
    ? initFromWordVectors(nets, config.algo.encoder, buildSource(config, "train", undefined, opts.dataRoot), rng.fork("word-vectors"), opts.dataRoot)
    : undefined;
  const envs = new ParallelEnvs(trainSource, rolloutSettings(config), rolloutRng, counters.sampleCursor);

  const t0 = performance.now();
  const wall = () => counters.wallBase + (performance.now() - t0) / 1000;
  const send = files.sender(emit);
  const metric = metricSender(send, () => ({ step: counters.step, update: learner.updates, wall: wall() }));
  announce(emit, config, { backend, device, runDir, resumedFrom: resume?.dir, wordVectors });

  // 3. evaluation and checkpoints
  const checkpoint = checkpointer({
    config, backend, runDir, nets, learner, rolloutRng, envs, counters, wall, emit, send,
    beforeCheckpoint: opts.beforeCheckpoint, shardBytes: opts.checkpointShardBytes,
  });
  const evaluation = evaluator({
    config, nets, learner, testSource, counters, signal: opts.signal, emit, metric,
    writeEpisode: (ev) => files.writeEpisode(ev), checkpoint,
  });
  // 4. the training window's metrics and progress
  const meter = new TrainMeter({ config, learner, envs, metric, emit, wall, wallBase: counters.wallBase, resumedUpdates: resume?.state.learner.updates ?? 0 });

  // 2. the loop
  let status: TrainResult["status"] = "completed";
  try {
    while (learner.updates < config.steps_count || counters.lastEvalUpdate < learner.updates) {
      if (opts.signal?.aborted) {
        status = "cancelled";
        await checkpoint("last", false);
        break;
      }
      if (learner.updates % config.eval_interval === 0 && counters.lastEvalUpdate < learner.updates && !(await evaluation.run())) continue;
      if (learner.updates >= config.steps_count) {
        if (counters.lastEvalUpdate < learner.updates && !(await evaluation.run())) continue;
        break;
      }
      // rollout → λ-targets → twin loss → AdamW / Polyak; aborted mid-rollout: nothing was
      // updated, the loop's top saves the checkpoint
      const res = await trainIteration(envs, learner, nets, config, counters.step < 2 * config.learning_start, opts.signal).catch((e: unknown) => {
        if (opts.signal?.aborted) return null;
        throw e;
      });
      if (!res) continue;
      counters.step += res.transitions;
      await meter.record(res);
      // let the event loop breathe (socket acks, abort signals) between iterations
      await new Promise((r) => setImmediate(r));
    }
  } catch (e) {
    emit({ type: "run_end", status: "failed", step: counters.step, update: learner.updates, error: (e as Error).message });
    throw e;
  } finally {
    files.close();
    learner.dispose();
    envs.dispose();
    nets.dispose();
    trimWebgpuPool(); // the process may go on (benches, tests): hand back the pool this run left
  }
  emit({ type: "run_end", status, step: counters.step, update: learner.updates });
  return { status, runDir, updates: learner.updates, step: counters.step, lastEval: evaluation.lastEval, bestEvalReturn: counters.bestEvalReturn, backend };
}

/** The run's gpu_storage applied (half-storage.ts); a warning where it asked for f16 and stays f32. */
function withStorage(picked: { backend: string; device: string }, config: RunConfig, emit: EventSink): { backend: string; device: string } {
  const { device, why } = applyRunStorage(config.gpu_storage, config.algo.encoder.type, picked);
  if (why) emit({ type: "log", level: "warn", message: `gpu_storage f16: ${why}; activations stay f32` });
  return { backend: picked.backend, device };
}

/** The run's first events: run_start, where it runs, and what the word-vector initialisation found. */
function announce(emit: EventSink, config: RunConfig, at: { backend: string; device: string; runDir: string; resumedFrom?: string; wordVectors?: WordTableReport }): void {
  const meta: RunMeta = {
    name: runName(config), backend: at.backend, device: at.device, engineVersion: ENGINE_VERSION, config,
    startedAt: new Date().toISOString(), ...(at.resumedFrom !== undefined ? { resumedFrom: at.resumedFrom } : {}),
  };
  emit({ type: "run_start", meta });
  emit({ type: "log", level: "info", message: `${at.resumedFrom !== undefined ? "resuming" : "starting"} ${meta.name} on ${at.device}; run folder ${at.runDir}` });
  const w = at.wordVectors;
  if (w) {
    emit({ type: "log", level: "info", message: `word vectors (${config.algo.encoder.word_vectors}): ${w.wordsFound} of ${w.wordsCounted} counted words found (${(100 * w.occurrencesFound).toFixed(1)} % of occurrences), ${w.bucketsSet} table rows set` });
  }
}
