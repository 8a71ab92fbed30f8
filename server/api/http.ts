/**
 * Framework-free REST plumbing: a handler is `(req: Request, ctx) => Promise<Response>`; input is
 * parsed with zod, bad input answers 400 with FieldErrorsDto (nothing written), ApiErrors map to
 * their status, anything else to 500.
 */
import { z } from "zod";
import type { FieldErrorsDto } from "../../lib/protocol.ts";
import { getDb, type DbHandle } from "../db/client.ts";
import { ApiError, badRequest } from "../runs/errors.ts";
import { issuesToFieldErrors } from "../runs/config.ts";

export interface Ctx {
  params: Record<string, string>;
}
export type Handler = (req: Request, ctx: Ctx) => Promise<Response>;

export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" } });
}

export function fieldErrorResponse(error: string, fieldErrors: Record<string, string>): Response {
  const body: FieldErrorsDto = { error, fieldErrors };
  return json(body, 400);
}

/** Parses with `schema`; throws a 400 naming each bad field (prefixed for query/params). */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const r = schema.safeParse(value);
  if (!r.success) {
    const fieldErrors = issuesToFieldErrors(r.error.issues);
    throw badRequest(`invalid ${what}: ${Object.keys(fieldErrors).join(", ")}`, fieldErrors);
  }
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

/** Wraps a handler body: database access, error mapping. */
export function handler(fn: (req: Request, ctx: Ctx, db: DbHandle) => Promise<unknown>, okStatus = 200): Handler {
  return async (req, ctx) => {
    try {
      const body = await fn(req, ctx, await getDb());
      return body instanceof Response ? body : json(body, okStatus);
    } catch (e) {
      if (e instanceof ApiError) {
        return e.fieldErrors ? fieldErrorResponse(e.message, e.fieldErrors) : json({ error: e.message }, e.status);
      }
      console.error(`${req.method} ${new URL(req.url).pathname}:`, e);
      return json({ error: `internal error: ${(e as Error).message}` }, 500);
    }
  };
}

// ---- shared query-string schemas ---------------------------------------------------------------
export const intParam = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
export const idParam = z.string().min(1).max(100).regex(/^[\w-]+$/, "invalid id");
