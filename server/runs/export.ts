/**
 * A run's files for download: every metric point (CSV or JSON, one row per key and step, with
 * update and wall time), every stored episode (JSONL, the engine's record plus where it came
 * from), the config (YAML, as the CLI reads it), and the scalars as a TensorBoard event file
 * (`tensorboard --logdir` reads it; wall times are the run's start plus the engine's clock).
 * Rows are read in pages so a long run does not hold the database for one huge query.
 */
import os from "node:os";
import YAML from "yaml";
import type { ExportFile } from "../../lib/contracts/index.ts";
import type { DbHandle } from "../db/client.ts";
import { notFound } from "./errors.ts";
import { parseJson } from "./dto.ts";
import { encodeTfEvents, tfEventsFileName } from "./tfevents.ts";
import tar from "tar-stream";

export interface ExportedFile {
  filename: string;
  contentType: string;
  body: string | Uint8Array;
}

const PAGE = 5_000;
const CSV = "text/csv; charset=utf-8";
const JSON_TYPE = "application/json; charset=utf-8";
const JSONL = "application/x-ndjson; charset=utf-8";
const YAML_TYPE = "application/yaml; charset=utf-8";

interface PointRow {
  key: string;
  step: number;
  update: number;
  wall: number;
  value: number;
}

async function* metricRows(h: DbHandle, runId: string): AsyncGenerator<PointRow[]> {
  for (let skip = 0; ; skip += PAGE) {
    const rows = await h.prisma.metricPoint.findMany({ where: { runId }, orderBy: [{ key: "asc" }, { step: "asc" }], skip, take: PAGE, select: { key: true, step: true, update: true, wall: true, value: true } });
    if (rows.length) yield rows;
    if (rows.length < PAGE) return;
  }
}

/** A name safe in a Content-Disposition header and on any file system. */
const safeName = (name: string) => name.replace(/[^\w.-]+/g, "_").slice(0, 80) || "run";

/** A CSV field: quoted when it holds a comma, quote or line break (run names are free text). */
const csvField = (s: string) => (/[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s);

interface ExportRun {
  id: string;
  name: string;
  config: string;
  startedAt: Date | null;
  createdAt: Date;
}
const exportRunSelect = { id: true, name: true, config: true, startedAt: true, createdAt: true } as const;

async function allPoints(h: DbHandle, runId: string): Promise<PointRow[]> {
  const all: PointRow[] = [];
  for await (const rows of metricRows(h, runId)) all.push(...rows);
  return all;
}

/** One JSON object per stored episode; `extra` fields first (the run, in a multi-run export). */
async function episodeLines(h: DbHandle, runId: string, extra: object = {}): Promise<string[]> {
  const lines: string[] = [];
  for (let skip = 0; ; skip += PAGE) {
    const rows = await h.prisma.episode.findMany({ where: { runId }, orderBy: [{ update: "asc" }, { id: "asc" }], skip, take: PAGE, select: { phase: true, step: true, update: true, numChunks: true, record: true } });
    // numChunks tells sweep episodes of one sample apart (an import needs it back)
    for (const r of rows) lines.push(JSON.stringify({ ...extra, phase: r.phase, step: r.step, update: r.update, numChunks: r.numChunks, record: parseJson<unknown>(r.record, null) }));
    if (rows.length < PAGE) return lines;
  }
}

/** The run's scalars as one TensorBoard event file, and its name. */
async function tfEventsOf(h: DbHandle, run: ExportRun): Promise<{ name: string; body: Buffer }> {
  const start = (run.startedAt ?? run.createdAt).getTime() / 1000;
  const points: { key: string; step: number; wall: number; value: number }[] = [];
  for await (const rows of metricRows(h, run.id)) for (const r of rows) points.push({ key: r.key, step: r.step, wall: start + r.wall, value: r.value });
  // in step order across tags, as a live writer appends them: TensorBoard's --inspect reports
  // any step lower than the one before as out of order (the rows come sorted by key)
  points.sort((a, b) => a.step - b.step || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const host = os.hostname().replace(/[^\w.-]+/g, "_") || "qrag";
  return { name: tfEventsFileName(start, host), body: encodeTfEvents(points, start) };
}

const CSV_HEADER = "key,step,update,wall,value";
const pointCsv = (r: PointRow) => `${r.key},${r.step},${r.update},${r.wall},${r.value}`;

export async function exportRun(h: DbHandle, runId: string, file: ExportFile): Promise<ExportedFile> {
  const run = await h.prisma.run.findUnique({ where: { id: runId }, select: exportRunSelect });
  if (!run) throw notFound(`run ${runId}`);
  const base = `${safeName(run.name)}-${runId}`;
  switch (file) {
    case "metrics.csv": {
      const lines = [CSV_HEADER];
      for await (const rows of metricRows(h, runId)) for (const r of rows) lines.push(pointCsv(r));
      return { filename: `${base}-metrics.csv`, contentType: CSV, body: lines.join("\n") + "\n" };
    }
    case "metrics.json":
      return { filename: `${base}-metrics.json`, contentType: JSON_TYPE, body: JSON.stringify(await allPoints(h, runId)) };
    case "episodes.jsonl": {
      const lines = await episodeLines(h, runId);
      return { filename: `${base}-episodes.jsonl`, contentType: JSONL, body: lines.length ? lines.join("\n") + "\n" : "" };
    }
    case "tfevents": {
      const ev = await tfEventsOf(h, run);
      return { filename: ev.name, contentType: "application/octet-stream", body: ev.body };
    }
    case "config.yaml":
      return { filename: `${base}-config.yaml`, contentType: YAML_TYPE, body: YAML.stringify(parseJson<unknown>(run.config, {})) };
  }
}

/**
 * The compare view's export: the same five files over several runs, each row or document naming
 * its run. CSV and JSONL rows gain run_id and run_name; JSON is one entry per run; the configs are
 * one YAML document each (a comment names the run); the event files travel in a tar, one folder
 * per run, which `tensorboard --logdir` shows as runs side by side.
 */
export async function exportRuns(h: DbHandle, ids: readonly string[], file: ExportFile): Promise<ExportedFile> {
  const found = new Map((await h.prisma.run.findMany({ where: { id: { in: [...ids] } }, select: exportRunSelect })).map((r) => [r.id, r]));
  const missing = ids.find((id) => !found.has(id));
  if (missing) throw notFound(`run ${missing}`);
  const runs = [...new Set(ids)].map((id) => found.get(id)!);
  const base = `compare-${runs.length}-runs`;
  switch (file) {
    case "metrics.csv": {
      const lines = [`run_id,run_name,${CSV_HEADER}`];
      for (const r of runs) for await (const rows of metricRows(h, r.id)) for (const p of rows) lines.push(`${r.id},${csvField(r.name)},${pointCsv(p)}`);
      return { filename: `${base}-metrics.csv`, contentType: CSV, body: lines.join("\n") + "\n" };
    }
    case "metrics.json": {
      const out: { id: string; name: string; points: PointRow[] }[] = [];
      for (const r of runs) out.push({ id: r.id, name: r.name, points: await allPoints(h, r.id) });
      return { filename: `${base}-metrics.json`, contentType: JSON_TYPE, body: JSON.stringify(out) };
    }
    case "episodes.jsonl": {
      const lines: string[] = [];
      for (const r of runs) lines.push(...(await episodeLines(h, r.id, { run_id: r.id, run_name: r.name })));
      return { filename: `${base}-episodes.jsonl`, contentType: JSONL, body: lines.length ? lines.join("\n") + "\n" : "" };
    }
    case "config.yaml": {
      const docs = runs.map((r) => {
        const doc = new YAML.Document(parseJson<unknown>(r.config, {}));
        doc.commentBefore = ` run ${r.name} (${r.id})`;
        return doc.toString();
      });
      return { filename: `${base}-configs.yaml`, contentType: YAML_TYPE, body: docs.join("---\n") };
    }
    case "tfevents": {
      const pack = tar.pack();
      const chunks: Buffer[] = [];
      pack.on("data", (c: unknown) => void chunks.push(c as Buffer));
      const done = new Promise<void>((resolve, reject) => (pack.on("end", resolve), pack.on("error", reject)));
      for (const r of runs) {
        const ev = await tfEventsOf(h, r);
        pack.entry({ name: `${safeName(r.name)}-${r.id}/${ev.name}`, mtime: r.startedAt ?? r.createdAt }, ev.body);
      }
      pack.finalize();
      await done;
      return { filename: `${base}-tfevents.tar`, contentType: "application/x-tar", body: Buffer.concat(chunks) };
    }
  }
}
