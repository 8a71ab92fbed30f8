/** Errors the run services throw; the REST layer maps them to status codes and FieldErrorsDto. */
import { SHORT_TEXT_MAX, shortText } from "../../lib/contracts/short-text.ts";
import type { ConfigIssue } from "../qrag/index.ts";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly fieldErrors?: Record<string, string>,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

// ids come from the URL: repeated in their short, printable form only
export const notFound = (what: string) => new ApiError(404, `${shortText(what, 2 * SHORT_TEXT_MAX)} not found`);
export const conflict = (message: string) => new ApiError(409, message);
export const badRequest = (message: string, fieldErrors: Record<string, string>) => new ApiError(400, message, fieldErrors);

/** Issues → { "config.envs.task": message } (the first message per path). */
export function fieldErrorsOf(issues: readonly ConfigIssue[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const i of issues) {
    const key = i.path || "body";
    // defined, not assigned: `out["__proto__"] = …` would set the prototype and drop the field
    if (!Object.hasOwn(out, key)) Object.defineProperty(out, key, { value: i.message, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** A 400 naming every field of `issues`, summarised as "invalid <what>: a, b". */
export function invalid(what: string, issues: readonly ConfigIssue[]): ApiError {
  const fieldErrors = fieldErrorsOf(issues);
  return badRequest(`invalid ${what}: ${Object.keys(fieldErrors).join(", ")}`, fieldErrors);
}
