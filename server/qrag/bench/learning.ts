/**
 * Learning results (bench part "learning", long): the CPU preset trained on BabiLong qa1–qa5
 * within the time budgets, then swept over context lengths with the BM25 and dense
 * baselines. Each run writes a normal run folder under runs/, so it can be inspected or resumed.
 *
 * With several seeds each task is trained once per seed; the result then carries, per task, the
 * mean ± sample std of the final held-out coverage and of the time to reach coverage ≥ 0.95
 * (seeds that never reach it are counted, not averaged in). Every sweep point carries its 95 %
 * Wilson interval for coverage.
 */
import fs from "node:fs";
import path from "node:path";
import { wilsonInterval, type Interval } from "../../../lib/contracts/intervals.ts";
import { resolveConfig } from "../config/config.ts";
import { train } from "../training/train.ts";
import { sweep } from "../evaluation/sweep.ts";
import { mean, sampleSd } from "../util/stats.ts";

export interface LearningTask {
  task: "qa1" | "qa2" | "qa3" | "qa4" | "qa5";
  /** The preset trained (qa3 has its own: a training curriculum, a longer schedule; qa4 adds word bigrams). */
  preset: string;
  /** Updates to train; default: the preset's steps_count. */
  steps?: number;
  /** Wall-clock training budget of the target (seconds). */
  budgetSeconds: number;
  /** More config overrides (tests shrink the preset with these). */
  overrides?: string[];
  /** Overrides from `qrag bench --set`: applied after `overrides` and recorded in the results. */
  set?: string[];
}

export const LEARNING_TASKS: LearningTask[] = [
  { task: "qa1", preset: "babilong-cpu", steps: 600, budgetSeconds: 15 * 60 },
  { task: "qa2", preset: "babilong-cpu", steps: 3000, budgetSeconds: 15 * 60 },
  { task: "qa3", preset: "babilong-qa3-cpu", budgetSeconds: 15 * 60 },
  { task: "qa4", preset: "babilong-qa4-cpu", budgetSeconds: 15 * 60 },
  { task: "qa5", preset: "babilong-cpu", steps: 600, budgetSeconds: 15 * 60 },
];

export const LEARNING_LENGTHS = [50, 160, 1200, 4600, 40000, 400000];

/**
 * Sweep samples per length: ≥ 100 up to 1M tokens (40,000 chunks ≈ 1.34M), ≥ 30 at 10M
 * (400,000 chunks ≈ 13.4M), so every interval rests on enough episodes.
 */
export const learningSamples = (numChunks: number): number => (numChunks <= 5_000 ? 200 : numChunks <= 50_000 ? 100 : 30);

export interface LearningOptions {
  tasks?: LearningTask[];
  seeds?: number[];
  lengths?: number[];
  samples?: (numChunks: number) => number;
  /** Where run folders go (default ./runs). */
  runsDir?: string;
  /** Called with the results so far after every trained and swept seed (a long bench that stops keeps them). */
  onProgress?: (partial: Record<string, unknown>[]) => void;
}

/** One eval point of a run's curve. */
interface EvalPoint {
  update: number;
  coverage: number;
  wall: number;
}

/** The eval_coverage curve a run wrote to its metrics.jsonl. */
export function evalCurve(runDir: string): EvalPoint[] {
  const file = path.join(runDir, "metrics.jsonl");
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { key: string; update: number; value: number; wall: number })
    .filter((e) => e.key === "eval_coverage")
    .map((e) => ({ update: e.update, coverage: e.value, wall: e.wall }));
}

export interface SeedSummary {
  seed: number;
  finalCoverage: number;
  /** First eval with coverage ≥ 0.95: its update and training seconds; null when never reached. */
  first95: { update: number; seconds: number } | null;
}

/** Mean ± std over seeds of final coverage and time to 0.95. */
export function acrossSeeds(runs: SeedSummary[]) {
  const reached = runs.filter((r) => r.first95 !== null).map((r) => r.first95!);
  const finals = runs.map((r) => r.finalCoverage);
  return {
    seeds: runs.length,
    finalCoverage: { mean: mean(finals), sd: sampleSd(finals) },
    reached95: reached.length,
    secondsTo95: reached.length ? { mean: mean(reached.map((r) => r.seconds)), sd: sampleSd(reached.map((r) => r.seconds)) } : null,
    updatesTo95: reached.length ? { mean: mean(reached.map((r) => r.update)), sd: sampleSd(reached.map((r) => r.update)) } : null,
  };
}

export function seedSummary(seed: number, curve: EvalPoint[]): SeedSummary {
  const hit = curve.find((p) => p.coverage >= 0.95);
  return { seed, finalCoverage: curve.at(-1)?.coverage ?? 0, first95: hit ? { update: hit.update, seconds: hit.wall } : null };
}

export async function benchLearning(log: (m: string) => void, o: LearningOptions = {}): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  const seeds = o.seeds?.length ? o.seeds : [undefined];
  for (const t of o.tasks ?? LEARNING_TASKS) {
    const perSeed: Record<string, unknown>[] = [];
    const summaries: SeedSummary[] = [];
    for (const seed of seeds) {
      const tag = seed === undefined ? t.task : `${t.task}-seed${seed}`;
      const overrides = [`envs.task=${t.task}`, ...(t.steps ? [`steps_count=${t.steps}`] : []), `name=bench-${tag}`, ...(seed !== undefined ? [`seed=${seed}`] : []), ...(t.overrides ?? []), ...(t.set ?? [])];
      const config = resolveConfig({ preset: t.preset, overrides });
      const runDir = path.resolve(o.runsDir ?? "runs", `bench-learning-${tag}`);
      const t0 = performance.now();
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(), t.budgetSeconds * 1000);
      const res = await train(config, { runDir, signal: ac.signal, onEvent: (e) => e.type === "log" && log(`  ${tag}: ${e.message}`) });
      clearTimeout(timer);
      const trainSeconds = (performance.now() - t0) / 1000;
      const points = await sweep({
        checkpoint: path.join(runDir, "checkpoints", "best"),
        lengths: o.lengths ?? LEARNING_LENGTHS,
        samples: o.samples ?? learningSamples,
        onEvent: (e) => e.type === "sweep_point" && log(`  ${tag} ${e.point.label}: coverage ${e.point.qrag.coverage.toFixed(3)} (bm25 ${e.point.bm25?.coverage.toFixed(3) ?? "–"}, dense ${e.point.dense?.coverage.toFixed(3) ?? "–"})`),
      });
      const withIntervals = points.map((p) => ({ ...p, coverage95: interval(p.qrag.coverage, p.samples) }));
      const s = seedSummary(config.seed, evalCurve(runDir));
      summaries.push(s);
      perSeed.push({ seed: config.seed, status: res.status, updates: res.updates, trainSeconds, budgetSeconds: t.budgetSeconds, lastEval: res.lastEval, bestEvalReturn: res.bestEvalReturn, first95: s.first95, sweep: withIntervals });
      o.onProgress?.([...out, taskResult(t, perSeed, summaries, seeds.length)]);
    }
    out.push(taskResult(t, perSeed, summaries, seeds.length));
  }
  return out;
}

/** One task's entry: the list of seeds with their across-seed summary, or the single run itself. */
function taskResult(t: LearningTask, perSeed: Record<string, unknown>[], summaries: SeedSummary[], seeds: number): Record<string, unknown> {
  const head = { task: t.task, preset: t.preset, ...(t.set?.length ? { set: t.set } : {}) };
  return seeds > 1 ? { ...head, runs: perSeed, acrossSeeds: acrossSeeds(summaries) } : { ...head, ...perSeed[0] };
}

/** Coverage is a proportion of episodes: its Wilson interval (null for an empty point). */
function interval(coverage: number, n: number): Interval | null {
  return wilsonInterval(Math.round(coverage * n), n);
}
