/**
 * Compare views and saved dashboards: which runs (a list, or a runs-table filter), which metric
 * panels, the grouping and the chart settings. The same spec is the /compare URL's state and a
 * Dashboard row's `spec` (JSON text), so a saved dashboard opens exactly as it was saved.
 * Every size a user can set is bounded here.
 */
import { z } from "zod";
import { RUN_STATUSES } from "./dto.ts";
import { RUN_LIST_SORTS, X_AXES, idParam } from "./rest.ts";
import { MAX_RUN_COLUMNS, parseColumn, parseFilter } from "./run-columns.ts";

/** Most runs one comparison overlays (and one filter resolves to). */
export const MAX_COMPARE_RUNS = 200;
/** Most metric panels one comparison shows. */
export const MAX_COMPARE_PANELS = 20;
export const BAND_KINDS = ["std", "minmax"] as const;
export type BandKind = (typeof BAND_KINDS)[number];

/** A metric key or a dotted config key ("algo.encoder.type"). */
const dottedKey = z.string().min(1).max(200, "at most 200 characters").regex(/^[\w.-]+$/, "letters, digits, _ . - only");

/** Longest filter expression (the runs list's `where` bound). */
export const MAX_WHERE = 500;

/** The runs table's filter (GET /api/runs query), as a comparison of "every run matching". */
export const runFilterSpec = z.strictObject({
  status: z
    .array(z.enum(RUN_STATUSES))
    .max(RUN_STATUSES.length)
    .optional(),
  q: z.string().max(200, "at most 200 characters").optional(),
  tag: z.string().max(64, "at most 64 characters").optional(),
  /** A filter expression over config keys and summaries (run-columns.ts), as the runs table's `where`. */
  where: z
    .string()
    .max(MAX_WHERE, `at most ${MAX_WHERE} characters`)
    .superRefine((w, ctx) => {
      const f = parseFilter(w);
      if ("error" in f) ctx.addIssue({ code: "custom", message: f.error });
    })
    .optional(),
});
export type RunFilterSpec = z.infer<typeof runFilterSpec>;

/** Most axes of the parallel-coordinates panel (its summary metric included). */
export const MAX_PCOORD_AXES = 8;
/** Most categories one categorical brush keeps. */
export const MAX_BRUSH_VALUES = 50;

/** A runs-table column key (run-columns.ts): a config key, or last./best./min./max. and a metric. */
const columnKey = z
  .string()
  .min(1)
  .max(100)
  .superRefine((k, ctx) => {
    const c = parseColumn(k);
    if ("error" in c) ctx.addIssue({ code: "custom", message: c.error });
  });
/** A column key that is a metric summary (what lines are coloured by and scatters plot on y). */
const summaryKey = columnKey.refine((k) => {
  const c = parseColumn(k);
  return !("error" in c) && c.kind === "metric";
}, "a metric summary such as best.eval_coverage");

/** A brushed range on one axis: numbers between lo and hi, or these categories. */
export const axisBrush = z.union([
  z.strictObject({ key: columnKey, lo: z.number(), hi: z.number() }).refine((b) => b.lo <= b.hi, "lo must not exceed hi"),
  z.strictObject({ key: columnKey, values: z.array(z.string().max(300)).max(MAX_BRUSH_VALUES) }),
]);
export type AxisBrush = z.infer<typeof axisBrush>;

export const AXIS_SCALES = ["linear", "log"] as const;
export type AxisScale = (typeof AXIS_SCALES)[number];
/** An axis's scale set by hand (without one, numbers over two decades get a log axis). */
export const axisScale = z.strictObject({ key: columnKey, scale: z.enum(AXIS_SCALES) });

/**
 * The parallel-coordinates panel: config keys (or summaries) → one summary metric, which colours
 * the lines and stays the last axis; `axes` is the drawn order (the user moves axes).
 */
export const pcoordSpec = z.strictObject({
  axes: z.array(columnKey).max(MAX_PCOORD_AXES - 1, `at most ${MAX_PCOORD_AXES - 1} axes before the metric`),
  metric: summaryKey,
  brushes: z.array(axisBrush).max(MAX_PCOORD_AXES).optional(),
  scales: z.array(axisScale).max(MAX_PCOORD_AXES).optional(),
});
export type PcoordSpec = z.infer<typeof pcoordSpec>;

/** A runs-table panel: the dashboard's runs with these chosen columns, sorted (its filter is the spec's). */
export const runsTableSpec = z.strictObject({
  cols: z.array(columnKey).max(MAX_RUN_COLUMNS, `at most ${MAX_RUN_COLUMNS} columns`),
  sort: z
    .string()
    .max(100)
    .refine((s) => (RUN_LIST_SORTS as readonly string[]).includes(s) || !("error" in parseColumn(s)), "not a column to sort on")
    .optional(),
  order: z.enum(["asc", "desc"]).optional(),
});
export type RunsTableSpec = z.infer<typeof runsTableSpec>;

/** The scatter panel: a config key or summary on x, a summary on y. */
export const scatterSpec = z.strictObject({ x: columnKey, y: summaryKey });
export type ScatterSpec = z.infer<typeof scatterSpec>;

export const dashboardSpec = z
  .strictObject({
    /** Explicit run ids (mutually exclusive with `filter`). */
    runs: z.array(idParam).max(MAX_COMPARE_RUNS, `at most ${MAX_COMPARE_RUNS} runs`).optional(),
    /** Every run matching (up to MAX_COMPARE_RUNS, newest first). */
    filter: runFilterSpec.optional(),
    /** Metric keys, one panel each, in order. */
    panels: z.array(z.string().min(1).max(100).regex(/^[\w.-]+$/, "invalid metric key")).min(1, "at least one panel").max(MAX_COMPARE_PANELS, `at most ${MAX_COMPARE_PANELS} panels`).optional(),
    /** Config key to group by (one band per value); none: one line per run. */
    group: dottedKey.optional(),
    band: z.enum(BAND_KINDS).optional(),
    smoothing: z.number().min(0).max(0.99).optional(),
    x: z.enum(X_AXES).optional(),
    /** Runs (or group labels when grouped) hidden from the charts via the legend. */
    hidden: z.array(z.string().min(1).max(300)).max(MAX_COMPARE_RUNS).optional(),
    /** The parallel-coordinates panel, when shown (absent in dashboards saved before it existed). */
    pcoord: pcoordSpec.optional(),
    /** The scatter panel, when shown. */
    scatter: scatterSpec.optional(),
    /** The runs-table panel (absent in dashboards saved before it existed). */
    table: runsTableSpec.optional(),
  })
  .refine((s) => !(s.runs && s.filter), { message: "either runs or filter, not both", path: ["runs"] })
  .refine((s) => (s.runs?.length ?? 0) > 0 || s.filter !== undefined, { message: "name at least one run or a filter", path: ["runs"] });
export type DashboardSpec = z.infer<typeof dashboardSpec>;

const dashboardName = z.string().trim().min(1, "must not be empty").max(200, "at most 200 characters");

/** POST /api/dashboards */
export const createDashboardBody = z.strictObject({ name: dashboardName, spec: dashboardSpec });
export type CreateDashboardBody = z.infer<typeof createDashboardBody>;
/** PATCH /api/dashboards/:id */
export const patchDashboardBody = z.strictObject({ name: dashboardName.optional(), spec: dashboardSpec.optional() });
export type PatchDashboardBody = z.infer<typeof patchDashboardBody>;
export const dashboardIdParams = z.object({ id: idParam });

export interface DashboardDto {
  id: string;
  name: string;
  spec: DashboardSpec;
  /** Who saved it (null: saved before dashboards had owners; admins only may change it). */
  owner: string | null;
  /** Whether the caller may save changes to it or delete it (its owner or an admin). */
  canEdit: boolean;
  createdAt: string;
  updatedAt: string;
}
