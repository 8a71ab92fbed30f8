/** REST handlers for /api/runs and /api/runs/:id/... (bound to paths in router.ts). */
import {
  cloneRunBody, compareExportParams, compareExportQuery, createRunBody, episodeIdParams, episodesQuery, exportParams, logsQuery, metricsQuery, patchRunBody, runIdParams, runListQuery, validateConfigBody,
} from "../../lib/contracts/index.ts";
import type { ValidatedConfigDto } from "../../lib/contracts/index.ts";
import { cancelRun, cloneRun, createRun, getRun, listRuns, patchRun, resumeRun, runConfigFrom } from "../runs/service.ts";
import { getEpisode, getMetrics, listEpisodes, listLogs } from "../runs/queries.ts";
import { exportRun, exportRuns, type ExportedFile } from "../runs/export.ts";
import { ApiError, badRequest, fieldErrorsOf } from "../runs/errors.ts";
import { fieldIssues } from "../qrag/index.ts";
import { handler, parseWith, queryOf, readJson, type Params } from "./http.ts";

const idOf = (params: Params) => parseWith(runIdParams, params, "run id").id;

export const runsCollection = {
  GET: handler(async (req, _p, d) => {
    const query = parseWith(runListQuery, queryOf(req), "query");
    if (!d.runsList) return listRuns(d.db, query);
    // encoded once for all who share it
    const body = await d.runsList.get(JSON.stringify(query), async () => new TextEncoder().encode(JSON.stringify(await listRuns(d.db, query))));
    return new Response(body, { headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" } });
  }),
  POST: handler(async (req, _p, d) => {
    const raw = await readJson(req);
    const body = createRunBody.safeParse(raw);
    if (!body.success) {
      // name the config's bad fields in the same answer as the body's
      let fieldErrors = fieldErrorsOf(fieldIssues(body.error));
      const config = (raw as { config?: unknown } | null)?.config;
      if (config !== undefined && !Object.keys(fieldErrors).some((k) => k === "config" || k.startsWith("config."))) {
        try {
          runConfigFrom({ config }, d.dataRoot);
        } catch (e) {
          // spread, not Object.assign: a "__proto__" field path must stay an own key
          if (e instanceof ApiError && e.fieldErrors) fieldErrors = { ...e.fieldErrors, ...fieldErrors };
        }
      }
      throw badRequest(`invalid body: ${Object.keys(fieldErrors).join(", ")}`, fieldErrors);
    }
    return createRun(d.db, body.data, d);
  }, 201),
};

/** The launch form's live check: the create pipeline without the write (200 with the verdict). */
export const runsValidate = {
  POST: handler(async (req, _p, d): Promise<ValidatedConfigDto> => {
    const body = parseWith(validateConfigBody, await readJson(req), "body");
    try {
      return { ok: true, config: runConfigFrom(body, d.dataRoot) };
    } catch (e) {
      if (e instanceof ApiError && e.fieldErrors) return { ok: false, error: e.message, fieldErrors: e.fieldErrors };
      throw e;
    }
  }),
};

export const runItem = {
  GET: handler(async (_req, p, d) => getRun(d.db, idOf(p))),
  PATCH: handler(async (req, p, d) => patchRun(d.db, idOf(p), parseWith(patchRunBody, await readJson(req), "body"), d)),
};

export const runCancel = { POST: handler(async (_req, p, d) => cancelRun(d.db, idOf(p), d)) };
export const runResume = { POST: handler(async (_req, p, d) => resumeRun(d.db, idOf(p), d)) };
export const runClone = { POST: handler(async (req, p, d) => cloneRun(d.db, idOf(p), parseWith(cloneRunBody, await readJson(req), "body"), d), 201) };
export const runMetrics = { GET: handler(async (req, p, d) => getMetrics(d.db, idOf(p), parseWith(metricsQuery, queryOf(req), "query"))) };
export const runEpisodes = { GET: handler(async (req, p, d) => listEpisodes(d.db, idOf(p), parseWith(episodesQuery, queryOf(req), "query"))) };
export const runEpisode = {
  GET: handler(async (_req, p, d) => {
    const { id, episodeId } = parseWith(episodeIdParams, p, "episode id");
    return getEpisode(d.db, id, episodeId);
  }),
};
export const runLogs = { GET: handler(async (req, p, d) => listLogs(d.db, idOf(p), parseWith(logsQuery, queryOf(req), "query"))) };

/** A run's files for download (metrics CSV/JSON, episodes JSONL, config YAML). */
/** The export's answer: a download named for its content. */
const download = (f: ExportedFile) =>
  new Response(typeof f.body === "string" ? f.body : new Uint8Array(f.body), { headers: { "content-type": f.contentType, "content-disposition": `attachment; filename="${f.filename}"`, "cache-control": "no-store" } });

export const compareExport = {
  GET: handler(async (req, p, d) => {
    const { file } = parseWith(compareExportParams, p, "export");
    const { ids } = parseWith(compareExportQuery, queryOf(req), "query");
    return download(await exportRuns(d.db, ids, file));
  }),
};

export const runExport = {
  GET: handler(async (_req, p, d) => {
    const { id, file } = parseWith(exportParams, p, "export");
    return download(await exportRun(d.db, id, file));
  }),
};
