/**
 * The launch form's resource request: the fields as text while they are edited, and the request
 * they make, checked with the contract's own schema (lib/contracts/queues.ts) so that each error
 * names its field ("resources.gpus") exactly as the server's 400 would.
 */
import { RESOURCE_FIELDS, RESOURCE_LIMITS, resourceRequest, type ResourceKey, type ResourceRequest } from "./contracts/index.ts";

export type ResourceDraft = Partial<Record<ResourceKey, string>>;

/** A request (a queue's defaults, a cloned run's) as the form's text fields. */
export function resourceDraft(r: ResourceRequest | undefined): ResourceDraft {
  const out: ResourceDraft = {};
  for (const { key } of RESOURCE_FIELDS) if (r?.[key] !== undefined) out[key] = String(r[key]);
  return out;
}

/** The request the fields make (blank fields left out: the queue's default applies), or an error per field path. */
export function resourceRequestOf(d: ResourceDraft): { request: ResourceRequest; errors: Record<string, string> } {
  const raw: Record<string, unknown> = {};
  for (const { key, kind } of RESOURCE_FIELDS) {
    const text = d[key]?.trim();
    if (!text) continue;
    // a count that is not a number stays text: the schema answers "expected number" for it
    raw[key] = kind === "count" && /^[+-]?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(text) ? Number(text) : text;
  }
  const r = resourceRequest.safeParse(raw);
  if (r.success) return { request: r.data, errors: {} };
  const errors: Record<string, string> = {};
  for (const issue of r.error.issues) {
    const p = `resources.${issue.path.join(".")}`;
    errors[p] ??= issue.code === "invalid_type" ? "a whole number" : issue.message;
  }
  return { request: {}, errors };
}

/** "0 … 64" for a count's hint. */
export function resourceBounds(key: ResourceKey): string | undefined {
  const b = (RESOURCE_LIMITS as Record<string, { min: number; max: number }>)[key];
  return b ? `${b.min} … ${b.max}` : undefined;
}
