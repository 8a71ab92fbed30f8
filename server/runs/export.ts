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

export interface ExportedFile {
  filename: string;
  contentType: string;
  body: string | Uint8Array;
}

const PAGE = 5_000;

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

export async function exportRun(h: DbHandle, runId: string, file: ExportFile): Promise<ExportedFile> {
  const run = await h.prisma.run.findUnique({ where: { id: runId }, select: { name: true, config: true, startedAt: true, createdAt: true } });
  if (!run) throw notFound(`run ${runId}`);
  const base = `${safeName(run.name)}-${runId}`;
  switch (file) {
    case "metrics.csv": {
      const lines = ["key,step,update,wall,value"];
      for await (const rows of metricRows(h, runId)) for (const r of rows) lines.push(`${r.key},${r.step},${r.update},${r.wall},${r.value}`);
      return { filename: `${base}-metrics.csv`, contentType: "text/csv; charset=utf-8", body: lines.join("\n") + "\n" };
    }
    case "metrics.json": {
      const all: PointRow[] = [];
      for await (const rows of metricRows(h, runId)) all.push(...rows);
      return { filename: `${base}-metrics.json`, contentType: "application/json; charset=utf-8", body: JSON.stringify(all) };
    }
    case "episodes.jsonl": {
      const lines: string[] = [];
      for (let skip = 0; ; skip += PAGE) {
        const rows = await h.prisma.episode.findMany({ where: { runId }, orderBy: [{ update: "asc" }, { id: "asc" }], skip, take: PAGE, select: { phase: true, step: true, update: true, numChunks: true, record: true } });
        // numChunks tells sweep episodes of one sample apart (an import needs it back)
        for (const r of rows) lines.push(JSON.stringify({ phase: r.phase, step: r.step, update: r.update, numChunks: r.numChunks, record: parseJson<unknown>(r.record, null) }));
        if (rows.length < PAGE) break;
      }
      return { filename: `${base}-episodes.jsonl`, contentType: "application/x-ndjson; charset=utf-8", body: lines.length ? lines.join("\n") + "\n" : "" };
    }
    case "tfevents": {
      const start = (run.startedAt ?? run.createdAt).getTime() / 1000;
      const points: { key: string; step: number; wall: number; value: number }[] = [];
      for await (const rows of metricRows(h, runId)) for (const r of rows) points.push({ key: r.key, step: r.step, wall: start + r.wall, value: r.value });
      // in step order across tags, as a live writer appends them: TensorBoard's --inspect reports
      // any step lower than the one before as out of order (the rows come sorted by key)
      points.sort((a, b) => a.step - b.step || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      const host = os.hostname().replace(/[^\w.-]+/g, "_") || "qrag";
      return { filename: tfEventsFileName(start, host), contentType: "application/octet-stream", body: encodeTfEvents(points, start) };
    }
    case "config.yaml":
      return { filename: `${base}-config.yaml`, contentType: "application/yaml; charset=utf-8", body: YAML.stringify(parseJson<unknown>(run.config, {})) };
  }
}
