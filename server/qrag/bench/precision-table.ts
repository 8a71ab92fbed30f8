/**
 * The stopping-rule tables of docs/benchmarks/precision.md, generated from the precision bench part's JSON files:
 *   npx tsx server/qrag/bench/precision-table.ts bench-results/precision-qa1.json … [FILE=label …]
 * One column per task and haystack length (a `=label` after a file names its columns instead of the
 * task, e.g. a second checkpoint of the same task); one row per rule, "coverage / F1", bold where
 * both goals hold (coverage ≥ 0.95, F1 ≥ 0.90); the last row is the ground-truth prefix ceiling.
 * `--across HEADING FILE…` (one task, one file per seed) prints mean ± std over the files instead.
 */
import fs from "node:fs";
import { isMainModule } from "../util/main-module.ts";
import { mean, sampleSd } from "../util/stats.ts";

interface RuleScore {
  name: string;
  coverage: number;
  f1: number;
}
interface LengthResult {
  numChunks: number;
  tokens: number;
  samples: number;
  rules: RuleScore[];
  oraclePrefix: { coverage: number; f1: number };
}
export interface PrecisionResult {
  task: string;
  lengths: LengthResult[];
}

/** Row order and labels; rules absent from every file are left out. */
const ROWS: [string, string][] = [
  ["paper", "Q > 0.5, the paper's rule (baseline)"],
  ["paper+prune", "Q > 0.5, then leave-one-out prune at 0.5"],
  ["keep-all", "keep all 6 picks"],
  ["calibrated-q-threshold", "Q-threshold, calibrated"],
  ["calibrated-margin", "per-step margin, calibrated"],
  ["calibrated-drop", "relative drop, calibrated"],
  ["calibrated-soft-v", "soft-V threshold, calibrated"],
  ["calibrated-q-and-drop", "Q-threshold + drop, calibrated"],
  ["calibrated-elbow", "elbow (largest Q drop, no parameter)"],
  ["calibrated-first-k", "first k, calibrated"],
  ["calibrated-prune", "Q-threshold + prune, calibrated"],
  ["length-calibrated-q-threshold", "Q-threshold, calibrated per length"],
  ["length-calibrated-drop", "relative drop, calibrated per length"],
  ["length-calibrated-soft-v", "soft-V threshold, calibrated per length"],
  ["length-calibrated-q-and-drop", "Q-threshold + drop, calibrated per length"],
  ["length-calibrated-first-k", "first k, calibrated per length"],
  ["length-calibrated-prune", "Q-threshold + prune, calibrated per length"],
];

export const GOAL = { coverage: 0.95, f1: 0.9 };

/** ".95" / "1.00": two decimals, no leading zero, as the tables in docs/benchmarks/precision.md. */
const d2 = (x: number) => x.toFixed(2).replace(/^0\./, ".");
const tokens = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : `${(n / 1e3).toFixed(n >= 1e4 ? 0 : 1)}K`);

function cell(s: { coverage: number; f1: number } | undefined): string {
  if (!s) return "–";
  const text = `${d2(s.coverage)} / ${d2(s.f1)}`;
  return s.coverage >= GOAL.coverage && s.f1 >= GOAL.f1 ? `**${text}**` : text;
}

export function precisionTable(results: { label: string; result: PrecisionResult }[]): string {
  const columns = results.flatMap(({ label, result }) => result.lengths.map((l) => ({ head: `${label} ${tokens(l.tokens)}`, l })));
  const lines = [`| rule (coverage / F1) | ${columns.map((c) => c.head).join(" | ")} |`, `|---|${columns.map(() => "---|").join("")}`];
  for (const [name, label] of ROWS) {
    const cells = columns.map((c) => c.l.rules.find((r) => r.name === name));
    if (cells.every((x) => !x)) continue;
    lines.push(`| ${label} | ${cells.map(cell).join(" | ")} |`);
  }
  lines.push(`| *best prefix with ground truth (a ceiling, not a rule)* | ${columns.map((c) => cell(c.l.oraclePrefix).replaceAll("**", "")).join(" | ")} |`);
  return lines.join("\n");
}

const ms = (xs: number[]) => `${mean(xs).toFixed(2)} ± ${sampleSd(xs).toFixed(2)}`;
const span = (xs: number[]) => {
  const [lo, hi] = [tokens(Math.min(...xs)), tokens(Math.max(...xs))];
  if (lo === hi) return lo;
  const unit = (t: string) => t.at(-1);
  return unit(lo) === unit(hi) ? `${lo.slice(0, -1)}–${hi}` : `${lo}–${hi}`;
};

/**
 * One task's rules over several checkpoints (seeds) of the same protocol: per rule and length
 * position, coverage and F1 as mean ± sample std over the files, and how many files meet both goals
 * there. Files must hold the same haystack sizes in the same order (the k-th length of every file
 * is one column), so that a mean never mixes lengths.
 */
export function precisionAcrossSeeds(results: { label: string; result: PrecisionResult }[], heading: string): string {
  if (!results.length) throw new Error("precisionAcrossSeeds: no files");
  const sizes = (r: PrecisionResult) => r.lengths.map((l) => l.numChunks).join(",");
  const [first] = results;
  for (const r of results) {
    if (r.result.task !== first.result.task) throw new Error(`${r.label}: task ${r.result.task}, not ${first.result.task} as ${first.label}`);
    if (sizes(r.result) !== sizes(first.result)) throw new Error(`${r.label}: haystack sizes ${sizes(r.result)}, not ${sizes(first.result)} as ${first.label}`);
  }
  const n = results.length;
  const positions = first.result.lengths.map((_, i) => results.map((r) => r.result.lengths[i]));
  const lines = [
    `| ${heading} | ${positions.map((ls) => `${span(ls.map((l) => l.tokens))} tokens`).join(" | ")} | seeds with coverage ≥ ${GOAL.coverage.toFixed(2)} and F1 ≥ ${GOAL.f1.toFixed(2)} (of ${n}, per length) |`,
    `|---|${positions.map(() => "---|").join("")}---|`,
  ];
  const row = (label: string, pick: (l: LengthResult) => { coverage: number; f1: number } | undefined, count: boolean) => {
    const per = positions.map((ls) => ls.map(pick));
    // a rule some file lacks (an older file without prune) is left out rather than averaged over fewer seeds
    if (per.some((ss) => ss.some((x) => !x))) return;
    const cells = per.map((ss) => `${ms(ss.map((x) => x!.coverage))} / ${ms(ss.map((x) => x!.f1))}`);
    const met = per.map((ss) => ss.filter((x) => x!.coverage >= GOAL.coverage && x!.f1 >= GOAL.f1).length).join(" / ");
    lines.push(`| ${label} | ${cells.join(" | ")} | ${count ? met : "–"} |`);
  };
  for (const [name, label] of ROWS) row(label, (l) => l.rules.find((r) => r.name === name), true);
  row("*best prefix with ground truth (a ceiling)*", (l) => l.oraclePrefix, false);
  return lines.join("\n");
}

/** `FILE` or `FILE=label` → the file's result with its column label (default: its task). */
export function readPrecisionArg(arg: string): { label: string; result: PrecisionResult } {
  const eq = arg.lastIndexOf("=");
  const file = eq > 0 ? arg.slice(0, eq) : arg;
  const result = JSON.parse(fs.readFileSync(file, "utf8")) as PrecisionResult;
  if (typeof result.task !== "string" || !Array.isArray(result.lengths)) throw new Error(`${file}: not a precision bench result (no task / lengths)`);
  return { label: eq > 0 ? arg.slice(eq + 1) : result.task, result };
}

if (isMainModule(import.meta.url)) {
  const args = process.argv.slice(2);
  const across = args[0] === "--across" ? args[1] : undefined;
  const files = across === undefined ? args : args.slice(2);
  if (!files.length || (args[0] === "--across" && !across)) {
    process.stderr.write("usage: precision-table.ts FILE.json[=label] …\n       precision-table.ts --across HEADING FILE.json … (one task, several seeds: mean ± std)\n");
    process.exit(2);
  }
  const results = files.map(readPrecisionArg);
  process.stdout.write(`${across === undefined ? precisionTable(results) : precisionAcrossSeeds(results, across)}\n`);
}
