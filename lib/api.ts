/** Small fetch wrapper for the dashboard's REST API (same origin). */
import type { FieldErrorsDto } from "./contracts/index.ts";

/**
 * A failed answer of the REST API as the browser sees it (status, message, field errors). The
 * server's own error, thrown by its services and turned into such an answer, is `ApiError`
 * (server/runs/errors.ts).
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Field path ("envs.task") → message, from a 400 FieldErrorsDto. */
    readonly fieldErrors: Record<string, string> = {},
  ) {
    super(message);
    this.name = "HttpError";
  }
}

function isFieldErrors(v: unknown): v is FieldErrorsDto {
  return typeof v === "object" && v !== null && "fieldErrors" in v && typeof (v as FieldErrorsDto).fieldErrors === "object";
}

async function request<T>(method: string, url: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? { accept: "application/json" } : { "content-type": "application/json", accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    cache: "no-store",
  });
  // signed out (session expired, or revoked): back to the login page, then here again
  if (res.status === 401 && typeof window !== "undefined" && window.location.pathname !== "/login") {
    window.location.assign(`/login?next=${encodeURIComponent(window.location.pathname + window.location.search)}`);
  }
  const text = await res.text();
  let data: unknown = undefined;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!res.ok) {
    if (isFieldErrors(data)) throw new HttpError(res.status, data.error || `HTTP ${res.status}`, data.fieldErrors ?? {});
    const msg = typeof data === "object" && data !== null && "error" in data ? String((data as { error: unknown }).error) : typeof data === "string" && data ? data.slice(0, 300) : res.statusText;
    throw new HttpError(res.status, `${msg || "request failed"} (HTTP ${res.status})`);
  }
  return data as T;
}

export const apiGet = <T>(url: string, signal?: AbortSignal) => request<T>("GET", url, undefined, signal);
export const apiPost = <T>(url: string, body?: unknown) => request<T>("POST", url, body ?? {});
export const apiPatch = <T>(url: string, body: unknown) => request<T>("PATCH", url, body);
export const apiDelete = <T>(url: string) => request<T>("DELETE", url, {});

/** Builds "?a=1&b=2", leaving out empty values. */
export function qs(params: Record<string, string | number | undefined | null>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : "";
}
