/**
 * A training run's evaluation (train.ts): greedy episodes on a fixed set of the test split, their
 * summary and `eval_*` metrics, the episodes (all to episodes.jsonl, the first
 * `eval_episodes_logged` as events), and the `last` / `best` checkpoints that follow.
 */
import type { RunConfig } from "../config/config.ts";
import type { EngineEvent, EpisodeRecord, EventSink, MetricKey } from "../events.ts";
import type { QNetworks } from "../agent/networks.ts";
import type { Learner } from "../agent/learner.ts";
import type { GreedyOptions } from "../agent/greedy.ts";
import { episodeGroups, greedyEpisodes, groupEpisodes } from "../agent/greedy-batch.ts";
import { aggregate } from "../evaluation/metrics.ts";
import { episodeConfig } from "../data/sources.ts";
import { breather } from "../util/breathe.ts";
import type { Sample, SampleSource } from "../types.ts";
import type { RunCounters } from "./checkpointing.ts";

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

/** The first `n` samples of the test split (a fixed set, so eval curves compare like with like). */
export function fixedEvalSet(source: SampleSource, n: number): number[] {
  const size = Number.isFinite(source.size) ? Math.min(n, source.size) : n;
  return Array.from({ length: size }, (_, i) => i);
}

/** The samples of `indices`, each drawn when taken. */
export function* samplesOf(source: SampleSource, indices: readonly number[]): Generator<Sample> {
  for (const i of indices) yield source.sample(i);
}

export interface EvaluatorDeps {
  config: RunConfig;
  nets: QNetworks;
  learner: Learner;
  testSource: SampleSource;
  counters: RunCounters;
  signal?: AbortSignal;
  emit: EventSink;
  /** A metric at the run's current step and update (non-finite values are left out). */
  metric: (key: MetricKey, value: number) => void;
  /** Appends an episode event to episodes.jsonl. */
  writeEpisode: (ev: EngineEvent) => void;
  checkpoint: (name: string, best: boolean, evalReturn?: number) => Promise<void>;
}

/** A run's evaluator: `run()` evaluates, logs and checkpoints; `lastEval` is the latest summary. */
export interface Evaluator {
  /** Greedy evaluation, metrics and checkpoints; false when cancelled midway (nothing emitted). */
  run(): Promise<boolean>;
  readonly lastEval: EvalSummary | undefined;
}

export function evaluator(d: EvaluatorDeps): Evaluator {
  const { config, nets, learner, testSource, counters, metric } = d;
  const evalSet = fixedEvalSet(testSource, config.eval_episodes);
  const gOpts = evalOptions(config);
  let lastEval: EvalSummary | undefined;
  const breathe = breather();
  const run = async (): Promise<boolean> => {
    const records: EpisodeRecord[] = [];
    // side by side on the device (greedy-batch.ts), in groups: a cancel waits for one group at most
    for (const group of episodeGroups(samplesOf(testSource, evalSet), groupEpisodes())) {
      await breathe();
      if (d.signal?.aborted) return false;
      records.push(...(await greedyEpisodes(nets, group, { ...gOpts, alpha: learner.alpha })));
    }
    const s = summarize(records, learner.updates, counters.step);
    lastEval = s;
    metric("eval_return", s.return);
    metric("eval_coverage", s.coverage);
    metric("eval_f1", s.f1);
    metric("eval_precision", s.precision);
    metric("eval_recall", s.recall);
    metric("eval_steps", s.steps);
    records.forEach((r, k) => {
      const ev: EngineEvent = { type: "episode", phase: "eval", step: counters.step, update: learner.updates, record: r };
      d.writeEpisode(ev);
      if (k < config.eval_episodes_logged) d.emit(ev);
    });
    counters.lastEvalUpdate = learner.updates;
    const best = s.return > counters.bestEvalReturn;
    if (best) counters.bestEvalReturn = s.return;
    d.emit({ type: "log", level: "info", message: `eval @${learner.updates}: return ${s.return.toFixed(3)} coverage ${s.coverage.toFixed(3)} f1 ${s.f1.toFixed(3)} (${s.oracle_stop ? "oracle stop" : "no oracle stop"})` });
    await d.checkpoint("last", false, s.return);
    if (best) await d.checkpoint("best", true, s.return);
    return true;
  };
  return {
    run,
    get lastEval() {
      return lastEval;
    },
  };
}
