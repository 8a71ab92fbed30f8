/**
 * The tables of docs/benchmarks/learning.md (the learning bench part), generated from its JSON files
 * (one or more, e.g. one per process when tasks ran side by side):
 *   npx tsx server/qrag/bench/learning-table.ts [--into docs/benchmarks/learning.md] bench-results/learning-qa1-seeds.json …
 * prints the markdown (with `--into FILE`: writes it between FILE's learning-tables markers instead;
 * `--readme FILE` is the older name of the same option): training per task (across seeds), then per length the Q-RAG coverage (mean over
 * seeds, min–max), the baselines' coverage, the F1 after the paper's Q > 0.5 filter and, where the
 * sweep recorded it, coverage / F1 after that filter plus leave-one-out pruning.
 */
import fs from "node:fs";
import { isMainModule } from "../util/main-module.ts";

interface Interval {
  low: number;
  high: number;
}
interface SweepPoint {
  numChunks: number;
  label: string;
  tokens: number;
  samples: number;
  qrag: { coverage: number };
  qragFiltered?: { coverage: number; f1: number };
  qragPruned?: { coverage: number; f1: number };
  bm25?: { coverage: number };
  dense?: { coverage: number };
  coverage95?: Interval | null;
}
interface SeedRun {
  seed: number;
  updates: number;
  trainSeconds: number;
  lastEval?: { coverage: number } | null;
  first95?: { update: number; seconds: number } | null;
  sweep: SweepPoint[];
}
interface Stat {
  mean: number;
  sd: number;
}
interface TaskResult {
  task: string;
  preset?: string;
  /** `qrag bench --set` overrides of the runs, if any. */
  set?: string[];
  runs: SeedRun[];
  acrossSeeds?: { seeds: number; finalCoverage: Stat; reached95: number; secondsTo95: Stat | null; updatesTo95: Stat | null };
}

/** The per-task results of one bench JSON (single-seed results are turned into a one-run list). */
export function learningResults(json: unknown): TaskResult[] {
  const list = ((json as { learning?: unknown }).learning ?? json) as (TaskResult | (SeedRun & { task: string; preset?: string; set?: string[] }))[];
  if (!Array.isArray(list)) throw new Error("learning-table: no `learning` array in the file");
  return list.map((t) => ("runs" in t ? t : { task: t.task, preset: t.preset, ...(t.set ? { set: t.set } : {}), runs: [t] }));
}

const f2 = (x: number) => x.toFixed(2);
const pm = (s: Stat, digits = 2) => `${s.mean.toFixed(digits)} ± ${s.sd.toFixed(digits)}`;
const range = (xs: number[]) => {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  return xs.length > 1 ? `${f2(m)} (${f2(Math.min(...xs))}–${f2(Math.max(...xs))})` : f2(m);
};
const tokens = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : `${(n / 1e3).toFixed(1)}K`);

/** The preset, then any `--set` overrides: what a row or column was trained with. */
const setup = (t: TaskResult) => [t.preset ?? "–", ...(t.set ?? [])].join(", ");

export function learningTables(tasks: TaskResult[]): string {
  const lines: string[] = [];
  lines.push("| task | preset | seeds | updates | training time (min) | final held-out coverage | seeds reaching ≥ 0.95 | updates / minutes to ≥ 0.95 |");
  lines.push("|---|---|---|---|---|---|---|---|");
  for (const t of tasks) {
    const finals = t.runs.map((r) => r.lastEval?.coverage ?? 0);
    const mins = t.runs.map((r) => r.trainSeconds / 60);
    const hits = t.runs.filter((r) => r.first95).map((r) => r.first95!);
    const a = t.acrossSeeds;
    const final = a ? pm(a.finalCoverage) : f2(finals[0]);
    const to95 = hits.length
      ? a?.updatesTo95 && a.secondsTo95
        ? `${pm(a.updatesTo95, 0)} / ${pm({ mean: a.secondsTo95.mean / 60, sd: a.secondsTo95.sd / 60 }, 1)}`
        : `${hits[0].update} / ${(hits[0].seconds / 60).toFixed(1)}`
      : "–";
    const updates = [...new Set(t.runs.map((r) => r.updates))].join(", ");
    lines.push(`| ${t.task} | ${setup(t)} | ${t.runs.length} | ${updates} | ${range(mins)} | ${final} | ${hits.length} of ${t.runs.length} | ${to95} |`);
  }
  lines.push("");
  const lengths = [...new Set(tasks.flatMap((t) => t.runs.flatMap((r) => r.sweep.map((p) => p.numChunks))))].sort((a, b) => a - b);
  // a task trained with two presets (e.g. qa4 with and without word bigrams) gets a column per preset
  const head = (t: TaskResult) => (tasks.filter((u) => u.task === t.task).length > 1 ? `${t.task} (${setup(t)})` : t.task);
  const sweepTable = (title: string, cell: (ps: SweepPoint[]) => string) => {
    lines.push(`| ${title} | ${tasks.map(head).join(" | ")} |`);
    lines.push(`|---|${tasks.map(() => "---|").join("")}`);
    for (const n of lengths) {
      const points = tasks.map((t) => t.runs.map((r) => r.sweep.find((p) => p.numChunks === n)).filter((p): p is SweepPoint => !!p));
      const any = points.flat()[0];
      if (any) lines.push(`| ${n.toLocaleString("en-US")} (${tokens(any.tokens)}), ${any.samples} | ${points.map((ps) => (ps.length ? cell(ps) : "–")).join(" | ")} |`);
    }
    lines.push("");
  };
  const mean = (xs: number[]) => f2(xs.reduce((a, b) => a + b, 0) / xs.length);
  sweepTable("Q-RAG coverage: chunks (tokens), samples", (ps) => range(ps.map((p) => p.qrag.coverage)));
  sweepTable("BM25 / dense coverage", (ps) => `${mean(ps.map((p) => p.bm25?.coverage ?? NaN))} / ${mean(ps.map((p) => p.dense?.coverage ?? NaN))}`);
  sweepTable("Q-RAG F1 after Q > 0.5", (ps) => (ps.every((p) => p.qragFiltered) ? range(ps.map((p) => p.qragFiltered!.f1)) : "–"));
  // only files with pruned scores get this table (older bench files predate it)
  if (tasks.some((t) => t.runs.some((r) => r.sweep.some((p) => p.qragPruned)))) {
    sweepTable("Q-RAG after Q > 0.5 + prune: coverage / F1", (ps) => (ps.every((p) => p.qragPruned) ? `${range(ps.map((p) => p.qragPruned!.coverage))} / ${range(ps.map((p) => p.qragPruned!.f1))}` : "–"));
  }
  return lines.join("\n").replaceAll("NaN", "–");
}

/** Replaces the text between `<!-- learning-tables:start -->` and `<!-- learning-tables:end -->`. */
export function replaceBetweenMarkers(doc: string, tables: string, name = "learning-tables"): string {
  const start = `<!-- ${name}:start -->`, end = `<!-- ${name}:end -->`;
  const i = doc.indexOf(start), j = doc.indexOf(end);
  if (i < 0 || j < i) throw new Error(`no "${start}" … "${end}" markers`);
  return `${doc.slice(0, i + start.length)}\n${tables.trimEnd()}\n${doc.slice(j)}`;
}

if (isMainModule(import.meta.url)) {
  const args = process.argv.slice(2);
  const w = args.findIndex((a) => a === "--into" || a === "--readme");
  const into = w >= 0 ? args.splice(w, 2)[1] : undefined;
  if (!args.length || (w >= 0 && !into)) {
    process.stderr.write("usage: learning-table.ts [--into docs/benchmarks/learning.md] FILE.json [FILE.json …]\n");
    process.exit(2);
  }
  const tasks = args.flatMap((f) => learningResults(JSON.parse(fs.readFileSync(f, "utf8"))));
  tasks.sort((a, b) => a.task.localeCompare(b.task));
  const md = learningTables(tasks);
  if (into) fs.writeFileSync(into, replaceBetweenMarkers(fs.readFileSync(into, "utf8"), md));
  else process.stdout.write(md);
}
