/**
 * What an OpenAI-compatible endpoint's failure means for the reader: retried (429, 5xx, a refused
 * connection), fatal for the run (the key refused, no such model, the endpoint down after the
 * retries), or one sample's counted failure (context, a bad request). Messages name the endpoint's
 * host and status; the server's own text is kept short and redacted, since servers quote keys
 * back ("Incorrect API key provided: sk-ab…yz").
 */
import { APIConnectionError, APIConnectionTimeoutError, APIError } from "openai";
import { shortText } from "../../../lib/contracts/short-text.ts";
import type { ReaderFailure } from "./reader.ts";

export interface Classified {
  kind: ReaderFailure | "format_unsupported";
  message: string;
  retry: boolean;
  /** Once the retries are spent (or at once when nothing is retried), no later call can succeed. */
  fatal: boolean;
  headers?: Headers;
}

/** The secret, and anything shaped like a key or a bearer token, removed; then short and printable. */
export function redact(text: string, secret: string): string {
  let t = secret.length >= 4 ? text.split(secret).join("[key]") : text;
  t = t.replace(/\bsk-[^\s"',]+/g, "[key]").replace(/Bearer\s+\S+/gi, "Bearer [key]");
  return shortText(t, 160);
}

const CONTEXT = /context|too long|maximum.*tokens|exceed/i;
const FORMAT = /response_format|json_schema/i;

/** `label`: who is calling ("reader", "agent model"), the start of every message. */
export function classifyEndpointError(e: unknown, host: string, secret: string, label = "reader"): Classified {
  const at = `${label} endpoint ${host}`;
  if (e instanceof APIConnectionTimeoutError) return { kind: "timeout", message: `${at}: the connection timed out`, retry: false, fatal: false };
  if (e instanceof APIConnectionError) {
    const code = /\b(E[A-Z]{3,})\b/.exec(String((e.cause as { cause?: unknown } | undefined)?.cause ?? e.cause ?? ""))?.[1];
    return { kind: "connection", message: `${at} unreachable${code ? ` (${code})` : ""}`, retry: true, fatal: true };
  }
  if (e instanceof APIError && e.status !== undefined) {
    const body = e.error as { message?: unknown; n_prompt_tokens?: unknown; n_ctx?: unknown } | undefined;
    const said = redact(typeof body?.message === "string" ? body.message : e.message, secret);
    const s = e.status;
    if (s === 401 || s === 403) return { kind: "auth", message: `${at} refused the key (${s}); set QRAG_READER_API_KEY`, retry: false, fatal: true };
    if (s === 404) return { kind: "bad_request", message: `${at}: no such model or path (404): ${said}`, retry: false, fatal: true };
    if (s === 429) return { kind: "rate_limit", message: `${at}: rate limited (429)`, retry: true, fatal: false, headers: e.headers };
    if (s === 408 || s === 409 || s >= 500) return { kind: "server", message: `${at}: server error (${s}): ${said}`, retry: true, fatal: false, headers: e.headers };
    if (FORMAT.test(said)) return { kind: "format_unsupported", message: `${at}: response_format refused (${s})`, retry: false, fatal: false };
    if (CONTEXT.test(said)) {
      const n = typeof body?.n_prompt_tokens === "number" && typeof body.n_ctx === "number" ? ` (${body.n_prompt_tokens} prompt tokens, window ${body.n_ctx})` : "";
      return { kind: "context", message: `${at}: the reader prompt exceeds the model's context window${n}`, retry: false, fatal: false };
    }
    return { kind: "bad_request", message: `${at}: request refused (${s}): ${said}`, retry: false, fatal: false };
  }
  if (e instanceof SyntaxError) return { kind: "unparseable", message: `${at}: the response is not valid JSON`, retry: false, fatal: false };
  throw e;
}
