/**
 * /api/* on the dashboard's own HTTP server, in the same process and module graph as the
 * scheduler and the socket namespaces, so handlers get their dependencies passed in (ApiDeps)
 * rather than through a global seam. Next.js serves the pages only.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ApiDeps, Handler, Params } from "./http.ts";
import { json } from "./http.ts";
import { health, presets, schema, workers } from "./misc.ts";
import { queues } from "./queues.ts";
import { runAgentJobs, runAgentUpload, runSweeps, runSweepUpload, sweepAcross, sweepItem } from "./sweeps.ts";
import { episodeChunks } from "./chunks.ts";
import { runPlayground, runPlaygroundEpisodes, runPlaygroundSample } from "./playground.ts";
import { dashboardItem, dashboardsCollection } from "./dashboards.ts";
import { runsImport } from "./import.ts";
import { IMPORT_MAX_BODY_BYTES } from "../../lib/contracts/index.ts";
import { dataFiles } from "./data-files.ts";
import { auditList, authLogin, authLogout, authMe, tokensCollection, userItem, usersCollection, workerTokenRevoke, workerTokensCollection } from "./accounts.ts";
import { requiredRole } from "../auth/roles.ts";
import { audit } from "../auth/accounts.ts";
import { auditNeedsAnswer, auditOf } from "../auth/audit-routes.ts";
import { roleRank, shortText } from "../../lib/contracts/index.ts";
import { compareExport, runCancel, runClone, runEpisode, runEpisodes, runExport, runItem, runLogs, runMetrics, runResume, runsCollection, runsValidate } from "./runs.ts";

/** Request bodies larger than this (or the route's own maxBodyBytes) are refused (413) before they are read. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

type Methods = Partial<Record<"GET" | "POST" | "PATCH" | "DELETE", Handler>>;
/** Per-route options: a larger request-body limit than MAX_BODY_BYTES (imports carry whole runs). */
type RouteOptions = { maxBodyBytes?: number };

/** Path patterns (":name" is one segment) → handlers per method (first match wins). */
const ROUTES: [string, Methods, RouteOptions?][] = [
  ["/api/health", health],
  ["/api/presets", presets],
  ["/api/schema", schema],
  ["/api/workers", workers],
  ["/api/queues", queues],
  ["/api/runs", runsCollection],
  ["/api/runs/validate", runsValidate],
  ["/api/runs/import", runsImport, { maxBodyBytes: IMPORT_MAX_BODY_BYTES }],
  ["/api/runs/:id", runItem],
  ["/api/runs/:id/cancel", runCancel],
  ["/api/runs/:id/resume", runResume],
  ["/api/runs/:id/clone", runClone],
  ["/api/runs/:id/metrics", runMetrics],
  ["/api/runs/:id/episodes", runEpisodes],
  ["/api/runs/:id/episodes/:episodeId", runEpisode],
  ["/api/runs/:id/episodes/:episodeId/chunks", episodeChunks],
  ["/api/runs/:id/playground", runPlayground],
  ["/api/runs/:id/playground/episodes", runPlaygroundEpisodes],
  ["/api/runs/:id/playground/sample", runPlaygroundSample],
  ["/api/runs/:id/logs", runLogs],
  ["/api/runs/:id/export/:file", runExport],
  ["/api/compare/export/:file", compareExport],
  ["/api/runs/:id/sweeps", runSweeps],
  ["/api/runs/:id/sweeps/upload", runSweepUpload, { maxBodyBytes: IMPORT_MAX_BODY_BYTES }],
  ["/api/runs/:id/agent", runAgentJobs],
  ["/api/runs/:id/agent/upload", runAgentUpload, { maxBodyBytes: IMPORT_MAX_BODY_BYTES }],
  ["/api/sweeps/:id", sweepItem],
  ["/api/sweeps/:id/across", sweepAcross],
  ["/api/dashboards", dashboardsCollection],
  ["/api/dashboards/:id", dashboardItem],
  ["/api/data-files", dataFiles],
  // ---- accounts (roles per route: server/auth/roles.ts) ----
  ["/api/auth/login", authLogin],
  ["/api/auth/logout", authLogout],
  ["/api/auth/me", authMe],
  ["/api/tokens", tokensCollection],
  ["/api/users", usersCollection],
  ["/api/users/:id", userItem],
  ["/api/worker-tokens", workerTokensCollection],
  ["/api/worker-tokens/:id/revoke", workerTokenRevoke],
  ["/api/audit", auditList],
];

/** Every route's pattern and methods (the security tests walk them all). */
export const API_ROUTES: readonly { pattern: string; methods: string[] }[] = ROUTES.map(([pattern, methods]) => ({ pattern, methods: Object.keys(methods) }));

const compiled = ROUTES.map(([pattern, methods, options]) => {
  const names: string[] = [];
  const re = new RegExp(`^${pattern.replace(/:(\w+)/g, (_m, n: string) => (names.push(n), "([^/]+)"))}/?$`);
  return { pattern, re, names, methods, maxBodyBytes: options?.maxBodyBytes ?? MAX_BODY_BYTES };
});

function match(pathname: string): { pattern: string; methods: Methods; params: Params; maxBodyBytes: number } | null {
  for (const r of compiled) {
    const m = r.re.exec(pathname);
    if (!m) continue;
    const params: Params = {};
    r.names.forEach((n, i) => {
      try {
        params[n] = decodeURIComponent(m[i + 1]);
      } catch {
        params[n] = m[i + 1];
      }
    });
    return { pattern: r.pattern, methods: r.methods, params, maxBodyBytes: r.maxBodyBytes };
  }
  return null;
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | "too large"> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > limit) return "too large";
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Records a successful mutation in the audit trail (a failure to record is logged, not answered). */
async function auditCall(deps: ApiDeps, actor: string, pattern: string, method: string, params: Params, response: Response): Promise<void> {
  try {
    const answer = auditNeedsAnswer(pattern, method) ? await response.clone().json() : null;
    const entry = auditOf(actor, pattern, method, params, answer);
    if (entry) await audit(deps.db, entry);
  } catch (e) {
    console.error(`audit of ${method} ${pattern} failed: ${(e as Error).message}`);
  }
}

/** Answers an /api request; the caller routes only paths under /api/ here. */
export async function serveApi(req: IncomingMessage, res: ServerResponse, deps: ApiDeps): Promise<void> {
  const url = new URL(req.url ?? "/", "http://localhost");
  const method = (req.method ?? "GET").toUpperCase();
  const route = match(url.pathname);
  // accounts: who calls, and whether their role may (before the body is read)
  const principal = await deps.auth.identify(req.headers);
  const need = route?.methods[method as keyof Methods] ? requiredRole(route.pattern, method) : "viewer";
  let response: Response;
  if (need !== "public" && !principal) response = json({ error: "sign in first (or send Authorization: Bearer <token>)" }, 401);
  else if (need !== "public" && roleRank(principal!.role) < roleRank(need)) response = json({ error: `this needs the ${need} role (you are ${principal!.role})` }, 403);
  else if (!route) response = json({ error: `no API route ${shortText(url.pathname)}` }, 404);
  else if (!route.methods[method as keyof Methods]) {
    response = json({ error: `${shortText(method, 16)} is not allowed on ${shortText(url.pathname)}` }, 405);
    response.headers.set("allow", Object.keys(route.methods).join(", "));
  } else {
    const body = method === "GET" || method === "HEAD" ? undefined : await readBody(req, route.maxBodyBytes);
    if (body === "too large") {
      response = json({ error: `request body over ${route.maxBodyBytes} bytes` }, 413);
      response.headers.set("connection", "close"); // the rest of the body is not read
    } else {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
      const request = new Request(url, { method, headers, body: body?.length ? new Uint8Array(body) : undefined });
      const actor = principal?.name;
      response = await route.methods[method as keyof Methods]!(request, route.params, { ...deps, principal: principal ?? undefined, actor, address: deps.clientAddress(req) });
      if (actor && response.ok) await auditCall(deps, actor, route.pattern, method, route.params, response);
    }
  }
  const headers: Record<string, string> = {};
  response.headers.forEach((v, k) => (headers[k] = v));
  res.writeHead(response.status, headers);
  res.end(Buffer.from(await response.arrayBuffer()));
}
