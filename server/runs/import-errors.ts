/**
 * Errors of an import, each naming the file, the line (or event record) and the field, e.g.
 * `eval_seed1.jsonl line 17: pred_idx: expected array of integers`. File contents are untrusted
 * and never echoed: messages come from our schemas, not from the data (no JSON/YAML parser text,
 * which quotes the input).
 */
import type { z } from "zod";

export class ImportFileError extends Error {
  constructor(
    readonly file: string,
    where: { line?: number; record?: number; item?: number },
    field: string | undefined,
    why: string,
  ) {
    const at = where.line !== undefined ? ` line ${where.line}` : where.record !== undefined ? ` record ${where.record}` : where.item !== undefined ? ` item ${where.item}` : "";
    super(`${file}${at}: ${field ? `${field}: ` : ""}${why}`);
    this.name = "ImportFileError";
  }
}

/** A zod issue as text built from the schema only (never the value it saw). */
function issueText(i: z.core.$ZodIssue): string {
  switch (i.code) {
    case "invalid_type":
      // zod's own message (never the input's value) tells an absent field from a wrong one
      return /received undefined$/.test(i.message) ? "missing" : `expected ${i.expected === "int" ? "an integer" : i.expected}`;
    case "too_small":
      return i.origin === "array" ? `expected at least ${String(i.minimum)} items` : i.origin === "string" ? `expected at least ${String(i.minimum)} characters` : `must be ≥ ${String(i.minimum)}`;
    case "too_big":
      return i.origin === "array" ? `expected at most ${String(i.maximum)} items` : i.origin === "string" ? `expected at most ${String(i.maximum)} characters` : `must be ≤ ${String(i.maximum)}`;
    case "invalid_value":
      return `expected one of ${i.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "invalid_union":
      return "expected a value of another type";
    case "custom":
      return i.message;
    default:
      return "invalid value";
  }
}

/** The first issue of a failed parse, as an ImportFileError at `line` (fields under `prefix`). */
export function zodFileError(file: string, where: number | { item: number }, error: z.ZodError, prefix = ""): ImportFileError {
  const i = error.issues[0];
  const field = [prefix, ...i.path.map(String)].filter(Boolean).join(".");
  return new ImportFileError(file, typeof where === "number" ? { line: where } : where, field || undefined, issueText(i));
}

/** Non-empty lines with their 1-based numbers. */
export function* numberedLines(text: string): Generator<[number, string]> {
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) if (lines[i].trim()) yield [i + 1, lines[i]];
}

/** JSON.parse of one line; its own error text quotes the input, so it is replaced. */
export function parseJsonLine(file: string, line: number, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ImportFileError(file, { line }, undefined, "not valid JSON");
  }
}
