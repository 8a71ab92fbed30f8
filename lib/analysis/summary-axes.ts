/**
 * The maths of the compare view's summary panels (parallel coordinates, scatter): a run's value in
 * a runs-table column (run-columns.ts: config values read with the same `configCell` the server
 * uses, metric summaries as the server computed them), an axis over those values (numeric on
 * round ticks, or categories placed evenly), where a value sits on it, and whether a brush keeps it.
 */
import { AGGREGATES, METRIC_KEYS, compareCells, configCell, parseColumn, type AxisBrush, type CellValue } from "../contracts/index.ts";
import { linearAxis, logAxis } from "../chart-ticks.ts";

/** A run's value in a column: config keys from its config, summaries from the server's answer. */
export function columnValue(key: string, config: unknown, serverColumns: Record<string, CellValue> | undefined): CellValue | undefined {
  const c = parseColumn(key);
  if ("error" in c) return undefined;
  if (c.kind === "config") return configCell(config, c.path);
  const v = serverColumns?.[key];
  return v === null ? undefined : v;
}

/** Every metric summary a panel offers (last./best./min./max. of each metric key). */
export const SUMMARY_KEYS_OFFERED: readonly string[] = AGGREGATES.flatMap((a) => METRIC_KEYS.map((m) => `${a}.${m}`));

/** A numeric axis whose max / min reaches this is drawn on a log scale. */
const LOG_RATIO = 100;

export type SummaryAxis =
  | { kind: "num"; key: string; domain: [number, number]; ticks: number[]; log: boolean }
  | { kind: "cat"; key: string; cats: string[] };

const missing = (v: CellValue | undefined): v is null | undefined => v === undefined || v === null || (typeof v === "number" && !Number.isFinite(v));

/** A category's name: strings as they are, other values as JSON text. */
export const categoryOf = (v: CellValue): string => (typeof v === "string" ? v : JSON.stringify(v));

/**
 * An axis over these values: numeric when every present value is a number, categorical otherwise.
 * `scale` set by hand wins, except log where a value is 0 or below (it could not be placed).
 */
export function axisOf(key: string, values: readonly (CellValue | undefined)[], scale?: "linear" | "log"): SummaryAxis {
  const present = values.filter((v): v is string | number | boolean => !missing(v));
  if (present.length > 0 && present.every((v) => typeof v === "number")) {
    const nums = present as number[];
    const [min, max] = [Math.min(...nums), Math.max(...nums)];
    // values over two decades and more (learning rates): a log axis, or the small ones merge
    const log = min > 0 && (scale ? scale === "log" : max / min >= LOG_RATIO);
    const { domain, ticks } = log ? logAxis(min, max) : linearAxis(min, max);
    return { kind: "num", key, domain, ticks, log };
  }
  const cats = [...new Set(present.map(categoryOf))].sort((a, b) => compareCells(a, b, "asc"));
  return { kind: "cat", key, cats };
}

/** Where a value sits on the axis, 0 (bottom / left) to 1; null when it has none there. */
export function fractionOn(axis: SummaryAxis, v: CellValue | undefined): number | null {
  if (missing(v)) return null;
  if (axis.kind === "num") {
    if (typeof v !== "number") return null;
    const [lo, hi] = axis.domain;
    if (axis.log) return v > 0 ? Math.log10(v / lo) / Math.log10(hi / lo) : null;
    return (v - lo) / (hi - lo);
  }
  const i = axis.cats.indexOf(categoryOf(v));
  if (i < 0) return null;
  // evenly: n categories at the centres of n equal slots
  return (i + 0.5) / axis.cats.length;
}

/** A value at a fraction of a numeric axis (brushes are stored in the axis's units). */
export const valueAt = (axis: { domain: [number, number]; log: boolean }, f: number): number =>
  axis.log ? axis.domain[0] * Math.pow(axis.domain[1] / axis.domain[0], f) : axis.domain[0] + f * (axis.domain[1] - axis.domain[0]);

/** The brush a drag from fraction a to b makes on an axis. */
export function brushOf(axis: SummaryAxis, a: number, b: number): AxisBrush {
  const [lo, hi] = a <= b ? [a, b] : [b, a];
  if (axis.kind === "num") return { key: axis.key, lo: Number(valueAt(axis, lo).toPrecision(6)), hi: Number(valueAt(axis, hi).toPrecision(6)) };
  return { key: axis.key, values: axis.cats.filter((_, i) => { const f = (i + 0.5) / axis.cats.length; return f >= lo && f <= hi; }) };
}

/** Whether a brush keeps a value (a run without a value on a brushed axis is never kept). */
export function brushKeeps(brush: AxisBrush, v: CellValue | undefined): boolean {
  if (missing(v)) return false;
  if ("values" in brush) return brush.values.includes(categoryOf(v));
  return typeof v === "number" && v >= brush.lo && v <= brush.hi;
}

/** A brush's range as fractions of the axis (to draw it), or null when it cannot be drawn on it. */
export function brushFractions(axis: SummaryAxis, brush: AxisBrush): [number, number] | null {
  if (axis.kind === "num" && "lo" in brush) {
    const at = (v: number) => fractionOn(axis, v) ?? 0;
    return [at(brush.lo), at(brush.hi)];
  }
  if (axis.kind === "cat" && "values" in brush) {
    const fs = brush.values.map((v) => axis.cats.indexOf(v)).filter((i) => i >= 0).map((i) => (i + 0.5) / axis.cats.length);
    if (!fs.length) return null;
    const half = 0.25 / axis.cats.length;
    return [Math.max(0, Math.min(...fs) - half), Math.min(1, Math.max(...fs) + half)];
  }
  return null;
}

/** Colour of a metric value between its axis ends (blue low → orange high); grey without one. */
export function metricColor(f: number | null): string {
  if (f === null) return "hsl(0 0% 60%)";
  const t = Math.min(1, Math.max(0, f));
  return `hsl(${Math.round(230 - 200 * t)} 70% 45%)`;
}

/** A compared run as the summary panels see it: its values by column key. */
export interface SummaryRun {
  id: string;
  name: string;
  values: Record<string, CellValue | undefined>;
}

/** The runs every brush keeps (brushes on columns not shown are ignored). */
export function keptRuns(runs: readonly SummaryRun[], brushes: readonly AxisBrush[], shown: readonly string[]): Set<string> {
  const active = brushes.filter((b) => shown.includes(b.key));
  return new Set(runs.filter((r) => active.every((b) => brushKeeps(b, r.values[b.key]))).map((r) => r.id));
}
