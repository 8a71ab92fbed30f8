/**
 * Pure functions that fold one socket batch ("run:batch") into cached REST data: metric series,
 * log lines, episodes. Each entry carries its own watermark (MetricsDto.lastSeq, the seq of the
 * last log line), and a batch at or below it is ignored, so batches sent again after a reconnect
 * or a gap never duplicates anything. Episodes carry no seq and are de-duplicated by (phase,
 * update, sample). A run's own state (status, summary, progress) is not derived here: the server
 * publishes it ("runs:state", merged by run-cache.ts).
 */
import type { EngineEvent, EpisodeDto, LogLineDto, MetricsDto, RunBatchMsg, SeriesPoint } from "./contracts/index.ts";

/** Appends the batch's metric points for the keys this entry holds. */
export function mergeMetrics(data: MetricsDto, batch: RunBatchMsg, keys: readonly string[]): MetricsDto {
  if (batch.seq <= data.lastSeq) return data;
  let series = data.series;
  const wanted = new Set(keys);
  let added: Record<string, SeriesPoint[]> | null = null;
  for (const e of batch.events) {
    if (e.type !== "metric" || !wanted.has(e.key)) continue;
    added ??= {};
    (added[e.key] ??= []).push({ step: e.step, update: e.update, wall: e.wall, value: e.value });
  }
  if (added) {
    series = { ...series };
    for (const [k, pts] of Object.entries(added)) series[k] = [...(series[k] ?? []), ...pts];
  }
  return { ...data, series, lastSeq: batch.seq };
}

/** Appends the batch's log lines, keeping the last `limit`. */
export function mergeLogs(lines: LogLineDto[], batch: RunBatchMsg, limit: number, now = new Date()): LogLineDto[] {
  const last = lines.length ? lines[lines.length - 1].seq : -1;
  if (batch.seq <= last) return lines;
  const add: LogLineDto[] = [];
  for (const e of batch.events) if (e.type === "log") add.push({ seq: batch.seq, level: e.level, message: e.message, at: now.toISOString() });
  if (!add.length) return lines;
  const out = [...lines, ...add];
  return out.length > limit ? out.slice(out.length - limit) : out;
}

export const episodeKey = (e: Pick<EpisodeDto, "phase" | "update" | "sampleId" | "numChunks">) => `${e.phase}:${e.update}:${e.sampleId}:${e.numChunks}`;

/**
 * Prepends the batch's episodes (the list is latest first). Live episodes have no database id yet
 * (id 0); a later refetch of the list brings the ids the episode page links to.
 */
export function mergeEpisodes(list: EpisodeDto[], batch: RunBatchMsg, limit: number, phase?: string): EpisodeDto[] {
  const fresh: EpisodeDto[] = [];
  for (const e of batch.events) {
    if (e.type !== "episode" || (phase && e.phase !== phase)) continue;
    const r = e.record;
    fresh.push({ id: 0, phase: e.phase, step: e.step, update: e.update, sampleId: r.id, numChunks: r.num_chunks, coverage: r.metrics.coverage, f1: r.metrics.f1, return: r.return, record: r });
  }
  if (!fresh.length) return list;
  const seen = new Set(list.map(episodeKey));
  const add = fresh.filter((e) => !seen.has(episodeKey(e))).reverse();
  if (!add.length) return list;
  return [...add, ...list].slice(0, limit);
}

/** True when the batch carries events that change this kind of data. */
export const batchHas = (batch: RunBatchMsg, type: EngineEvent["type"]) => batch.events.some((e) => e.type === type);

/**
 * Orders one run's batches: applies seq = cursor + 1 at once, holds early ones, drops what was
 * already applied, and on a gap asks for a re-subscription from the cursor (at most once per
 * `resyncWaitMs` while the catch-up is on its way).
 */
export class BatchSequencer {
  /** Last applied seq; -1 until the first subscription. */
  cursor = -1;
  private readonly held = new Map<number, RunBatchMsg>();
  private resyncUntil = 0;

  constructor(
    private readonly resyncWaitMs = 2_000,
    private readonly maxHeld = 1_000,
  ) {}

  /** A (re-)subscription from `afterSeq` was sent. */
  subscribed(afterSeq: number, now: number): void {
    this.cursor = afterSeq;
    for (const s of [...this.held.keys()]) if (s <= afterSeq) this.held.delete(s);
    this.resyncUntil = now + this.resyncWaitMs;
  }

  push(msg: RunBatchMsg, now: number): { apply: RunBatchMsg[]; resubscribe: boolean } {
    if (this.cursor < 0 || msg.seq <= this.cursor) return { apply: [], resubscribe: false };
    if (msg.seq !== this.cursor + 1) {
      if (this.held.size < this.maxHeld) this.held.set(msg.seq, msg);
      return { apply: [], resubscribe: now >= this.resyncUntil };
    }
    const apply = [msg];
    this.cursor = msg.seq;
    for (let next = this.held.get(this.cursor + 1); next; next = this.held.get(this.cursor + 1)) {
      this.held.delete(next.seq);
      apply.push(next);
      this.cursor = next.seq;
    }
    if (this.held.size === 0) this.resyncUntil = 0;
    return { apply, resubscribe: false };
  }
}
