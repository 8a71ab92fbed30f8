/**
 * Learning results (bench part "learning", long): the CPU preset trained on BabiLong qa1–qa5
 * within the time budgets, then swept over context lengths with the BM25 and dense
 * baselines. Each run writes a normal run folder under runs/, so it can be inspected or resumed.
 */
import path from "node:path";
import { resolveConfig } from "../config.ts";
import { train } from "../train.ts";
import { sweep } from "../sweep.ts";

interface LearningTask {
  task: "qa1" | "qa2" | "qa3" | "qa4" | "qa5";
  /** The preset trained (qa3 has its own: per-fact reward shaping, a longer schedule). */
  preset: string;
  /** Updates to train; default: the preset's steps_count. */
  steps?: number;
  /** Wall-clock training budget of the target (seconds). */
  budgetSeconds: number;
}

export const LEARNING_TASKS: LearningTask[] = [
  { task: "qa1", preset: "babilong-cpu", steps: 600, budgetSeconds: 15 * 60 },
  { task: "qa2", preset: "babilong-cpu", steps: 3000, budgetSeconds: 15 * 60 },
  { task: "qa3", preset: "babilong-qa3-cpu", budgetSeconds: 30 * 60 },
  { task: "qa4", preset: "babilong-cpu", steps: 600, budgetSeconds: 15 * 60 },
  { task: "qa5", preset: "babilong-cpu", steps: 600, budgetSeconds: 15 * 60 },
];

export async function benchLearning(log: (m: string) => void, tasks = LEARNING_TASKS, lengths = [50, 160, 1200, 4600, 40000, 400000]): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (const t of tasks) {
    const config = resolveConfig({ preset: t.preset, overrides: [`envs.task=${t.task}`, ...(t.steps ? [`steps_count=${t.steps}`] : []), `name=bench-${t.task}`] });
    const runDir = path.resolve("runs", `bench-learning-${t.task}`);
    const t0 = performance.now();
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), t.budgetSeconds * 1000);
    const res = await train(config, { runDir, signal: ac.signal, onEvent: (e) => e.type === "log" && log(`  ${t.task}: ${e.message}`) });
    clearTimeout(timer);
    const trainSeconds = (performance.now() - t0) / 1000;
    const points = await sweep({
      checkpoint: path.join(runDir, "checkpoints", "best"),
      lengths,
      samples: (n) => (n <= 5_000 ? 200 : n <= 50_000 ? 30 : 3),
      onEvent: (e) => e.type === "sweep_point" && log(`  ${t.task} ${e.point.label}: coverage ${e.point.qrag.coverage.toFixed(3)} (bm25 ${e.point.bm25?.coverage.toFixed(3) ?? "–"}, dense ${e.point.dense?.coverage.toFixed(3) ?? "–"})`),
    });
    out.push({ task: t.task, status: res.status, updates: res.updates, trainSeconds, budgetSeconds: t.budgetSeconds, lastEval: res.lastEval, bestEvalReturn: res.bestEvalReturn, sweep: points });
  }
  return out;
}
