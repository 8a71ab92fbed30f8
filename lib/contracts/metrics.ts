/**
 * The one registry of metric keys. Each key is written once, here, with all that is known of it:
 * when the engine emits it, the chart panel that draws it (legend label, colour, axis), whether its
 * latest value is kept on the run (the runs table's summary, and its column), whether a new
 * comparison shows it, and the reference's TensorBoard tag it is imported from. Every other list
 * derives from it: the events' `metricKeySchema` (engine-events.ts), `SUMMARY_KEYS` (dto.ts), the
 * chart panels and titles (lib/metric-panels.ts), the runs table's columns, the compare view's
 * default panels (lib/compare-state.ts), the import's tag map (server/runs/import-reference.ts) and
 * the tests. Keys are the reference's TensorBoard scalars' where one exists.
 */

/** The run page's chart panels, in their order; a panel draws the keys that name it. */
export const PANELS = [
  { id: "qf_loss", title: "TD loss" },
  { id: "return", title: "Return" },
  { id: "eval", title: "Eval coverage & F1" },
  { id: "lr", title: "Learning rate & α" },
  { id: "throughput", title: "Throughput" },
  // webgpu runs only: what the backend holds (its pool of freed buffers included) against live
  // tensors and the step's peak (the pool's bound is 1.2 × the peak); drawn once there are points
  { id: "gpu_memory", title: "GPU memory (MiB)", ifData: true },
] as const satisfies readonly { id: string; title: string; ifData?: boolean }[];
export type PanelId = (typeof PANELS)[number]["id"];

export interface MetricDef {
  /**
   * When the engine emits it (train.ts): `update` at every logged update, `episodes` at a logged
   * update that finished training episodes, `eval` at every evaluation, `webgpu` at every logged
   * update on webgpu workers only.
   */
  emitted: "update" | "episodes" | "eval" | "webgpu";
  /** Its line in a chart: the panel, the legend label, the colour and the y axis (left by default). */
  chart?: { panel: PanelId; label: string; color: string; axis?: "right" };
  /** Its latest value is kept on the run (`RunSummary`); `column`: shown in the runs table so. */
  summary?: { column?: { header: string; tooltip?: string; digits?: number } };
  /** Shown in a new comparison (the compare view's default panels). */
  compared?: true;
  /** The reference's TensorBoard tag when it differs from the key (imports map it to the key). */
  referenceTag?: string;
}

export const METRICS = {
  qf_loss: {
    emitted: "update",
    chart: { panel: "qf_loss", label: "TD loss", color: "#e4572e" },
    summary: { column: { header: "TD loss", tooltip: "latest TD loss" } },
    compared: true,
  },
  train_return: {
    emitted: "episodes",
    chart: { panel: "return", label: "train", color: "#3a7bd5" },
    summary: {},
    compared: true,
    referenceTag: "train r_sum",
  },
  eval_return: {
    emitted: "eval",
    chart: { panel: "return", label: "eval", color: "#17a398" },
    summary: { column: { header: "Eval return", digits: 3 } },
    compared: true,
    referenceTag: "eval r_sum",
  },
  eval_coverage: {
    emitted: "eval",
    chart: { panel: "eval", label: "coverage", color: "#9b5de5" },
    summary: { column: { header: "Coverage", digits: 3 } },
    compared: true,
  },
  eval_f1: {
    emitted: "eval",
    chart: { panel: "eval", label: "F1", color: "#f29e4c" },
    summary: { column: { header: "F1", digits: 3 } },
  },
  eval_precision: { emitted: "eval" },
  eval_recall: { emitted: "eval" },
  eval_steps: { emitted: "eval" },
  alpha: { emitted: "update", chart: { panel: "lr", label: "α (right)", color: "#ef476f", axis: "right" } },
  lr: { emitted: "update", chart: { panel: "lr", label: "lr", color: "#3a86ff" } },
  grad_norm: { emitted: "update" },
  transitions_per_s: {
    emitted: "update",
    chart: { panel: "throughput", label: "transitions/s", color: "#2a9d8f" },
    summary: { column: { header: "Trans/s", tooltip: "transitions per second", digits: 3 } },
  },
  updates_per_s: { emitted: "update", chart: { panel: "throughput", label: "updates/s (right)", color: "#d4a017", axis: "right" } },
  // mean seconds per training iteration in the rollout (env steps, encoding, the reads Q needs: on
  // webgpu it also waits for the previous update's GPU work) and in recording the update
  rollout_s: { emitted: "update" },
  update_s: { emitted: "update" },
  // MiB of GPU buffers held: tfjs's, its pool of freed buffers included
  // (tf.memory().numBytesAllocatedInGPU), plus the recorded programs' plans; of tfjs's, those in
  // live tensors (numBytesInGPU) and the most the last step held at once (what the pool is bounded
  // by: ≤ 1.2 × that); and the plans' alone (activations kept per batch shape, reused every step)
  gpu_memory_mb: { emitted: "webgpu", chart: { panel: "gpu_memory", label: "allocated", color: "#6c757d" } },
  gpu_memory_live_mb: { emitted: "webgpu", chart: { panel: "gpu_memory", label: "live tensors", color: "#e76f51" } },
  gpu_memory_peak_mb: { emitted: "webgpu", chart: { panel: "gpu_memory", label: "step peak", color: "#264653" } },
  gpu_memory_plans_mb: { emitted: "webgpu", chart: { panel: "gpu_memory", label: "recorded plans", color: "#8d5a97" } },
} as const satisfies Record<string, MetricDef>;

export type MetricKey = keyof typeof METRICS;
type Metrics = typeof METRICS;
/** The keys whose latest value is kept on the run. */
export type SummaryKey = { [K in MetricKey]: Metrics[K] extends { summary: object } ? K : never }[MetricKey];

const entries = Object.entries(METRICS) as [MetricKey, MetricDef][];
const keysWhere = <K extends MetricKey = MetricKey>(ok: (m: MetricDef) => boolean): readonly K[] => entries.filter(([, m]) => ok(m)).map(([k]) => k as K);

/** Every metric key, in the registry's order. */
export const METRIC_KEYS: readonly MetricKey[] = keysWhere(() => true);
/** Latest values of these metrics are kept on each run for the runs table. */
export const SUMMARY_KEYS: readonly SummaryKey[] = keysWhere<SummaryKey>((m) => m.summary !== undefined);
/** The keys a new comparison shows. */
export const COMPARED_KEYS: readonly MetricKey[] = keysWhere((m) => m.compared === true);
/** The keys the engine emits with the given cadence (the crash test counts their points). */
export const metricKeysEmitted = (when: MetricDef["emitted"]): readonly MetricKey[] => keysWhere((m) => m.emitted === when);

/** The runs table's metric columns, in the registry's order. */
export const SUMMARY_COLUMNS: readonly { key: SummaryKey; header: string; tooltip?: string; digits?: number }[] = entries.flatMap(([key, m]) =>
  m.summary?.column ? [{ key: key as SummaryKey, ...m.summary.column }] : [],
);

/** Reference TensorBoard tag → our key (the keys themselves pass through as tags too). */
export const REFERENCE_TAGS: Readonly<Record<string, MetricKey>> = Object.fromEntries(
  entries.flatMap(([key, m]) => (m.referenceTag ? [[m.referenceTag, key]] : [])),
);
