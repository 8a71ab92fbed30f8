/**
 * REST inputs: bodies, query strings and path parameters of /api/*, as zod schemas. The server
 * parses every request with these (a 400 names each bad field); the browser builds its requests
 * from the same types. Every size a user can set is bounded here.
 */
import { z } from "zod";
import { parseColumn, parseColumns, parseFilter } from "./run-columns.ts";
import { RUN_STATUSES, type RunStatus } from "./dto.ts";
import { queueName, resourceRequest } from "./queues.ts";

export const intParam = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
export const idParam = z.string().min(1).max(100).regex(/^[\w-]+$/, "invalid id");

const tags = z.array(z.string().trim().min(1, "empty tag").max(64, "at most 64 characters")).max(50, "at most 50 tags");
const notes = z.string().max(20_000, "at most 20000 characters");
const name = z.string().trim().min(1, "must not be empty").max(200, "at most 200 characters");
/** CLI-style `key=value` overrides applied to the config (`envs.task=qa2`). */
const overrides = z.array(z.string().max(2000)).max(200);

/** POST /api/runs. `config` (a whole or partial config tree) is validated by the engine. */
export const createRunBody = z.strictObject({
  name: name.optional(),
  preset: z.string().min(1).max(100).regex(/^[\w.-]+$/, "invalid preset name").optional(),
  config: z.unknown().optional(),
  overrides: overrides.optional(),
  tags: tags.optional(),
  notes: notes.optional(),
  /** Set when the form was opened as a clone of another run. */
  parentId: idParam.optional(),
  /** Where it runs (default "workers"): a platform setting of the run, not the engine's config. */
  queue: queueName.optional(),
  resources: resourceRequest.optional(),
});
export type CreateRunBody = z.infer<typeof createRunBody>;

/** POST /api/runs/validate: the launch form's live check, through the same pipeline as create. */
export const validateConfigBody = z.strictObject({ config: z.unknown(), preset: createRunBody.shape.preset, overrides: overrides.optional() });
export type ValidateConfigBody = z.infer<typeof validateConfigBody>;

/** PATCH /api/runs/:id */
export const patchRunBody = z.strictObject({ name: name.optional(), tags: tags.optional(), notes: notes.optional() });
export type PatchRunBody = z.infer<typeof patchRunBody>;

/** POST /api/runs/:id/clone: a partial config deep-merged onto the source's, plus overrides. */
export const cloneRunBody = z.strictObject({
  config: z.record(z.string(), z.unknown()).optional(),
  overrides: overrides.optional(),
  name: name.optional(),
  tags: tags.optional(),
  notes: notes.optional(),
  /** Where the clone runs and what it asks for (default: the source's). */
  queue: queueName.optional(),
  resources: resourceRequest.optional(),
});
export type CloneRunBody = z.infer<typeof cloneRunBody>;

/** Sort keys of the runs table. */
export const RUN_LIST_SORTS = ["createdAt", "name", "status", "queue", "duration"] as const;
export type RunListSort = (typeof RUN_LIST_SORTS)[number];

/** A text parameter read by `parse` (blank: absent); what it cannot read is the parameter's issue. */
function parsedParam<T>(text: z.ZodString, parse: (s: string) => T | { error: string }) {
  return text.optional().transform((s, ctx) => {
    if (!s?.trim()) return undefined;
    const r = parse(s);
    if (typeof r === "object" && r !== null && "error" in r) {
      ctx.addIssue({ code: "custom", message: r.error });
      return z.NEVER;
    }
    return r as T;
  });
}

/** GET /api/runs?status=a,b&q=&tag=&sort=&order=&limit=&offset=&cols=&where=&ids= */
export const runListQuery = z.strictObject({
  /** Only these runs (the compare view asks its runs' summary columns this way). */
  ids: z
    .string()
    .max(200 * 101)
    .optional()
    .transform((s) => (s ? s.split(",").map((x) => x.trim()).filter(Boolean) : undefined))
    .pipe(z.array(idParam).max(200, "at most 200 runs").optional()),
  status: z
    .string()
    .max(200)
    .optional()
    .transform((s, ctx) => {
      if (!s) return undefined;
      const parts = s.split(",").map((x) => x.trim()).filter(Boolean);
      const bad = parts.filter((p) => !(RUN_STATUSES as readonly string[]).includes(p));
      if (bad.length) ctx.addIssue({ code: "custom", message: `unknown status ${bad.join(", ")} (one of ${RUN_STATUSES.join(", ")})` });
      return parts as RunStatus[];
    }),
  q: z.string().max(200).optional(),
  tag: z.string().max(64).optional(),
  /** Only this queue's runs. */
  queue: queueName.optional(),
  /** One of RUN_LIST_SORTS, or a column key (run-columns.ts). */
  sort: z
    .string()
    .max(100)
    .optional()
    .refine((s) => s === undefined || (RUN_LIST_SORTS as readonly string[]).includes(s) || !("error" in parseColumn(s)), "not a column to sort on"),
  order: z.enum(["asc", "desc"]).optional(),
  /** Extra columns (run-columns.ts), comma-separated. */
  cols: parsedParam(z.string().max(1200), parseColumns),
  /** A filter expression (run-columns.ts). */
  where: parsedParam(z.string().max(500, "at most 500 characters"), parseFilter),
  // a page, not the table: the dashboard asks for 50 rows, compare for at most 200 (default 100)
  limit: intParam(1, 500).optional(),
  offset: intParam(0, 10_000_000).optional(),
});
/** The query string as the browser writes it (statuses comma-separated). */
export type RunListParams = { [K in keyof z.input<typeof runListQuery>]?: K extends "limit" | "offset" ? number : z.input<typeof runListQuery>[K] };
/** The query as the server reads it (statuses as a list). */
export type RunListQuery = Partial<z.output<typeof runListQuery>>;

export const X_AXES = ["step", "wall"] as const;
export type XAxis = (typeof X_AXES)[number];

/** GET /api/runs/:id/metrics?keys=a,b&width=800&x=step|wall */
export const metricsQuery = z.strictObject({
  keys: z
    .string()
    .max(2000)
    .optional()
    .transform((s) => (s ? s.split(",").map((k) => k.trim()).filter(Boolean) : undefined))
    .refine((keys) => (keys?.length ?? 0) <= 64, "at most 64 keys"),
  width: intParam(1, 20_000).optional(),
  x: z.enum(X_AXES).optional(),
});
export type MetricsQuery = Partial<z.output<typeof metricsQuery>>;

/** GET /api/runs/:id/episodes?limit=&phase= (latest first) */
export const episodesQuery = z.strictObject({
  limit: intParam(1, 1000).optional(),
  phase: z.enum(["train", "eval", "sweep", "playground", "agent"]).optional(),
  /** Sweep episodes of one haystack size. */
  numChunks: intParam(1, 10_000_000).optional(),
});
export type EpisodesQuery = z.output<typeof episodesQuery>;

/** GET /api/runs/:id/logs?limit= (latest last) */
export const logsQuery = z.strictObject({ limit: intParam(1, 5000).optional() });

export const runIdParams = z.object({ id: idParam });
/** GET /api/runs/:id/export/:file */
export const EXPORT_FILES = ["metrics.csv", "metrics.json", "episodes.jsonl", "config.yaml", "tfevents"] as const;
export type ExportFile = (typeof EXPORT_FILES)[number];
export const exportParams = z.object({ id: idParam, file: z.enum(EXPORT_FILES) });
/** GET /api/compare/export/:file?ids=a,b — the compare view's runs (as many as it shows) */
export const MAX_EXPORT_RUNS = 200;
export const compareExportParams = z.object({ file: z.enum(EXPORT_FILES) });
export const compareExportQuery = z.strictObject({
  ids: z
    .string()
    .max(MAX_EXPORT_RUNS * 101)
    .transform((s) => s.split(",").map((x) => x.trim()).filter(Boolean))
    .pipe(z.array(idParam).min(1, "at least one run id").max(MAX_EXPORT_RUNS, `at most ${MAX_EXPORT_RUNS} runs`)),
});
export const episodeIdParams = z.object({ id: idParam, episodeId: intParam(1, Number.MAX_SAFE_INTEGER) });
