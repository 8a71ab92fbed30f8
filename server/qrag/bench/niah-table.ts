/**
 * The tables of docs/benchmarks/niah.md (the NIAH bench part), generated from bench-results/niah.json:
 *   npx tsx server/qrag/bench/niah-table.ts [bench-results/niah.json]
 * prints the markdown to paste there (results beside the paper's Table 1, and the training per group).
 */
import fs from "node:fs";
import path from "node:path";
import { isMainModule } from "../util/main-module.ts";

interface Score {
  samples: number;
  score: number;
  score95: { low: number; high: number } | null;
}
interface Point extends Score {
  variant: string;
  label: string;
  tokens: number;
  chunks: number;
  filtered: Score;
  generateSeconds: number;
  episodeSeconds: number;
}
interface Run {
  group: string;
  trainOn: string;
  updates: number | null;
  trainSeconds: number;
  heldOutCoverage: { first: { coverage: number } | null; last: { update: number; coverage: number } | null };
  points: Point[];
}
export interface NiahResult {
  complete: boolean;
  started: string;
  machine: { cpus: number; model?: string; node: string; wasmThreads: string };
  lengths: number[];
  /** Config overrides of every trained run (`qrag bench --set`), absent when none. */
  overrides?: string[];
  runs: Run[];
  average: { label: string; variants: number; score: number }[];
  paper: Record<string, Record<string, number>>;
}

const SHORT: Record<string, string> = {
  niah_single_1: "S1", niah_single_2: "S2", niah_single_3: "S3", niah_multikey_1: "MK1", niah_multikey_2: "MK2",
  niah_multikey_3: "MK3", niah_multivalue: "MV", niah_multiquery: "MQ",
};

const num = (x: number) => (!Number.isFinite(x) ? "–" : Math.abs(x - Math.round(x)) < 0.05 ? String(Math.round(x)) : x.toFixed(1));
const cell = (s: Score) => `${num(s.score)} [${s.score95 ? `${num(s.score95.low)}, ${num(s.score95.high)}` : "–"}] (${s.samples})`;
const label = (tokens: number) => (tokens >= 1 << 20 ? `${tokens / (1 << 20)}M` : `${tokens / 1024}K`);

export function niahTables(r: NiahResult): string {
  const labels = r.lengths.map(label);
  const points = r.runs.flatMap((run) => run.points);
  const at = (variant: string, l: string) => points.find((p) => p.variant === variant && p.label === l);
  const head = `| variant | ${labels.map((l) => `${l} ours [95 %] (samples) | ${l} after Q > 0.5 | ${l} paper`).join(" | ")} |`;
  const rule = `|---|${labels.map(() => "---|---|---").join("|")}|`;
  const rows = Object.keys(SHORT)
    .filter((v) => points.some((p) => p.variant === v))
    .map((v) => `| ${SHORT[v]} | ${labels.map((l) => {
      const p = at(v, l);
      return p ? `${cell(p)} | ${num(p.filtered.score)} | ${num(r.paper[l]?.[v] ?? NaN)}` : "– | – | " + num(r.paper[l]?.[v] ?? NaN);
    }).join(" | ")} |`);
  const avg = `| **NIAH Avg** | ${labels.map((l) => {
    const a = r.average.find((x) => x.label === l);
    const f = points.filter((p) => p.label === l);
    const fAvg = f.length ? f.reduce((s, p) => s + p.filtered.score, 0) / f.length : NaN;
    return a ? `${num(a.score)} (${a.variants} variants) | ${num(fAvg)} | ${num(r.paper[l]?.avg ?? NaN)}` : "– | – | " + num(r.paper[l]?.avg ?? NaN);
  }).join(" | ")} |`;
  const size = `| chunks, seconds per sample | ${labels.map((l) => {
    const f = points.filter((p) => p.label === l);
    if (!f.length) return "– | | ";
    const ch = f.map((p) => p.chunks);
    const secs = f.map((p) => p.generateSeconds + p.episodeSeconds);
    return `${Math.round(Math.min(...ch)).toLocaleString("en")}–${Math.round(Math.max(...ch)).toLocaleString("en")} chunks | ${Math.min(...secs).toFixed(2)}–${Math.max(...secs).toFixed(2)} s | `;
  }).join(" | ")} |`;
  const train = [
    "| group | trained on | updates | training wall time | held-out coverage at update 0 → last |",
    "|---|---|---|---|---|",
    ...r.runs.map((run) => `| ${run.group} | ${SHORT[run.trainOn]} | ${run.updates ?? "–"} | ${(run.trainSeconds / 60).toFixed(1)} min | ${run.heldOutCoverage.first?.coverage.toFixed(2) ?? "–"} → ${run.heldOutCoverage.last?.coverage.toFixed(2) ?? "–"} (update ${run.heldOutCoverage.last?.update ?? "–"}) |`),
  ];
  const m = r.machine;
  const setup = r.overrides?.length ? ` Config overrides: ${r.overrides.map((x) => `\`${x}\``).join(", ")}.` : "";
  const foot = `Measured ${r.started.slice(0, 10)}, ${m.cpus} vCPU ${m.model ?? ""}, Node ${m.node}, wasm threads ${m.wasmThreads}${r.complete ? "" : " (run cut short: missing cells were not measured)"}.${setup}`;
  return [head, rule, ...rows, avg, size, "", ...train, "", foot, ""].join("\n");
}

if (isMainModule(import.meta.url)) {
  const file = process.argv[2] ?? path.resolve("bench-results", "niah.json");
  const json = JSON.parse(fs.readFileSync(file, "utf8")) as { niah?: NiahResult } & NiahResult;
  process.stdout.write(niahTables(json.niah ?? json));
}
