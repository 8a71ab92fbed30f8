/**
 * Sweep points → chart and table figures: per method (Q-RAG all picks, Q-RAG after the
 * Q-threshold, after the threshold plus leave-one-out pruning where recorded, BM25, dense) and
 * metric, the value at each length with its 95 % interval — Wilson for coverage (a proportion of
 * episodes), mean ± 1.96·sd/√n for F1 (a mean of per-episode F1).
 */
import type { SweepPoint } from "../contracts/index.ts";
import { wilsonInterval, type Interval } from "../contracts/intervals.ts";

export const SWEEP_METHODS = ["qrag", "qragFiltered", "qragPruned", "bm25", "dense"] as const;
export type SweepMethod = (typeof SWEEP_METHODS)[number];
export type SweepMetric = "coverage" | "f1";

export const METHOD_LABELS: Record<SweepMethod, string> = { qrag: "Q-RAG (all picks)", qragFiltered: "Q-RAG (Q ≥ threshold)", qragPruned: "Q-RAG (Q ≥ threshold + prune)", bm25: "BM25", dense: "dense (1 step)" };

export interface SweepFigure {
  numChunks: number;
  tokens: number;
  samples: number;
  value: number;
  interval: Interval | null;
}

/** The 95 % interval of one method's metric at one length (null: not computable). */
export function sweepInterval(p: SweepPoint, method: SweepMethod, metric: SweepMetric): Interval | null {
  const scores = p[method];
  if (!scores || !(p.samples > 0)) return null;
  if (metric === "coverage") return wilsonInterval(Math.round(scores.coverage * p.samples), p.samples);
  const sd = p.f1Sd?.[method];
  if (sd === undefined || p.samples < 2) return null;
  const half = (1.96 * sd) / Math.sqrt(p.samples);
  return { low: Math.max(0, scores.f1 - half), high: Math.min(1, scores.f1 + half) };
}

/** One method's curve over a sweep's lengths, in token order (lengths it lacks are left out). */
export function sweepCurve(points: readonly SweepPoint[], method: SweepMethod, metric: SweepMetric): SweepFigure[] {
  return [...points]
    .sort((a, b) => a.tokens - b.tokens)
    .flatMap((p) => {
      const s = p[method];
      return s ? [{ numChunks: p.numChunks, tokens: p.tokens, samples: p.samples, value: s[metric], interval: sweepInterval(p, method, metric) }] : [];
    });
}

/**
 * The LLM reader's answer accuracy over a sweep's lengths (points swept with `--reader`), with
 * the Wilson interval the engine stored; lengths without a reader are left out.
 */
export function readerCurve(points: readonly SweepPoint[]): SweepFigure[] {
  return [...points]
    .sort((a, b) => a.tokens - b.tokens)
    .flatMap((p) => (p.reader ? [{ numChunks: p.numChunks, tokens: p.tokens, samples: p.reader.n, value: p.reader.accuracy, interval: p.reader.ci }] : []));
}

/** The reader models of a sweep's points (one, unless points were swept with different readers). */
export const readerModels = (points: readonly SweepPoint[]): string[] => [...new Set(points.flatMap((p) => (p.reader ? [p.reader.model] : [])))];

/** 1,700 → "1.7K", 13,400,000 → "13.4M" (measured tokens on the log x-axis). */
export function fmtTokens(n: number): string {
  if (!Number.isFinite(n)) return "–";
  const a = Math.abs(n);
  const [div, unit] = a >= 1e9 ? [1e9, "B"] : a >= 1e6 ? [1e6, "M"] : a >= 1e3 ? [1e3, "K"] : [1, ""];
  const v = n / div;
  return `${div === 1 ? Math.round(v) : Number(v.toFixed(v >= 100 ? 0 : 1))}${unit}`;
}

/**
 * Legend labels that tell overlaid sweeps apart: a label shared by several sweeps (two sweeps of
 * one checkpoint at one threshold) gets each one's creation time, and a numbered suffix when even
 * that repeats. Labels already distinct come back as they were.
 */
export function distinctLabels(labels: readonly string[], createdAt: readonly string[]): string[] {
  const count = (xs: readonly string[]) => xs.reduce((m, l) => m.set(l, (m.get(l) ?? 0) + 1), new Map<string, number>());
  const byLabel = count(labels);
  const timed = labels.map((l, i) => ((byLabel.get(l) ?? 0) > 1 ? `${l}, created ${createdAt[i].slice(0, 16).replace("T", " ")}` : l));
  const byTimed = count(timed);
  const seen = new Map<string, number>();
  return timed.map((l) => {
    if ((byTimed.get(l) ?? 0) < 2) return l;
    const k = (seen.get(l) ?? 0) + 1;
    seen.set(l, k);
    return `${l} #${k}`;
  });
}
