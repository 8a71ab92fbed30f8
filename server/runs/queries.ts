/**
 * Read side of a run for the REST API: metric series (deterministically bucketed for a pixel
 * width), episodes, logs, sweep points; and the workers list.
 */
import type { EpisodeDto, EpisodeRecord, LogLineDto, MetricsDto, SeriesPoint, SweepPoint, WorkerDto } from "../../lib/protocol.ts";
import type { DbHandle } from "../db/client.ts";
import { settings } from "../realtime/hub.ts";
import { notFound } from "./errors.ts";
import { parseJson } from "./dto.ts";

export type XAxis = "step" | "wall";

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

export interface MetricsQuery {
  keys?: string[];
  width?: number;
  x?: XAxis;
}

export async function getMetrics(h: DbHandle, runId: string, q: MetricsQuery = {}): Promise<MetricsDto> {
  // lastSeq first: points written after it are replayed again by the stream, never missed
  const run = await h.prisma.run.findUnique({ where: { id: runId }, select: { lastSeq: true } });
  if (!run) throw notFound(`run ${runId}`);
  const x = q.x ?? "step";
  const rows = await h.prisma.metricPoint.findMany({
    where: { runId, ...(q.keys?.length ? { key: { in: q.keys } } : {}) },
    select: { key: true, step: true, update: true, value: true, wall: true },
    orderBy: x === "step" ? [{ key: "asc" }, { step: "asc" }] : [{ key: "asc" }, { wall: "asc" }, { step: "asc" }],
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

export async function listEpisodes(h: DbHandle, runId: string, q: { limit?: number; phase?: string } = {}): Promise<EpisodeDto[]> {
  await ensureRun(h, runId);
  const rows = await h.prisma.episode.findMany({
    where: { runId, ...(q.phase ? { phase: q.phase } : {}) },
    orderBy: [{ update: "desc" }, { id: "desc" }],
    take: q.limit ?? 50,
    select: { id: true, phase: true, step: true, update: true, sampleId: true, coverage: true, f1: true, return: true },
  });
  return rows.map((r) => ({ ...r }));
}

export async function getEpisode(h: DbHandle, runId: string, episodeId: number): Promise<EpisodeDto> {
  const r = await h.prisma.episode.findFirst({ where: { id: episodeId, runId } });
  if (!r) throw notFound(`episode ${episodeId} of run ${runId}`);
  return {
    id: r.id, phase: r.phase, step: r.step, update: r.update, sampleId: r.sampleId, coverage: r.coverage, f1: r.f1, return: r.return,
    record: parseJson<EpisodeRecord>(r.record, undefined as unknown as EpisodeRecord),
  };
}

export async function listLogs(h: DbHandle, runId: string, q: { limit?: number } = {}): Promise<LogLineDto[]> {
  await ensureRun(h, runId);
  const rows = await h.prisma.logLine.findMany({ where: { runId }, orderBy: { id: "desc" }, take: q.limit ?? 200 });
  return rows.reverse().map((r) => ({ seq: r.seq, level: r.level, message: r.message, at: r.at.toISOString() }));
}

export async function listSweep(h: DbHandle, runId: string): Promise<SweepPoint[]> {
  await ensureRun(h, runId);
  const rows = await h.prisma.sweepPoint.findMany({ where: { runId }, orderBy: { numChunks: "asc" }, select: { data: true } });
  return rows.map((r) => parseJson<SweepPoint>(r.data, null as unknown as SweepPoint)).filter(Boolean);
}

export async function listWorkers(h: DbHandle, connected: ReadonlySet<string> | null): Promise<WorkerDto[]> {
  const rows = await h.prisma.worker.findMany({ orderBy: [{ lastSeen: "desc" }, { id: "asc" }] });
  const staleBefore = Date.now() - 2 * settings().leaseMs;
  return rows.map((w) => {
    const online = connected ? connected.has(w.id) : w.status !== "offline" && w.lastSeen.getTime() >= staleBefore;
    return {
      id: w.id, name: w.name, backend: w.backend, device: w.device, host: w.host,
      status: online ? (w.runId ? "busy" : "idle") : "offline",
      lastSeen: w.lastSeen.toISOString(), runId: online ? w.runId : null,
    };
  });
}
