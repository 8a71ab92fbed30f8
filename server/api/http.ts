/**
 * Framework-free REST plumbing: a handler is `(req: Request, params, deps) => body | Response`;
 * input is parsed with the contract's zod schemas, bad input answers 400 with FieldErrorsDto
 * (nothing written), ApiErrors map to their status, anything else to 500.
 */
import type { IncomingMessage } from "node:http";
import type { z } from "zod";
import type { FieldErrorsDto } from "../../lib/contracts/index.ts";
import type { DbHandle } from "../db/client.ts";
import { fieldIssues } from "../qrag/index.ts";
import { ApiError, badRequest, invalid } from "../runs/errors.ts";
import type { ListCache } from "../runs/list-cache.ts";
import type { RunsDeps } from "../runs/service.ts";
import type { Principal } from "../auth/accounts.ts";
import type { AuthGate } from "../auth/gate.ts";
import type { PlaygroundPool } from "../playground/pool.ts";
import { JSON_MAX_DEPTH, jsonDepth, loneSurrogateAt } from "./json-body.ts";

/** What handlers reach: the database, who hears of run changes, and this node's workers. */
export interface ApiDeps extends RunsDeps {
  db: DbHandle;
  /** This node's workers; null when other nodes may hold some (the database's Worker rows tell). */
  connectedWorkers(): string[] | null;
  leaseMs: number;
  // ---- accounts (server/auth) ----
  auth: AuthGate;
  /** This request's caller (set per request by the router). */
  principal?: Principal;
  /** The client's address (set per request by the router; behind trusted proxies, from X-Forwarded-For). */
  address?: string;
  /** How the router finds the client's address (server/http/client-address.ts). */
  clientAddress(req: IncomingMessage): string;
  /** Disconnects the live sockets of a revoked worker token. */
  revokeWorkerToken(id: number): void;
  /** Disconnects the /ui sockets in these rooms (server/auth/gate.ts uiRoom). */
  endUiSockets(rooms: string[]): void;
  /** Shares GET /api/runs answers between identical concurrent queries (server/runs/list-cache.ts). */
  runsList?: ListCache;
  /** The playground's engine processes and the runs folder its checkpoints must be in (absent: 503). */
  playground?: { pool: PlaygroundPool; runsDir: string };
  /** Dashboard nodes sharing the database (with the PostgreSQL adapter), this one included. */
  nodes?: () => Promise<number>;
}

export type Params = Record<string, string>;
export type Handler = (req: Request, params: Params, deps: ApiDeps) => Promise<Response>;

export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" } });
}

/** Parses with `schema`; throws a 400 naming each bad field. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw invalid(what, fieldIssues(r.error));
  return r.data;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The body as JSON: invalid UTF-8, invalid JSON, nesting deeper than JSON_MAX_DEPTH and unpaired
 * surrogates (which no database text column takes) answer 400. Messages give a position or a field, never the body's text.
 */
export async function readJson(req: Request): Promise<unknown> {
  let text: string;
  try {
    text = utf8.decode(await req.arrayBuffer());
  } catch {
    throw badRequest("body is not valid UTF-8", { body: "not valid UTF-8" });
  }
  if (!text.trim()) return {};
  // before parsing: JSON.parse, zod and the checks below would all walk a deep body
  if (jsonDepth(text, JSON_MAX_DEPTH) > JSON_MAX_DEPTH) throw badRequest(`body nests deeper than ${JSON_MAX_DEPTH} levels`, { body: `nests deeper than ${JSON_MAX_DEPTH} levels` });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const at = /position (\d+)/.exec((e as Error).message)?.[1];
    throw badRequest("body is not valid JSON", { body: `not valid JSON${at ? ` (at character ${at})` : ""}` });
  }
  const at = loneSurrogateAt(value);
  if (at) throw badRequest(`invalid body: ${at}`, { [at]: "contains an unpaired surrogate (not valid Unicode text)" });
  return value;
}

export function queryOf(req: Request): Record<string, string> {
  return Object.fromEntries(new URL(req.url).searchParams.entries());
}

/** Wraps a handler body: error mapping, JSON answers. */
export function handler(fn: (req: Request, params: Params, deps: ApiDeps) => Promise<unknown>, okStatus = 200): Handler {
  return async (req, params, deps) => {
    try {
      const body = await fn(req, params, deps);
      return body instanceof Response ? body : json(body, okStatus);
    } catch (e) {
      if (e instanceof ApiError) {
        const body: FieldErrorsDto | { error: string } = e.fieldErrors ? { error: e.message, fieldErrors: e.fieldErrors } : { error: e.message };
        return json(body, e.status);
      }
      // details go to the server log only: a driver's message can quote the query and its data
      const ref = Math.random().toString(36).slice(2, 10);
      console.error(`${req.method} ${new URL(req.url).pathname} [${ref}]:`, e);
      return json({ error: `internal error (reference ${ref} in the server log)` }, 500);
    }
  };
}
