/**
 * The metric panels of the run page (one chart per group, its series with their colours), and the
 * per-key titles the compare view uses (there a panel is one metric key, a line per run).
 */

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

export const METRIC_PANELS: readonly MetricPanel[] = [
  { id: "qf_loss", title: "TD loss", series: [{ key: "qf_loss", label: "TD loss", color: "#e4572e" }] },
  {
    id: "return",
    title: "Return",
    series: [
      { key: "train_return", label: "train", color: "#3a7bd5" },
      { key: "eval_return", label: "eval", color: "#17a398" },
    ],
  },
  {
    id: "eval",
    title: "Eval coverage & F1",
    series: [
      { key: "eval_coverage", label: "coverage", color: "#9b5de5" },
      { key: "eval_f1", label: "F1", color: "#f29e4c" },
    ],
  },
  {
    id: "lr",
    title: "Learning rate & α",
    series: [
      { key: "lr", label: "lr", color: "#3a86ff" },
      { key: "alpha", label: "α (right)", color: "#ef476f", axis: "right" },
    ],
  },
  {
    id: "throughput",
    title: "Throughput",
    series: [
      { key: "transitions_per_s", label: "transitions/s", color: "#2a9d8f" },
      { key: "updates_per_s", label: "updates/s (right)", color: "#d4a017", axis: "right" },
    ],
  },
  {
    // webgpu runs only: what the backend holds (its pool of freed buffers included) against live
    // tensors and the step's peak (the pool's bound is 1.2 × the peak)
    id: "gpu_memory",
    title: "GPU memory (MiB)",
    ifData: true,
    series: [
      { key: "gpu_memory_mb", label: "allocated", color: "#6c757d" },
      { key: "gpu_memory_live_mb", label: "live tensors", color: "#e76f51" },
      { key: "gpu_memory_peak_mb", label: "step peak", color: "#264653" },
    ],
  },
];

/** "TD loss", "Return: train", … for every key of the panels above, in their order. */
export const METRIC_TITLES: ReadonlyMap<string, string> = new Map(
  METRIC_PANELS.flatMap((p) => p.series.map((s) => [s.key, p.series.length > 1 ? `${p.title}: ${s.label.replace(/ \(right\)$/, "")}` : p.title] as const)),
);
