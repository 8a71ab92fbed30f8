/**
 * Framework-free REST plumbing: a handler is `(req: Request, params, deps) => body | Response`;
 * input is parsed with the contract's zod schemas, bad input answers 400 with FieldErrorsDto
 * (nothing written), ApiErrors map to their status, anything else to 500.
 */
import type { z } from "zod";
import type { FieldErrorsDto } from "../../lib/contracts/index.ts";
import type { DbHandle } from "../db/client.ts";
import { fieldIssues } from "../qrag/index.ts";
import { ApiError, badRequest, invalid } from "../runs/errors.ts";
import type { RunsDeps } from "../runs/service.ts";

/** What handlers reach: the database, who hears of run changes, and this node's workers. */
export interface ApiDeps extends RunsDeps {
  db: DbHandle;
  connectedWorkers(): string[];
  leaseMs: number;
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

export async function readJson(req: Request): Promise<unknown> {
  const text = await req.text();
  if (!text.trim()) return {};
  try {
    return JSON.parse(text);
  } catch (e) {
    throw badRequest("body is not valid JSON", { body: (e as Error).message });
  }
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
      console.error(`${req.method} ${new URL(req.url).pathname}:`, e);
      return json({ error: `internal error: ${(e as Error).message}` }, 500);
    }
  };
}
