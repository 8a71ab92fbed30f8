/**
 * Read side of a run for the REST API: metric series (bucketed for a pixel width by the one rule
 * the browser applies too), episodes, logs; and the workers list.
 */
import type { AgentSample, EpisodeDto, EpisodeRecord, EpisodesQuery, LogLineDto, MetricsDto, MetricsQuery, SeriesPoint, WorkerDto } from "../../lib/contracts/index.ts";
import { AGENT_PHASE, bucketSeries, bucketWidth, episodeListSelect, logLineSelect } from "../../lib/contracts/index.ts";
import type { DbHandle } from "../db/client.ts";
import { placeholder } from "../db/bulk-insert.ts";
import { notFound } from "./errors.ts";
import { parseJson } from "./dto.ts";

/**
 * bucketSeries (lib/contracts/series-buckets.ts) on the step axis, in the database: per key, the
 * last step first; a series whose bucket width is over one step is then grouped by bucket there
 * (integer division: steps are integers and the width a power of two, so these are bucketSeries'
 * buckets exactly), and only each bucket's last point (with the bucket's min and max) is read back
 * — one row per pixel instead of 100k through the driver. Narrower series come back raw, as
 * bucketSeries gives them. The numbers inlined in the SQL are integers read from the database or
 * computed here (a bound number can arrive as REAL, making the division inexact); text goes in as
 * parameters. Each query is driven by the (runId, key, step) index.
 */
async function bucketedBySteps(h: DbHandle, runId: string, keys: readonly string[] | undefined, width: number): Promise<Record<string, SeriesPoint[]>> {
  const ph = (i: number) => placeholder(h.provider, i);
  const keyList = keys?.length ? ` AND "key" IN (${keys.map((_, i) => ph(i + 2)).join(",")})` : "";
  const ranges = await h.prisma.$queryRawUnsafe<{ key: string; hi: number | bigint }[]>(
    `SELECT "key", MAX("step") AS hi FROM "MetricPoint" WHERE "runId" = ${ph(1)}${keyList} GROUP BY "key"`,
    runId, ...(keys ?? []),
  );
  const series: Record<string, SeriesPoint[]> = {};
  const cols = `"step", "update", "value", "wall"`;
  const point = (r: { step: unknown; update: unknown; value: unknown; wall: unknown }): SeriesPoint => ({ step: Number(r.step), update: Number(r.update), wall: Number(r.wall), value: Number(r.value) });
  for (const r of ranges) {
    // steps are integers: a width under one step buckets as one step does (each point alone)
    const w = Math.max(1, bucketWidth(Number(r.hi), width));
    if (w === 1) {
      const rows = await h.prisma.$queryRawUnsafe<SeriesPoint[]>(`SELECT ${cols} FROM "MetricPoint" WHERE "runId" = ${ph(1)} AND "key" = ${ph(2)} ORDER BY "step"`, runId, r.key);
      series[r.key] = rows.map(point);
      continue;
    }
    const agg = await h.prisma.$queryRawUnsafe<{ ls: number | bigint; mn: number; mx: number; n: number | bigint }[]>(
      `SELECT MAX("step") AS ls, MIN("value") AS mn, MAX("value") AS mx, COUNT(*) AS n FROM "MetricPoint" WHERE "runId" = ${ph(1)} AND "key" = ${ph(2)} GROUP BY "step" / ${w}`,
      runId, r.key,
    );
    const last = agg.map((a) => Number(a.ls)).sort((a, b) => a - b);
    const rows = await h.prisma.$queryRawUnsafe<SeriesPoint[]>(`SELECT ${cols} FROM "MetricPoint" WHERE "runId" = ${ph(1)} AND "key" = ${ph(2)} AND "step" IN (${last.join(",")}) ORDER BY "step"`, runId, r.key);
    const spread = new Map(agg.map((a) => [Number(a.ls), a]));
    series[r.key] = rows.map((row) => {
      const a = spread.get(Number(row.step))!;
      // a bucket of one point is that point, as bucketSeries gives it
      return Number(a.n) > 1 ? { ...point(row), min: Number(a.mn), max: Number(a.mx) } : point(row);
    });
  }
  return series;
}

export async function getMetrics(h: DbHandle, runId: string, q: MetricsQuery = {}): Promise<MetricsDto> {
  // lastSeq first: points written after it are sent again by the stream's catch-up, never missed
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

export async function ensureRun(h: DbHandle, runId: string): Promise<void> {
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
  if (row.phase === AGENT_PHASE) return { ...row, agent: parseJson<AgentSample | undefined>(record, undefined) };
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
