/**
 * Read side of a run for the REST API: metric series (deterministically bucketed for a pixel
 * width), episodes, logs; and the workers list.
 */
import type { EpisodeDto, EpisodeRecord, EpisodesQuery, LogLineDto, MetricsDto, MetricsQuery, SeriesPoint, WorkerDto, XAxis } from "../../lib/contracts/index.ts";
import { episodeListSelect, logLineSelect } from "../../lib/contracts/index.ts";
import type { DbHandle } from "../db/client.ts";
import { notFound } from "./errors.ts";
import { parseJson } from "./dto.ts";

/**
 * Reduces a series sorted by x to at most `width` points: the x range is cut into `width` equal
 * buckets and each non-empty bucket gives its last point, with the bucket's min and max, so a
 * spike stays visible however long the run. The same input and width give the same output.
 * Series no longer than `width` come back unchanged.
 */
export function bucketSeries(points: readonly SeriesPoint[], width: number, x: XAxis = "step"): SeriesPoint[] {
  const w = Math.max(1, Math.floor(width));
  if (points.length <= w) return points.map((p) => ({ ...p }));
  const x0 = points[0][x];
  const span = points[points.length - 1][x] - x0;
  const out: SeriesPoint[] = [];
  let cur = -1;
  let acc: SeriesPoint | null = null;
  for (const p of points) {
    const b = span > 0 ? Math.min(w - 1, Math.floor(((p[x] - x0) / span) * w)) : 0;
    if (b !== cur || !acc) {
      if (acc) out.push(acc);
      cur = b;
      acc = { ...p, min: p.value, max: p.value };
    } else {
      acc = { step: p.step, update: p.update, wall: p.wall, value: p.value, min: Math.min(acc.min!, p.value), max: Math.max(acc.max!, p.value) };
    }
  }
  if (acc) out.push(acc);
  return out;
}

interface BucketRow {
  key: string;
  step: number;
  update: number;
  value: number;
  wall: number;
  mn: number | null;
  mx: number | null;
}

/**
 * bucketSeries on the step axis, in the database: only the last point of each bucket (with the
 * bucket's min and max) leaves it, so a 100k-point series costs one row per pixel instead of
 * 100k rows through the driver. Integer division gives the same buckets as bucketSeries (exactly,
 * where floating point could round at a boundary); series no longer than the width come back raw.
 */
async function bucketedBySteps(h: DbHandle, runId: string, keys: readonly string[] | undefined, width: number): Promise<Record<string, SeriesPoint[]>> {
  const w = Math.max(1, Math.floor(width));
  const params: unknown[] = [];
  const p = (v: unknown) => (params.push(v), h.provider === "postgresql" ? `$${params.length}` : "?");
  const keyFilter = (alias: string) => (keys?.length ? ` AND ${alias}."key" IN (${keys.map((k) => p(k)).join(",")})` : "");
  // placeholders are numbered in text order, so each use takes its own parameter; the width is
  // inlined (an integer we computed): a bound number can arrive as REAL, making the division inexact
  const sql = `
    WITH r AS (SELECT m."key", MIN(m."step") AS lo, MAX(m."step") - MIN(m."step") AS span, COUNT(*) AS n
               FROM "MetricPoint" m WHERE m."runId" = ${p(runId)}${keyFilter("m")} GROUP BY m."key"),
    b AS (SELECT x."key", MAX(x."step") AS ls, MIN(x."value") AS mn, MAX(x."value") AS mx
          FROM (SELECT m."key", m."step", m."value",
                       CASE WHEN ((m."step" - r.lo) * ${w}) / r.span >= ${w} THEN ${w - 1} ELSE ((m."step" - r.lo) * ${w}) / r.span END AS bucket
                FROM "MetricPoint" m JOIN r ON r."key" = m."key"
                WHERE m."runId" = ${p(runId)} AND r.n > ${w} AND r.span > 0) x
          GROUP BY x."key", x.bucket)
    SELECT m."key", m."step", m."update", m."value", m."wall", b.mn, b.mx
      FROM b JOIN "MetricPoint" m ON m."runId" = ${p(runId)} AND m."key" = b."key" AND m."step" = b.ls
    UNION ALL
    SELECT m."key", m."step", m."update", m."value", m."wall", NULL, NULL
      FROM "MetricPoint" m JOIN r ON r."key" = m."key"
      WHERE m."runId" = ${p(runId)} AND (r.n <= ${w} OR r.span = 0)
    ORDER BY 1, 2`;
  const rows = await h.prisma.$queryRawUnsafe<BucketRow[]>(sql, ...params);
  const byKey: Record<string, SeriesPoint[]> = {};
  for (const r of rows) {
    const pt: SeriesPoint = { step: Number(r.step), update: Number(r.update), wall: Number(r.wall), value: Number(r.value) };
    if (r.mn !== null && r.mx !== null) Object.assign(pt, { min: Number(r.mn), max: Number(r.mx) });
    (byKey[r.key] ??= []).push(pt);
  }
  return byKey;
}

export async function getMetrics(h: DbHandle, runId: string, q: MetricsQuery = {}): Promise<MetricsDto> {
  // lastSeq first: points written after it are replayed again by the stream, never missed
  const run = await h.prisma.run.findUnique({ where: { id: runId }, select: { lastSeq: true } });
  if (!run) throw notFound(`run ${runId}`);
  const x = q.x ?? "step";
  if (x === "step") {
    const series = await bucketedBySteps(h, runId, q.keys, q.width ?? 1000);
    for (const k of q.keys ?? []) series[k] ??= [];
    return { series, lastSeq: run.lastSeq };
  }
  const rows = await h.prisma.metricPoint.findMany({
    where: { runId, ...(q.keys?.length ? { key: { in: q.keys } } : {}) },
    select: { key: true, step: true, update: true, value: true, wall: true },
    orderBy: [{ key: "asc" }, { wall: "asc" }, { step: "asc" }],
  });
  const byKey: Record<string, SeriesPoint[]> = {};
  for (const r of rows) (byKey[r.key] ??= []).push({ step: r.step, update: r.update, wall: r.wall, value: r.value });
  for (const k of q.keys ?? []) byKey[k] ??= [];
  const series: Record<string, SeriesPoint[]> = {};
  for (const [k, pts] of Object.entries(byKey)) series[k] = bucketSeries(pts, q.width ?? 1000, x);
  return { series, lastSeq: run.lastSeq };
}

async function ensureRun(h: DbHandle, runId: string): Promise<void> {
  if (!(await h.prisma.run.findUnique({ where: { id: runId }, select: { id: true } }))) throw notFound(`run ${runId}`);
}

export async function listEpisodes(h: DbHandle, runId: string, q: EpisodesQuery = {}): Promise<EpisodeDto[]> {
  await ensureRun(h, runId);
  const rows = await h.prisma.episode.findMany({
    where: { runId, ...(q.phase ? { phase: q.phase } : {}), ...(q.numChunks ? { numChunks: q.numChunks } : {}) },
    orderBy: [{ update: "desc" }, { id: "desc" }],
    take: q.limit ?? 50,
    select: episodeListSelect,
  });
  return rows;
}

export async function getEpisode(h: DbHandle, runId: string, episodeId: number): Promise<EpisodeDto> {
  const r = await h.prisma.episode.findFirst({ where: { id: episodeId, runId }, select: { ...episodeListSelect, record: true } });
  if (!r) throw notFound(`episode ${episodeId} of run ${runId}`);
  const { record, ...row } = r;
  return { ...row, record: parseJson<EpisodeRecord | undefined>(record, undefined) };
}

export async function listLogs(h: DbHandle, runId: string, q: { limit?: number } = {}): Promise<LogLineDto[]> {
  await ensureRun(h, runId);
  const rows = await h.prisma.logLine.findMany({ where: { runId }, orderBy: { id: "desc" }, take: q.limit ?? 200, select: logLineSelect });
  return rows.reverse().map((r) => ({ ...r, at: r.at.toISOString() }));
}

/**
 * Workers seen by the database. `connected` (this node's sockets) decides who is online; without
 * it (another node's view) a worker counts as online when seen within two leases.
 */
export async function listWorkers(h: DbHandle, connected: ReadonlySet<string> | null, leaseMs: number): Promise<WorkerDto[]> {
  const rows = await h.prisma.worker.findMany({ orderBy: [{ lastSeen: "desc" }, { id: "asc" }] });
  const staleBefore = Date.now() - 2 * leaseMs;
  return rows.map((w) => {
    const online = connected ? connected.has(w.id) : w.status !== "offline" && w.lastSeen.getTime() >= staleBefore;
    return {
      id: w.id, name: w.name, backend: w.backend, device: w.device, host: w.host,
      status: online ? (w.runId ? "busy" : "idle") : "offline",
      lastSeen: w.lastSeen.toISOString(), runId: online ? w.runId : null,
    };
  });
}
