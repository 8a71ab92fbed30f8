/**
 * Precision of the stopping rules (bench part "precision", issue 11): for each task's checkpoint,
 * run greedy episodes to max_steps (no oracle) once per sample and score every stopping rule of
 * stop-rules.ts on that same trajectory. Rule parameters marked "calibrated" are fitted on a
 * validation split from the train generator under another seed (sources.ts `validationSource`,
 * at the training haystack size), maximising fact-F1 subject to coverage ≥ 0.95 there; the test
 * split is only ever scored. Rows "length-calibrated-*" are fitted the same way on validation
 * samples at the test haystack's own size (known at retrieval time). Writes bench-results/precision-<task>.json after every length.
 */
import fs from "node:fs";
import path from "node:path";
import { loadAgent } from "../evaluation/evaluate.ts";
import { evalOptions } from "../training/train.ts";
import { buildSource, validationSource } from "../data/sources.ts";
import { disposeCandidates, embedSampleChunks, greedyEpisode } from "../agent/greedy.ts";
import { measureTokensPerChunk, estimateContextTokens } from "../data/context-length.ts";
import { noisePoolFor } from "../data/noise/pool.ts";
import { corpusSpecFrom } from "../data/noise/corpus.ts";
import { InputError } from "../errors.ts";
import { calibrate, oraclePrefixScore, PAPER_PRUNE_RULE, PAPER_RULE, ruleLabel, scoreRule, type Calibration, type StopFamily, type StopRule } from "../evaluation/stop-rules.ts";
import { wilsonInterval } from "../../../lib/contracts/intervals.ts";
import type { EpisodeRecord } from "../events.ts";
import type { QNetworks } from "../agent/networks.ts";
import type { GreedyOptions } from "../agent/greedy.ts";
import type { SampleSource } from "../types.ts";

export const PRECISION_FAMILIES: StopFamily[] = ["q-threshold", "margin", "drop", "soft-v", "q-and-drop", "elbow", "first-k", "prune"];

type Trajectory = Pick<EpisodeRecord, "id" | "steps" | "sf_idx" | "pred_idx" | "loo">;

export interface PrecisionOptions {
  /** Checkpoint folder per task; default runs/bench-learning-<task>/checkpoints/best. */
  checkpoints?: Record<string, string>;
  /** Output file name per task; default precision-<task>.json (the table in docs/benchmarks/precision.md). */
  fileName?: (task: string) => string;
  lengths?: number[];
  samples?: (numChunks: number) => number;
  validationSamples?: number;
  minCoverage?: number;
  outDir?: string;
  dataRoot?: string;
}

export function defaultPrecisionCheckpoint(task: string): string {
  return path.resolve("runs", `bench-learning-${task}`, "checkpoints", "best");
}

/** Episodes to max_steps on the first `n` samples of a source; only what the rules read is kept. */
export async function trajectories(nets: QNetworks, source: SampleSource, n: number, gOpts: GreedyOptions, maxActionLength: number): Promise<Trajectory[]> {
  const out: Trajectory[] = [];
  for (let i = 0; i < n; i++) {
    const sample = source.sample(i);
    const emb = await embedSampleChunks(nets, sample, maxActionLength);
    const r = await greedyEpisode(nets, sample, gOpts, emb);
    disposeCandidates(emb);
    out.push({ id: r.id, sf_idx: r.sf_idx, pred_idx: r.pred_idx, steps: r.steps.map((s) => ({ ...s, text: "" })), ...(r.loo ? { loo: r.loo } : {}) });
  }
  return out;
}

/** Mean ± 1.96 standard errors, clipped to [0, 1] (F1 is a mean of per-episode scores, not a proportion). */
function meanInterval(xs: readonly number[]): { low: number; high: number } | null {
  const n = xs.length;
  if (n < 2) return null;
  const m = xs.reduce((a, b) => a + b, 0) / n;
  const sd = Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (n - 1));
  const h = (1.96 * sd) / Math.sqrt(n);
  return { low: Math.max(0, m - h), high: Math.min(1, m + h) };
}

export interface RuleRow {
  name: string;
  rule: StopRule;
  label: string;
  calibrated: boolean;
  coverage: number;
  coverageCI: { low: number; high: number } | null;
  f1: number;
  f1CI: { low: number; high: number } | null;
  precision: number;
  recall: number;
  avgKept: number;
}

/** Scores every named rule on the same trajectories. */
export function scoreRules(trajs: readonly Trajectory[], rules: readonly { name: string; rule: StopRule; calibrated: boolean }[]): RuleRow[] {
  return rules.map(({ name, rule, calibrated }) => {
    const s = scoreRule(trajs, rule);
    const perEpisode = trajs.map((t) => scoreRule([t], rule));
    const covered = perEpisode.reduce((a, p) => a + p.coverage, 0);
    return {
      name, rule, label: ruleLabel(rule), calibrated,
      coverage: s.coverage, coverageCI: wilsonInterval(covered, trajs.length),
      f1: s.f1, f1CI: meanInterval(perEpisode.map((p) => p.f1)),
      precision: s.precision, recall: s.recall, avgKept: s.avgKept,
    };
  });
}

/**
 * The file name for a checkpoint other than the default: precision-<task>-<run folder>.json, the
 * run folder being the one holding `checkpoints/` (else the checkpoint folder itself).
 */
export function precisionFileFor(task: string, checkpoint: string): string {
  const parts = path.resolve(checkpoint).split(path.sep);
  const i = parts.lastIndexOf("checkpoints");
  const name = (i > 0 ? parts[i - 1] : parts[parts.length - 1]).replace(/[^A-Za-z0-9._-]+/g, "_");
  return `precision-${task}-${name}.json`;
}

export async function benchPrecision(log: (m: string) => void, tasks: string[], opts: PrecisionOptions = {}): Promise<Record<string, unknown>[]> {
  const lengths = opts.lengths ?? [50, 1200, 40000];
  const samplesFor = opts.samples ?? ((n: number) => (n <= 50_000 ? 100 : 30));
  const valN = opts.validationSamples ?? 200;
  const minCoverage = opts.minCoverage ?? 0.95;
  const outDir = opts.outDir ?? path.resolve("bench-results");
  fs.mkdirSync(outDir, { recursive: true });
  const results: Record<string, unknown>[] = [];
  for (const task of tasks) {
    const checkpoint = opts.checkpoints?.[task] ?? defaultPrecisionCheckpoint(task);
    if (!fs.existsSync(checkpoint)) throw new InputError(`precision: no checkpoint for ${task} at ${checkpoint} (train it first: qrag bench --parts learning --tasks ${task})`);
    const { nets, config, alpha } = await loadAgent(checkpoint, undefined, opts.dataRoot);
    try {
      if (config.envs.name !== "babilong") throw new InputError(`precision: needs a BabiLong checkpoint (${checkpoint} was trained on ${config.envs.name})`);
      const gOpts = evalOptions(config, { neverTerminate: true, alpha, leaveOneOut: true });
      const t0 = performance.now();
      const val = await trajectories(nets, validationSource(config, undefined, opts.dataRoot), valN, gOpts, config.max_action_length);
      const calibrations: Calibration[] = PRECISION_FAMILIES.map((f) => calibrate(val, f, minCoverage));
      for (const c of calibrations) log(`  ${task} calibrated ${ruleLabel(c.rule)} on ${valN} validation samples: coverage ${c.validation.coverage.toFixed(3)} F1 ${c.validation.f1.toFixed(3)}${c.feasible ? "" : " (coverage floor not reached)"}`);
      const rules = [
        { name: "paper", rule: PAPER_RULE, calibrated: false },
        // the paper's threshold, then leave-one-out pruning at the same 0.5 (no fitting)
        { name: "paper+prune", rule: PAPER_PRUNE_RULE, calibrated: false },
        { name: "keep-all", rule: { kind: "keep-all" } as StopRule, calibrated: false },
        ...calibrations.map((c) => ({ name: `calibrated-${c.family}`, rule: c.rule, calibrated: true })),
      ];
      const tpc = measureTokensPerChunk({ pool: noisePoolFor(corpusSpecFrom(config.envs.noise)), seed: config.seed });
      const result = {
        task, checkpoint: path.relative(process.cwd(), checkpoint), minCoverage,
        validation: { split: "train generator, seed + 2000003", samples: valN, numChunks: config.envs.num_sentences, seconds: (performance.now() - t0) / 1000, rules: scoreRules(val, rules) },
        calibrations,
        lengths: [] as Record<string, unknown>[],
      };
      for (const numChunks of lengths) {
        const t1 = performance.now();
        const m = samplesFor(numChunks);
        // the haystack size is known when retrieving, so a rule may also be calibrated at it:
        // validation (train generator, other seed) at this length, never the test samples
        const valHere = await trajectories(nets, validationSource(config, numChunks, opts.dataRoot), Math.min(valN, m), gOpts, config.max_action_length);
        const calHere = PRECISION_FAMILIES.map((f) => calibrate(valHere, f, minCoverage));
        const test = await trajectories(nets, buildSource(config, "test", numChunks, opts.dataRoot), m, gOpts, config.max_action_length);
        const rows = scoreRules(test, [...rules, ...calHere.map((c) => ({ name: `length-calibrated-${c.family}`, rule: c.rule, calibrated: true }))]);
        const seconds = (performance.now() - t1) / 1000;
        // the ground-truth ceiling of any prefix rule on these trajectories (labelled, not a rule)
        const oraclePrefix = { ...oraclePrefixScore(test), usesGroundTruth: true };
        result.lengths.push({ numChunks, tokens: Math.round(estimateContextTokens(numChunks, tpc.noise.mean)), samples: test.length, seconds, rules: rows, oraclePrefix, lengthCalibration: { samples: valHere.length, calibrations: calHere } });
        log(`  ${task} ${numChunks} chunks (${test.length} samples, ${seconds.toFixed(0)} s): ${rows.map((r) => `${r.name} cov ${r.coverage.toFixed(3)} F1 ${r.f1.toFixed(3)}`).join("; ")}; [oracle-prefix bound cov ${oraclePrefix.coverage.toFixed(3)} F1 ${oraclePrefix.f1.toFixed(3)}]`);
        fs.writeFileSync(path.join(outDir, opts.fileName?.(task) ?? `precision-${task}.json`), JSON.stringify(result, null, 2));
      }
      results.push(result);
    } finally {
      nets.dispose();
    }
  }
  return results;
}
