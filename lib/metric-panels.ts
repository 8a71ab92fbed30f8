/**
 * The metric panels of the run page (one chart per group, its series with their colours), and the
 * per-key titles the compare view uses (there a panel is one metric key, a line per run); both
 * drawn from the metric registry (lib/contracts/metrics.ts).
 */
import { METRICS, PANELS, type MetricDef } from "./contracts/metrics.ts";

/** One line of a chart: a metric key, its legend label and colour, and its y axis (left by default). */
export interface ChartSeries {
  key: string;
  label: string;
  color: string;
  axis?: "left" | "right";
}

export interface MetricPanel {
  id: string;
  title: string;
  series: ChartSeries[];
  /** Drawn on the run page only once the run has points for it (metrics some backends never send). */
  ifData?: boolean;
}

/**
 * The panels of the metric registry (lib/contracts/metrics.ts), each with the keys that name it:
 * in the registry's order, left-axis lines before right-axis ones.
 */
export const METRIC_PANELS: readonly MetricPanel[] = PANELS.map((p) => {
  const lines = Object.entries(METRICS).flatMap(([key, m]: [string, MetricDef]) =>
    m.chart?.panel === p.id ? [{ key, label: m.chart.label, color: m.chart.color, ...(m.chart.axis ? { axis: m.chart.axis } : {}) }] : [],
  );
  const series: ChartSeries[] = [...lines.filter((l) => !l.axis), ...lines.filter((l) => l.axis)];
  return { id: p.id, title: p.title, series, ...("ifData" in p ? { ifData: p.ifData } : {}) };
});

/** "TD loss", "Return: train", … for every key of the panels above, in their order. */
export const METRIC_TITLES: ReadonlyMap<string, string> = new Map(
  METRIC_PANELS.flatMap((p) => p.series.map((s) => [s.key, p.series.length > 1 ? `${p.title}: ${s.label.replace(/ \(right\)$/, "")}` : p.title] as const)),
);
