/**
 * `evaluate()`: greedy episodes of a trained checkpoint on the test split, with retrieval metrics
 * (precision / recall / F1 / coverage) for all picks and after the Q-threshold stopping filter.
 * Whether episodes stopped at the ground-truth oracle is part of every record and summary.
 */
import fs from "node:fs";
import type { EngineEvent, EpisodeRecord, EventSink } from "../events.ts";
import { pickBackend } from "../backend/pick.ts";
import { loadCheckpoint } from "../training/checkpoint.ts";
import { QNetworks } from "../agent/networks.ts";
import { episodeGroups, greedyEpisodes, groupEpisodes } from "../agent/greedy-batch.ts";
import { buildSource } from "../data/sources.ts";
import { aggregate } from "./metrics.ts";
import { evalOptions, summarize, type EvalSummary, type TrainCheckpoint } from "../training/train.ts";
import { samplesOf } from "../training/eval.ts";
import { Rng } from "../util/rng.ts";
import type { RunConfig } from "../config/config.ts";
import { breather } from "../util/breathe.ts";
import { applyStop, ruleLabel, type StopRule } from "./stop-rules.ts";
import { InputError } from "../errors.ts";
import { applyRunStorage } from "../model/webgpu/half-storage.ts";

interface EvaluateOptions {
  /** The only folder the config's data files are read from (default QRAG_DATA_ROOT). */
  dataRoot?: string;
  /** Checkpoint folder or run folder. */
  checkpoint: string;
  numSamples?: number;
  /** Haystack size override (BabiLong). */
  numSentences?: number;
  /** true = run every episode to max_steps (no oracle stop); default: the test env's setting. */
  neverTerminate?: boolean;
  threshold?: number;
  /** Stopping rule for `summary.filtered` (stop-rules.ts); default the Q-threshold above. */
  stop?: StopRule;
  onEvent?: EventSink;
  signal?: AbortSignal;
  /** Write one JSON line per episode here. */
  episodesFile?: string;
}

interface EvaluateResult {
  summary: EvalSummary & { filtered: { precision: number; recall: number; f1: number; coverage: number; avgKept: number; threshold: number; rule?: string } };
  records: EpisodeRecord[];
  backend: string;
}

/** Loads the trained state/action encoders of a checkpoint (eval mode is chosen per call). */
export async function loadAgent(checkpoint: string, backendPref?: string, dataRoot?: string): Promise<{ nets: QNetworks; config: RunConfig; backend: string; device: string; dir: string; alpha: number }> {
  const { dir, state } = loadCheckpoint<TrainCheckpoint>(checkpoint);
  const pref = backendPref ?? (state.config.backend === "auto" ? undefined : state.config.backend);
  const picked = await pickBackend(pref);
  // the run's activation storage (a checkpoint from before gpu_storage has none: f32)
  const { device } = applyRunStorage(state.config.gpu_storage === "f16" ? "f16" : "f32", state.config.algo.encoder.type, picked);
  const { backend } = picked;
  const nets = new QNetworks(state.config.algo.encoder, new Rng(0), { dataRoot }); // an hf encoder re-reads its folder (tokenizer, architecture)
  nets.importWeights(state.weights);
  // the learner's α when the checkpoint was saved (it follows the LR schedule)
  return { nets, config: state.config, backend, device, dir, alpha: state.learner.alpha };
}

export async function evaluate(opts: EvaluateOptions): Promise<EvaluateResult> {
  // leave-one-out Q is recorded only for episodes run to max_steps; without it prune would
  // silently score the plain threshold prefix
  if (opts.stop?.kind === "prune" && opts.neverTerminate !== true) throw new InputError("--stop prune needs --never-terminate (leave-one-out Q is recorded only for episodes run to max_steps)");
  const emit: EventSink = opts.onEvent ?? (() => {});
  const { nets, config, backend, alpha } = await loadAgent(opts.checkpoint, undefined, opts.dataRoot);
  try {
    const source = buildSource(config, "test", opts.numSentences, opts.dataRoot);
    const n = Number.isFinite(source.size) ? Math.min(opts.numSamples ?? config.eval_episodes, source.size) : opts.numSamples ?? config.eval_episodes;
    const gOpts = evalOptions(config, { neverTerminate: opts.neverTerminate, threshold: opts.threshold, alpha, leaveOneOut: opts.neverTerminate === true });
    const out = opts.episodesFile ? fs.openSync(opts.episodesFile, "w") : undefined;
    const records: EpisodeRecord[] = [];
    const t0 = performance.now();
    const breathe = breather();
    // side by side on the device (greedy-batch.ts; one at a time on the host)
    const indices = Array.from({ length: n }, (_, i) => i);
    for (const group of episodeGroups(samplesOf(source, indices), groupEpisodes())) {
      await breathe();
      if (opts.signal?.aborted) break;
      for (const r of await greedyEpisodes(nets, group, gOpts)) {
        records.push(r);
        if (out !== undefined) fs.writeSync(out, JSON.stringify(r) + "\n");
        const ev: EngineEvent = { type: "episode", phase: "eval", step: 0, update: 0, record: r };
        emit(ev);
        const done = records.length;
        const secs = (performance.now() - t0) / 1000;
        emit({ type: "progress", phase: "eval", done, total: n, etaSeconds: (secs / done) * (n - done) });
      }
    }
    if (out !== undefined) fs.closeSync(out);
    // a stopping rule re-scores the same picks; the records keep the Q-threshold filter
    const stop = opts.stop;
    const kept = stop ? records.map((r) => applyStop(r, stop)) : records.map((r) => r.filtered);
    const f = aggregate(kept);
    const avgKept = kept.reduce((a, r) => a + r.kept, 0) / Math.max(1, records.length);
    const threshold = gOpts.threshold;
    return { summary: { ...summarize(records, 0, 0), filtered: { precision: f.precision, recall: f.recall, f1: f.f1, coverage: f.coverage, avgKept, threshold, ...(stop ? { rule: ruleLabel(stop) } : {}) } }, records, backend };
  } finally {
    nets.dispose();
  }
}
