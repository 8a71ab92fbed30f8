"use client";
/**
 * The compare view's summary panels (parallel coordinates, scatter) over the compared runs: each
 * run's value per column (config keys from its config, summaries from the runs list's columns),
 * one axis per column, and the runs the brushes keep, shared by both panels. Runs the legend hides
 * are not passed in. Recomputed each render: at most 200 runs × 10 columns.
 */
import type { CompareState } from "../../lib/compare-state.ts";
import { axisOf, columnValue, keptRuns, type SummaryRun } from "../../lib/analysis/summary-axes.ts";
import { useSummaryColumns } from "../../lib/hooks/useSummaryColumns.ts";
import { ParallelCoordsPanel } from "./ParallelCoordsPanel.tsx";
import { ScatterPanel } from "./ScatterPanel.tsx";

interface Props {
  state: CompareState;
  runs: readonly { id: string; name: string; config: unknown; color: string }[];
  configKeys: readonly string[];
  set: (patch: Partial<CompareState>) => void;
}

export function SummaryPanels({ state, runs, configKeys, set }: Props) {
  const { pcoord, scatter } = state;
  const pcKeys = pcoord ? [...pcoord.axes, pcoord.metric] : [];
  const keys = [...new Set([...pcKeys, ...(scatter ? [scatter.x, scatter.y] : [])])];
  const ids = runs.map((r) => r.id);
  const { byRun, error } = useSummaryColumns(ids, keys);
  const rows: SummaryRun[] = runs.map((r) => ({ id: r.id, name: r.name, values: Object.fromEntries(keys.map((k) => [k, columnValue(k, r.config, byRun.get(r.id))])) }));
  const axisFor = (k: string) => axisOf(k, rows.map((r) => r.values[k]));
  const kept = keptRuns(rows, pcoord?.brushes ?? [], pcKeys);
  const colors = new Map(runs.map((r) => [r.id, r.color]));
  if (!pcoord && !scatter) return null;
  return (
    <>
      {error && <div className="error-text small">summaries: {error.message}</div>}
      {pcoord && <ParallelCoordsPanel spec={pcoord} runs={rows} axes={pcKeys.map(axisFor)} kept={kept} configKeys={configKeys} onChange={(p) => set({ pcoord: p })} />}
      {scatter && <ScatterPanel spec={scatter} runs={rows} colors={colors} x={axisFor(scatter.x)} y={axisFor(scatter.y)} kept={pcoord?.brushes?.length ? kept : null} configKeys={configKeys} onChange={(s) => set({ scatter: s })} />}
    </>
  );
}
