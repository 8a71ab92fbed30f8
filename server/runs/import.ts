/**
 * Import: the files of a finished run (the reference's outputs or our own export) become one
 * read-only run of kind "imported" (status completed, no worker, nothing to resume), whose metric
 * points and episodes every view reads like any other run's.
 *
 * All files are parsed and checked first; any error answers 400 with one message per file
 * (file, line/record and field; never the file's contents) and nothing is written. Then the run,
 * its points and its episodes are written in one transaction, so a failing write leaves nothing.
 *
 * Metrics from several files are merged per (key, step), the more exact source winning:
 * metrics.json > metrics.csv > metrics.jsonl > event files (float32, no update count). Event file
 * wall times are made relative to the earliest event, which becomes the run's start.
 */
import { baseName, importFileKind, runListSelect, SUMMARY_KEYS, type ImportFileKind, type ImportRunBody, type ImportRunDto, type RunSummary } from "../../lib/contracts/index.ts";
import type { Db, DbHandle } from "../db/client.ts";
import { insertRows } from "../db/bulk-insert.ts";
import { newRunId } from "./service.ts";
import { badRequest } from "./errors.ts";
import { toRunDto } from "./dto.ts";
import { ImportFileError } from "./import-errors.ts";
import { parseConfigYaml, parseEpisodesJsonl, parseMetricsCsv, parseMetricsJson, parseMetricsJsonl, type ParsedConfig, type ParsedPoint } from "./import-exported.ts";
import { evalSeedName, metricKeyOfTag, parseEvalSeed, type ParsedEpisode } from "./import-reference.ts";
import type { RunNotifier } from "./notifier.ts";
import { readTfEvents, TfEventsError, type TfEventsFile } from "./tfevents-read.ts";

const INT_MAX = 2_147_483_647;
/** Bound parameters per INSERT: under SQLite's 32766 and PostgreSQL's 65535. */
const PARAMS_PER_INSERT = 9000;

/** Lower number = more exact (wins a (key, step) clash). */
const METRIC_PRIORITY: Partial<Record<ImportFileKind, number>> = { "metrics.json": 0, "metrics.csv": 1, "metrics.jsonl": 2, tfevents: 3 };
/** Eval points averaged from episodes: for eval keys no file has any point of. */
const FROM_EPISODES = 4;

/**
 * The eval series of imported episodes: per evaluation step, the mean of each eval score over its
 * episodes (several seed files at one step make one point), as the engine's evaluation logs them,
 * for each eval key that no imported file has a point of (a file's series is never mixed with
 * averages). Without it a run imported from the reference's eval_seed files had episodes but no
 * eval curve and an empty summary.
 */
function evalPointsOfEpisodes(episodes: readonly ParsedEpisode[], fromFiles: ReadonlySet<string>): ParsedPoint[] {
  const bySteps = new Map<number, ParsedEpisode[]>();
  for (const e of episodes) {
    if (e.phase !== "eval") continue;
    const at = bySteps.get(e.step);
    if (at) at.push(e);
    else bySteps.set(e.step, [e]);
  }
  const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const out: ParsedPoint[] = [];
  for (const [step, eps] of [...bySteps].sort((a, b) => a[0] - b[0])) {
    const update = eps[0].update;
    const r = eps.map((e) => e.record);
    const scores: [ParsedPoint["key"], number][] = [
      ["eval_return", mean(r.map((x) => x.return))],
      ["eval_coverage", mean(r.map((x) => x.metrics.coverage))],
      ["eval_f1", mean(r.map((x) => x.metrics.f1))],
      ["eval_precision", mean(r.map((x) => x.metrics.precision))],
      ["eval_recall", mean(r.map((x) => x.metrics.recall))],
      ["eval_steps", mean(r.map((x) => x.pred_idx.length))],
    ];
    for (const [key, value] of scores) if (!fromFiles.has(key) && Number.isFinite(value)) out.push({ key, step, update, wall: 0, value });
  }
  return out;
}

const ACCEPTED = "eval_seed*.jsonl, events.out.tfevents.*, *metrics.json|csv|jsonl, *episodes.jsonl, *config.yaml";

interface Decoded {
  name: string;
  kind: ImportFileKind;
  text?: string;
  bytes?: Buffer;
}

function decode(f: ImportRunBody["files"][number]): Decoded {
  const kind = importFileKind(f.name);
  if (!kind) throw new ImportFileError(f.name, {}, undefined, `not a file the importer reads (${ACCEPTED})`);
  const encoding = f.encoding ?? "utf8";
  if (encoding === "base64") {
    const b64 = f.content.replace(/\s+/g, "");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 === 1) throw new ImportFileError(f.name, {}, "content", "not valid base64");
    const bytes = Buffer.from(b64, "base64");
    return kind === "tfevents" ? { name: f.name, kind, bytes } : { name: f.name, kind, text: bytes.toString("utf8") };
  }
  if (kind === "tfevents") throw new ImportFileError(f.name, {}, "encoding", "an event file is binary: send it base64-encoded");
  return { name: f.name, kind, text: f.content };
}

interface Parsed {
  points: { source: number; order: number; file: string; list: ParsedPoint[] }[];
  episodes: ParsedEpisode[];
  config: ParsedConfig | null;
  startWall: number | null;
  warnings: string[];
}

/** Event files → points with wall times relative to the earliest event of all of them. */
function pointsOfEventFiles(files: { name: string; data: TfEventsFile }[], out: Parsed): void {
  const firstWall = (f: TfEventsFile) => (f.events.length ? Math.min(...f.events.map((e) => e.wall)) : Infinity);
  const sorted = [...files].sort((a, b) => firstWall(a.data) - firstWall(b.data));
  const start = Math.min(...sorted.map((f) => firstWall(f.data)));
  if (Number.isFinite(start)) out.startWall = start;
  sorted.forEach(({ name, data }, order) => {
    const list: ParsedPoint[] = [];
    let unmapped = 0;
    let nonFinite = 0;
    data.events.forEach((ev, i) => {
      for (const s of ev.scalars) {
        const key = metricKeyOfTag(s.tag);
        if (!key) unmapped++;
        else if (!Number.isFinite(s.value)) nonFinite++;
        else if (ev.step > INT_MAX) throw new ImportFileError(name, { record: i + 1 }, "step", `out of range (≤ ${INT_MAX})`);
        else list.push({ key, step: ev.step, update: 0, wall: Math.max(0, ev.wall - start), value: s.value });
      }
    });
    out.points.push({ source: METRIC_PRIORITY.tfevents!, order, file: name, list });
    if (data.truncatedTail) out.warnings.push(`${name}: the last record was cut short (a writer stopped mid-record) and was dropped`);
    if (unmapped) out.warnings.push(`${name}: ${unmapped} scalar value(s) under tags that map to no metric were skipped`);
    if (nonFinite) out.warnings.push(`${name}: ${nonFinite} non-finite value(s) skipped`);
    if (data.skippedValues) out.warnings.push(`${name}: ${data.skippedValues} non-scalar summary value(s) skipped`);
  });
}

/** Parses every file; throws a 400 naming each bad file. */
function parseAll(body: ImportRunBody): Parsed {
  const errors: Record<string, string> = {};
  const out: Parsed = { points: [], episodes: [], config: null, startWall: null, warnings: [] };
  const events: { name: string; data: TfEventsFile }[] = [];
  let configFile: string | null = null;
  const seeds = new Set(body.files.filter((f) => importFileKind(f.name) === "eval_seed").map((f) => evalSeedName(baseName(f.name)).seed));
  body.files.forEach((f, order) => {
    try {
      const d = decode(f);
      switch (d.kind) {
        case "tfevents":
          events.push({ name: d.name, data: readTfEvents(d.bytes!, d.name) });
          break;
        case "metrics.json":
        case "metrics.csv":
        case "metrics.jsonl": {
          const parse = { "metrics.json": parseMetricsJson, "metrics.csv": parseMetricsCsv, "metrics.jsonl": parseMetricsJsonl }[d.kind];
          out.points.push({ source: METRIC_PRIORITY[d.kind]!, order, file: d.name, list: parse(d.name, d.text!) });
          break;
        }
        case "episodes.jsonl":
          out.episodes.push(...parseEpisodesJsonl(d.name, d.text!));
          break;
        case "eval_seed": {
          const eps = parseEvalSeed(d.name, baseName(d.name), d.text!);
          // several seeds evaluate the same sample ids: keep them apart (the record keeps its id)
          const { seed } = evalSeedName(baseName(d.name));
          if (seeds.size > 1) for (const e of eps) e.sampleId = `${e.sampleId}@seed${seed}`;
          out.episodes.push(...eps);
          break;
        }
        case "config.yaml":
          if (configFile) throw new ImportFileError(d.name, {}, undefined, `a second config file (${configFile} is read already)`);
          configFile = d.name;
          out.config = parseConfigYaml(d.name, d.text!);
          break;
      }
    } catch (e) {
      if (e instanceof ImportFileError || e instanceof TfEventsError) errors[f.name] = e.message;
      else throw e;
    }
  });
  try {
    pointsOfEventFiles(events, out);
  } catch (e) {
    if (!(e instanceof ImportFileError)) throw e;
    errors[e.file] = e.message;
  }
  // one row per (phase, update, sample, haystack size): the Episode table's unique key
  const seen = new Map<string, ParsedEpisode>();
  for (const e of out.episodes) {
    const k = JSON.stringify([e.phase, e.update, e.sampleId, e.numChunks]);
    const first = seen.get(k);
    if (first && !errors[e.file]) errors[e.file] = new ImportFileError(e.file, { line: e.line }, importFileKind(e.file) === "eval_seed" ? "id" : "record.id", `duplicate episode (same phase, update and id as ${first.file} line ${first.line})`).message;
    seen.set(k, first ?? e);
  }
  const bad = Object.keys(errors);
  if (bad.length) throw badRequest(`invalid import: ${bad.length} file${bad.length === 1 ? "" : "s"} with errors`, errors);
  if (!out.points.length && !out.episodes.length) throw badRequest("invalid import: no metric points or episodes in these files", { files: "no metric points or episodes" });
  // a metrics file (our export, a qrag train folder) holds every series the run logged: only a
  // folder without one (the reference's eval_seed files and event files) gets averaged eval points
  const metricsFiles = out.points.some((s) => s.source !== METRIC_PRIORITY.tfevents);
  const derived = metricsFiles ? [] : evalPointsOfEpisodes(out.episodes, new Set(out.points.flatMap((s) => s.list.map((p) => p.key))));
  if (derived.length) out.points.push({ source: FROM_EPISODES, order: body.files.length, file: "(episodes)", list: derived });
  return out;
}

/** One point per (key, step), the most exact source winning; then by key and step. */
function mergePoints(parsed: Parsed): { points: ParsedPoint[]; shadowed: number } {
  const byKey = new Map<string, ParsedPoint & { source: number }>();
  let shadowed = 0;
  const sources = [...parsed.points].sort((a, b) => b.source - a.source || a.order - b.order);
  for (const s of sources) {
    for (const p of s.list) {
      const k = `${p.key}\u0000${p.step}`;
      const had = byKey.get(k);
      if (had && had.source !== s.source && had.source !== FROM_EPISODES) shadowed++;
      byKey.set(k, { ...p, source: s.source });
    }
  }
  const points = [...byKey.values()].map(({ source: _s, ...p }) => p).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.step - b.step));
  return { points, shadowed };
}

function summaryOf(points: readonly ParsedPoint[]): RunSummary {
  const summary: Record<string, number> = {};
  const latest = new Map<string, number>();
  for (const p of points) {
    if ((SUMMARY_KEYS as readonly string[]).includes(p.key) && p.step >= (latest.get(p.key) ?? -1)) {
      latest.set(p.key, p.step);
      summary[p.key] = p.value;
    }
    summary.update = Math.max(summary.update ?? 0, p.update);
    summary.step = Math.max(summary.step ?? 0, p.step);
  }
  return summary;
}

export async function importRun(h: DbHandle, body: ImportRunBody, deps: { notifier: RunNotifier }): Promise<ImportRunDto> {
  const parsed = parseAll(body);
  const { points, shadowed } = mergePoints(parsed);
  const warnings = [...parsed.warnings];
  if (shadowed) warnings.push(`${shadowed} point(s) also in a more exact metrics file were taken from that file`);
  const id = newRunId();
  const now = new Date();
  const wallSeconds = points.reduce((m, p) => Math.max(m, p.wall), 0);
  const startedAt = parsed.startWall !== null ? new Date(parsed.startWall * 1000) : now;
  const cfg = parsed.config;
  const files = body.files.map((f) => f.name);
  const notes = `Imported from ${files.length} file${files.length === 1 ? "" : "s"}: ${files.join(", ")}`.slice(0, 20_000);
  const row = await h.write((db) =>
    db.$transaction(
      async (tx) => {
        const run = await tx.run.create({
          data: {
            id,
            kind: "imported",
            name: (body.name ?? (cfg?.name ? `${cfg.name} (imported)` : "imported run")).slice(0, 200),
            status: "completed",
            config: JSON.stringify(cfg?.config ?? {}),
            envName: cfg?.envName ?? "unknown",
            task: cfg?.task ?? "unknown",
            tags: JSON.stringify(["imported"]),
            notes,
            createdAt: now,
            startedAt,
            finishedAt: new Date(startedAt.getTime() + wallSeconds * 1000),
            wallSeconds,
            summary: JSON.stringify(summaryOf(points)),
          },
          select: runListSelect,
        });
        const db = tx as unknown as Db;
        await insertRows(db, h.provider, "MetricPoint", ["runId", "key", "step", "update", "wall", "value"], points.map((p) => [id, p.key, p.step, p.update, p.wall, p.value]), { paramsPerStatement: PARAMS_PER_INSERT });
        await insertRows(
          db, h.provider, "Episode", ["runId", "seq", "phase", "step", "update", "sampleId", "numChunks", "coverage", "f1", "return", "record"],
          parsed.episodes.map((e) => [id, 0, e.phase, e.step, e.update, e.sampleId, e.numChunks, e.record.metrics.coverage, e.record.metrics.f1, e.record.return, JSON.stringify(e.record)]),
          { paramsPerStatement: PARAMS_PER_INSERT },
        );
        return run;
      },
      { maxWait: 20_000, timeout: 300_000 },
    ),
  );
  deps.notifier.changed([id]);
  return { run: toRunDto(row, new Map()), points: points.length, episodes: parsed.episodes.length, warnings };
}
