/** REST handlers for /api/runs and /api/runs/:id/... (bound by the route files under app/api/runs). */
import { z } from "zod";
import { RUN_LIST_SORTS, RUN_STATUSES, type RunStatus } from "../../lib/protocol.ts";
import { cancelRun, cloneRun, createRun, getRun, listRuns, patchRun, resumeRun } from "../runs/service.ts";
import { getEpisode, getMetrics, listEpisodes, listLogs, listSweep } from "../runs/queries.ts";
import { ApiError, badRequest } from "../runs/errors.ts";
import { issuesToFieldErrors, validateRunConfig } from "../runs/config.ts";
import { handler, idParam, intParam, parseWith, queryOf, readJson } from "./http.ts";

const tags = z.array(z.string().trim().min(1, "empty tag").max(64, "at most 64 characters")).max(50, "at most 50 tags");
const notes = z.string().max(20_000, "at most 20000 characters");
const name = z.string().trim().min(1, "must not be empty").max(200, "at most 200 characters");
const overrides = z.array(z.string().max(2000)).max(200);

const createBody = z.strictObject({
  name: name.optional(),
  preset: z.string().min(1).max(100).regex(/^[\w.-]+$/, "invalid preset name").optional(),
  config: z.unknown().optional(),
  overrides: overrides.optional(),
  tags: tags.optional(),
  notes: notes.optional(),
  parentId: idParam.optional(),
});

const listQuery = z.strictObject({
  status: z
    .string()
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
  sort: z.enum(RUN_LIST_SORTS).optional(),
  order: z.enum(["asc", "desc"]).optional(),
  limit: intParam(1, 5000).optional(),
  offset: intParam(0, 10_000_000).optional(),
});

const patchBody = z.strictObject({ name: name.optional(), tags: tags.optional(), notes: notes.optional() });
const cloneBody = z.strictObject({ config: z.record(z.string(), z.unknown()).optional(), overrides: overrides.optional(), name: name.optional(), tags: tags.optional(), notes: notes.optional() });

const idOf = (params: Record<string, string>) => parseWith(z.object({ id: idParam }), params, "run id").id;

export const runsCollection = {
  GET: handler(async (req, _ctx, db) => listRuns(db, parseWith(listQuery, queryOf(req), "query"))),
  POST: handler(async (req, _ctx, db) => {
    const raw = await readJson(req);
    const body = createBody.safeParse(raw);
    if (!body.success) {
      // name the config's bad fields in the same answer as the body's
      const fieldErrors = issuesToFieldErrors(body.error.issues);
      const config = (raw as { config?: unknown } | null)?.config;
      if (config !== undefined && !Object.keys(fieldErrors).some((k) => k === "config" || k.startsWith("config."))) {
        try {
          validateRunConfig(config);
        } catch (e) {
          if (e instanceof ApiError && e.fieldErrors) Object.assign(fieldErrors, e.fieldErrors, fieldErrors);
        }
      }
      throw badRequest(`invalid body: ${Object.keys(fieldErrors).join(", ")}`, fieldErrors);
    }
    return createRun(db, body.data);
  }, 201),
};

export const runItem = {
  GET: handler(async (_req, ctx, db) => getRun(db, idOf(ctx.params))),
  PATCH: handler(async (req, ctx, db) => {
    const id = idOf(ctx.params);
    return patchRun(db, id, parseWith(patchBody, await readJson(req), "body"));
  }),
};

export const runCancel = { POST: handler(async (_req, ctx, db) => cancelRun(db, idOf(ctx.params))) };
export const runResume = { POST: handler(async (_req, ctx, db) => resumeRun(db, idOf(ctx.params))) };
export const runClone = {
  POST: handler(async (req, ctx, db) => {
    const id = idOf(ctx.params);
    return cloneRun(db, id, parseWith(cloneBody, await readJson(req), "body"));
  }, 201),
};

const metricsQuery = z.strictObject({
  keys: z
    .string()
    .max(2000)
    .optional()
    .transform((s) => (s ? s.split(",").map((k) => k.trim()).filter(Boolean) : undefined)),
  width: intParam(1, 20_000).optional(),
  x: z.enum(["step", "wall"]).optional(),
});
export const runMetrics = { GET: handler(async (req, ctx, db) => getMetrics(db, idOf(ctx.params), parseWith(metricsQuery, queryOf(req), "query"))) };

const episodesQuery = z.strictObject({ limit: intParam(1, 1000).optional(), phase: z.enum(["train", "eval"]).optional() });
export const runEpisodes = { GET: handler(async (req, ctx, db) => listEpisodes(db, idOf(ctx.params), parseWith(episodesQuery, queryOf(req), "query"))) };
export const runEpisode = {
  GET: handler(async (_req, ctx, db) => getEpisode(db, idOf(ctx.params), parseWith(z.object({ episodeId: intParam(1, Number.MAX_SAFE_INTEGER) }), ctx.params, "episode id").episodeId)),
};

const logsQuery = z.strictObject({ limit: intParam(1, 5000).optional() });
export const runLogs = { GET: handler(async (req, ctx, db) => listLogs(db, idOf(ctx.params), parseWith(logsQuery, queryOf(req), "query"))) };
export const runSweep = { GET: handler(async (_req, ctx, db) => listSweep(db, idOf(ctx.params))) };
