/**
 * POST /api/runs/import: the files of a finished run, from the reference implementation
 * (`eval_seed*.jsonl`, `events.out.tfevents.*`, its `config.yaml`) or from our own export
 * (GET /api/runs/:id/export/:file), become one read-only run of kind "imported". Which files are
 * read is decided by name (`importFileKind`), the same way in the browser's picker, the CLI
 * (`npm run import`) and the server.
 */
import { z } from "zod";
import type { RunDto } from "./dto.ts";

/** The import route's request-body limit (router.ts); other routes keep 4 MiB. */
export const IMPORT_MAX_BODY_BYTES = 64 * 1024 * 1024;
export const IMPORT_MAX_FILES = 200;
const NAME_MAX = 300;

export const IMPORT_FILE_KINDS = ["eval_seed", "tfevents", "metrics.json", "metrics.csv", "metrics.jsonl", "episodes.jsonl", "config.yaml"] as const;
export type ImportFileKind = (typeof IMPORT_FILE_KINDS)[number];

/** The last path segment ("run/tb_logs/events…" → "events…"). */
export const baseName = (name: string) => name.split(/[\\/]/).pop() ?? name;

/**
 * The kind of a file by its name, or null for files the importer does not read. Ours are
 * "<run>-<id>-metrics.csv" etc. (export.ts), or metrics.jsonl/episodes.jsonl of a `qrag train`
 * folder; the reference's eval logs are
 * `eval_seed{seed}_ns{num_sentences}.jsonl` (or `eval_seed{seed}.jsonl`).
 */
export function importFileKind(name: string): ImportFileKind | null {
  const b = baseName(name);
  if (/^eval_seed\d+(_ns\d+)?\.jsonl$/.test(b)) return "eval_seed";
  if (/tfevents/.test(b)) return "tfevents";
  if (/(^|[-_.])metrics\.json$/.test(b)) return "metrics.json";
  if (/(^|[-_.])metrics\.csv$/.test(b)) return "metrics.csv";
  if (/(^|[-_.])metrics\.jsonl$/.test(b)) return "metrics.jsonl";
  if (/(^|[-_.])episodes\.jsonl$/.test(b)) return "episodes.jsonl";
  if (/(^|[-_.])config\.ya?ml$/.test(b)) return "config.yaml";
  return null;
}

/** Binary files (event files) travel as base64, the rest as UTF-8 text. */
export const importEncodingOf = (kind: ImportFileKind): "utf8" | "base64" => (kind === "tfevents" ? "base64" : "utf8");

export const importFileSchema = z.strictObject({
  name: z
    .string()
    .min(1, "must not be empty")
    .max(NAME_MAX, `at most ${NAME_MAX} characters`)
    // eslint-disable-next-line no-control-regex
    .refine((n) => !/[\u0000-\u001f\u007f]/.test(n), "control characters are not allowed"),
  content: z.string().max(IMPORT_MAX_BODY_BYTES, "file too large"),
  encoding: z.enum(["utf8", "base64"]).optional(),
});
export type ImportFile = z.infer<typeof importFileSchema>;

export const importRunBody = z.strictObject({
  name: z.string().trim().min(1, "must not be empty").max(200, "at most 200 characters").optional(),
  files: z
    .array(importFileSchema)
    .min(1, "no files")
    .max(IMPORT_MAX_FILES, `at most ${IMPORT_MAX_FILES} files`)
    .refine((fs) => new Set(fs.map((f) => f.name)).size === fs.length, "file names must be unique"),
});
export type ImportRunBody = z.infer<typeof importRunBody>;

/** 201 answer. A 400 is a FieldErrorsDto whose fieldErrors are keyed by file name. */
export interface ImportRunDto {
  run: RunDto;
  points: number;
  episodes: number;
  /** What was read but not kept (unmapped tags, a truncated last record, …), without file contents. */
  warnings: string[];
}
