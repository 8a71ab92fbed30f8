/**
 * Our own run files, as GET /api/runs/:id/export/:file writes them (server/runs/export.ts) or the
 * `qrag train` CLI leaves in its run folder: metrics (CSV, JSON array, or the CLI's metrics.jsonl),
 * episodes.jsonl (`{ phase, step, update, numChunks?, record }` per line; the CLI's lines carry
 * `type: "episode"` too) and config.yaml. Each parser throws an ImportFileError at the first bad
 * line or item.
 */
import YAML from "yaml";
import { z } from "zod";
import { episodeRecordSchema, metricKeySchema, type MetricKey } from "../../lib/contracts/index.ts";
import { ConfigError, describeConfig, validateConfig } from "../qrag/index.ts";
import { ImportFileError, numberedLines, parseJsonLine, zodFileError } from "./import-errors.ts";
import type { ParsedEpisode } from "./import-reference.ts";

/** Int columns are 32-bit on PostgreSQL. */
const INT_MAX = 2_147_483_647;
const count = z.number().int().min(0).max(INT_MAX);
const finite = z.number().refine(Number.isFinite, "expected a finite number");

export interface ParsedPoint {
  key: MetricKey;
  step: number;
  update: number;
  /** Training wall seconds (from the run's start). */
  wall: number;
  value: number;
}

const pointSchema = z.object({ key: metricKeySchema, step: count, update: count, wall: finite, value: finite });

export function parseMetricsJson(file: string, text: string): ParsedPoint[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new ImportFileError(file, {}, undefined, "not valid JSON");
  }
  if (!Array.isArray(data)) throw new ImportFileError(file, {}, undefined, "expected an array of metric points");
  return data.map((item, i) => {
    const r = pointSchema.safeParse(item);
    if (!r.success) throw zodFileError(file, { item: i + 1 }, r.error);
    return r.data;
  });
}

/** The CLI's metrics.jsonl: one metric event per line. */
export function parseMetricsJsonl(file: string, text: string): ParsedPoint[] {
  const out: ParsedPoint[] = [];
  for (const [line, raw] of numberedLines(text)) {
    const r = pointSchema.safeParse(parseJsonLine(file, line, raw));
    if (!r.success) throw zodFileError(file, line, r.error);
    out.push(r.data);
  }
  return out;
}

const CSV_COLUMNS = ["key", "step", "update", "wall", "value"] as const;

export function parseMetricsCsv(file: string, text: string): ParsedPoint[] {
  const lines = [...numberedLines(text)];
  if (!lines.length) return [];
  const header = lines[0][1].split(",").map((c) => c.trim());
  const col: Record<string, number> = {};
  for (const c of CSV_COLUMNS) {
    col[c] = header.indexOf(c);
    if (col[c] < 0) throw new ImportFileError(file, { line: lines[0][0] }, c, "missing column (expected key,step,update,wall,value)");
  }
  return lines.slice(1).map(([line, raw]) => {
    const cells = raw.split(",");
    if (cells.length !== header.length) throw new ImportFileError(file, { line }, undefined, `expected ${header.length} columns`);
    const num = (c: string) => {
      const s = cells[col[c]].trim();
      return s === "" ? NaN : Number(s);
    };
    const r = pointSchema.safeParse({ key: cells[col.key].trim(), step: num("step"), update: num("update"), wall: num("wall"), value: num("value") });
    if (!r.success) throw zodFileError(file, line, r.error);
    return r.data;
  });
}

const episodeLine = z.object({
  phase: z.enum(["train", "eval"]),
  step: count,
  update: count,
  numChunks: count.optional(),
  record: episodeRecordSchema,
});

export function parseEpisodesJsonl(file: string, text: string): ParsedEpisode[] {
  const out: ParsedEpisode[] = [];
  for (const [line, raw] of numberedLines(text)) {
    const r = episodeLine.safeParse(parseJsonLine(file, line, raw));
    if (!r.success) throw zodFileError(file, line, r.error);
    const e = r.data;
    if (e.record.id.length > 200) throw new ImportFileError(file, { line }, "record.id", "expected at most 200 characters");
    out.push({ file, line, phase: e.phase, step: e.step, update: e.update, numChunks: e.numChunks ?? 0, sampleId: e.record.id, record: e.record });
  }
  return out;
}

export interface ParsedConfig {
  /** Validated by the engine when it is one of our configs; else the tree as read (the reference's Hydra config). */
  config: unknown;
  envName: string;
  task: string;
  name: string | null;
}

const label = (v: unknown) => (typeof v === "string" && /^[\w.+-]{1,60}$/.test(v) ? v : null);

export function parseConfigYaml(file: string, text: string): ParsedConfig {
  let tree: unknown;
  try {
    tree = YAML.parse(text, { maxAliasCount: 100 });
  } catch (e) {
    // YAMLParseError's message quotes the offending line: keep only its position
    const line = (e as { linePos?: { line: number }[] }).linePos?.[0]?.line;
    throw new ImportFileError(file, line ? { line } : {}, undefined, "not valid YAML");
  }
  if (typeof tree !== "object" || tree === null || Array.isArray(tree)) throw new ImportFileError(file, {}, undefined, "expected a mapping of config keys");
  try {
    const config = validateConfig(tree);
    const d = describeConfig(config);
    return { config, envName: d.envName, task: d.task, name: d.defaultName };
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    const envs = (tree as { envs?: Record<string, unknown> }).envs ?? {};
    return { config: tree, envName: label(envs.name) ?? "unknown", task: label(envs.task) ?? "unknown", name: label((tree as { name?: unknown }).name) };
  }
}
