/**
 * The Q-RAG paper's published BabiLong figures (docs/paper-figures.md names the source of every
 * number): answer accuracy of a reader on what each method kept, per context length, drawn as
 * labelled dashed reference lines on the sweep chart. The BabiLong numbers are read off the
 * paper's plots (±≈0.01): the paper gives no table for them.
 *
 * A paper length ("1K" … "10M") is a BabiLong config — a number of sentences (50 … 400,000) —
 * the same configs our sweeps run at (server/qrag/data/context-length.ts SWEEP_LENGTHS), so a
 * reference value is placed at the x of our point with that label, whatever our text measured.
 */
import type { SweepPoint } from "../contracts/index.ts";

export const PAPER_LENGTHS = [
  { label: "1K", chunks: 50, nominalTokens: 1_000 },
  { label: "4K", chunks: 160, nominalTokens: 4_000 },
  { label: "32K", chunks: 1200, nominalTokens: 32_000 },
  { label: "128K", chunks: 4600, nominalTokens: 128_000 },
  { label: "1M", chunks: 40000, nominalTokens: 1_000_000 },
  { label: "10M", chunks: 400000, nominalTokens: 10_000_000 },
] as const;
export type PaperLength = (typeof PAPER_LENGTHS)[number]["label"];

export interface PaperCurve {
  id: string;
  /** The method as the paper names it. */
  method: string;
  /** "avg" = the mean over qa1–qa5; otherwise the one task. */
  task: "avg" | "qa3";
  /** Q-RAG's own curve (drawn by default); the rest are the paper's comparisons. */
  qrag: boolean;
  /** Where the numbers come from (the figure, how they were read). */
  source: string;
  values: Partial<Record<PaperLength, number>>;
}

const AVG_FIG = "Q-RAG paper, BabiLong figure (avg qa1–qa5, answer accuracy, Qwen3-4B reader for the RAG methods; Q-threshold 0.5), read off the plot ±0.01";
const QA3_FIG = "Q-RAG paper, BabiLong qa3 figure (answer accuracy, Qwen3-4B reader; Q-threshold 0.5), read off the plot ±0.01";

export const BABILONG_PAPER_CURVES: readonly PaperCurve[] = [
  { id: "qrag-avg", method: "Q-RAG", task: "avg", qrag: true, source: AVG_FIG, values: { "1K": 0.965, "4K": 0.965, "32K": 0.967, "128K": 0.967, "1M": 0.963, "10M": 0.955 } },
  { id: "qrag-qa3", method: "Q-RAG", task: "qa3", qrag: true, source: QA3_FIG, values: { "1K": 0.95, "4K": 0.965, "32K": 0.965, "128K": 0.963, "1M": 0.955, "10M": 0.93 } },
  { id: "titans-avg", method: "Titans", task: "avg", qrag: false, source: AVG_FIG, values: { "1K": 0.99, "4K": 0.99, "32K": 0.99, "128K": 0.98, "1M": 0.94, "10M": 0.69 } },
  { id: "atlas-avg", method: "Atlas", task: "avg", qrag: false, source: AVG_FIG, values: { "1K": 0.96, "4K": 0.98, "32K": 0.98, "128K": 0.97, "1M": 0.92, "10M": 0.83 } },
  { id: "armt-avg", method: "ARMT", task: "avg", qrag: false, source: AVG_FIG, values: { "1K": 0.96, "4K": 0.985, "32K": 0.985, "128K": 0.97, "1M": 0.935, "10M": 0.765 } },
  { id: "rmt-avg", method: "RMT", task: "avg", qrag: false, source: AVG_FIG, values: { "1K": 0.975, "4K": 0.925, "32K": 0.78, "128K": 0.585, "1M": 0.43, "10M": 0.34 } },
  { id: "mamba-avg", method: "Mamba", task: "avg", qrag: false, source: AVG_FIG, values: { "1K": 0.99, "4K": 0.99, "32K": 0.98, "128K": 0.925 } },
  { id: "beam-avg", method: "Beam-Retriever + Qwen3-4B", task: "avg", qrag: false, source: AVG_FIG, values: { "1K": 0.577, "4K": 0.577, "32K": 0.56, "128K": 0.537 } },
  { id: "multistep-avg", method: "Multi-step RAG + Qwen3-4B", task: "avg", qrag: false, source: AVG_FIG, values: { "1K": 0.47, "4K": 0.46, "32K": 0.45, "128K": 0.4, "1M": 0.29 } },
];

/** Which paper curves the chart offers: none, Q-RAG's own, or every method. */
export const PAPER_CHOICES = ["none", "qrag", "all"] as const;
export type PaperChoice = (typeof PAPER_CHOICES)[number];

/** The curves to draw for sweeps of these tasks: the qa3 figure when every sweep is qa3, else the average. */
export function paperCurves(choice: PaperChoice, tasks: readonly (string | null | undefined)[]): PaperCurve[] {
  if (choice === "none") return [];
  const qa3 = tasks.length > 0 && tasks.every((t) => t === "qa3");
  const ours = BABILONG_PAPER_CURVES.filter((c) => c.qrag && c.task === (qa3 ? "qa3" : "avg"));
  return choice === "qrag" ? ours : [...ours, ...BABILONG_PAPER_CURVES.filter((c) => !c.qrag)];
}

export const paperCurveLabel = (c: PaperCurve) => `paper: ${c.method} (${c.task === "qa3" ? "qa3" : "avg qa1–5"})`;

/**
 * The x (measured tokens) of each paper length: our point's tokens where a shown sweep ran that
 * length, else its sentences × our median tokens per chunk, else the paper's nominal count.
 */
export function paperLengthTokens(points: readonly SweepPoint[]): Record<PaperLength, number> {
  const perChunk = points.map((p) => p.tokens / p.numChunks).filter((r) => Number.isFinite(r) && r > 0).sort((a, b) => a - b);
  const median = perChunk.length ? perChunk[Math.floor(perChunk.length / 2)] : undefined;
  const out = {} as Record<PaperLength, number>;
  for (const l of PAPER_LENGTHS) {
    const ours = points.find((p) => p.numChunks === l.chunks);
    out[l.label] = ours ? ours.tokens : median !== undefined ? l.chunks * median : l.nominalTokens;
  }
  return out;
}

/** One paper curve as chart rows over the x range [lo, hi] (lengths outside it are left out). */
export function paperRows(c: PaperCurve, x: Record<PaperLength, number>, lo: number, hi: number): { x: number; y: number; length: PaperLength }[] {
  return PAPER_LENGTHS.flatMap((l) => {
    const y = c.values[l.label];
    const at = x[l.label];
    return y === undefined || at < lo || at > hi ? [] : [{ x: at, y, length: l.label }];
  });
}
