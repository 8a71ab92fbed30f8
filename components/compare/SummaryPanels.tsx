"use client";
/**
 * The compare view's summary panels (parallel coordinates, scatter) over the compared runs: each
 * run's value per column (lib/hooks/useSummaryRows.ts), one axis per column, and the runs the
 * brushes keep, shared by both panels (and the line charts). Runs the legend hides are not passed in.
 */
import type { CompareState } from "../../lib/compare-state.ts";
import { axisOf } from "../../lib/analysis/summary-axes.ts";
import type { SummaryRows } from "../../lib/hooks/useSummaryRows.ts";
import { ParallelCoordsPanel } from "./ParallelCoordsPanel.tsx";
import { ScatterPanel } from "./ScatterPanel.tsx";

interface Props {
  state: CompareState;
  summary: SummaryRows;
  colors: ReadonlyMap<string, string>;
  configKeys: readonly string[];
  set: (patch: Partial<CompareState>) => void;
}

export function SummaryPanels({ state, summary, colors, configKeys, set }: Props) {
  const { pcoord, scatter } = state;
  const { rows, pcKeys, kept, error } = summary;
  const scaleOf = (k: string) => pcoord?.scales?.find((s) => s.key === k)?.scale;
  const axisFor = (k: string, scale?: "linear" | "log") => axisOf(k, rows.map((r) => r.values[k]), scale);
  if (!pcoord && !scatter) return null;
  return (
    <>
      {error && <div className="error-text small">summaries: {error.message}</div>}
      {pcoord && <ParallelCoordsPanel spec={pcoord} runs={rows} axes={pcKeys.map((k) => axisFor(k, scaleOf(k)))} kept={kept} configKeys={configKeys} onChange={(p) => set({ pcoord: p })} />}
      {scatter && <ScatterPanel spec={scatter} runs={rows} colors={colors} x={axisFor(scatter.x)} y={axisFor(scatter.y)} kept={pcoord?.brushes?.length ? kept : null} configKeys={configKeys} onChange={(s) => set({ scatter: s })} />}
    </>
  );
}
