"use client";
/**
 * The compared runs as the summary panels see them (each run's value per column of the parallel
 * coordinates and the scatter) and the runs the parallel-coordinates brushes keep. The compare
 * view computes it once: the panels draw it, and the line charts fade the runs it leaves out.
 * Recomputed each render: at most 200 runs × 10 columns.
 */
import type { CompareState } from "../compare-state.ts";
import { columnValue, keptRuns, type SummaryRun } from "../analysis/summary-axes.ts";
import { useSummaryColumns } from "./useSummaryColumns.ts";

export interface SummaryRows {
  rows: SummaryRun[];
  /** The parallel-coordinates columns, the metric last. */
  pcKeys: string[];
  /** Runs every brush keeps. */
  kept: Set<string>;
  /** Whether any brush is set on a shown axis (else every run is kept). */
  brushed: boolean;
  /** Whether the runs' summaries are in (before, a brush on a summary would keep no run). */
  ready: boolean;
  error: Error | null;
}

export function useSummaryRows(state: CompareState, runs: readonly { id: string; name: string; config: unknown }[]): SummaryRows {
  const { pcoord, scatter } = state;
  const pcKeys = pcoord ? [...pcoord.axes, pcoord.metric] : [];
  const keys = [...new Set([...pcKeys, ...(scatter ? [scatter.x, scatter.y] : [])])];
  const { byRun, ready, error } = useSummaryColumns(runs.map((r) => r.id), keys);
  const rows: SummaryRun[] = runs.map((r) => ({ id: r.id, name: r.name, values: Object.fromEntries(keys.map((k) => [k, columnValue(k, r.config, byRun.get(r.id))])) }));
  const brushes = pcoord?.brushes ?? [];
  return { rows, pcKeys, kept: keptRuns(rows, brushes, pcKeys), brushed: brushes.some((b) => pcKeys.includes(b.key)), ready, error };
}
