/**
 * Event-batch ingestion: one numbered batch from a worker is written in one transaction,
 * idempotently on (run, seq). The batch itself is stored (the unit of a browser's catch-up), and
 * its events are derived into rows: metric points (skipping (run, key, step) already stored — a
 * resumed attempt re-sends points after its checkpoint), episodes, checkpoints, sweep points and
 * log lines, plus the run's status, backend/device, progress, summary and lastSeq.
 *
 * Batches are accepted strictly in order (seq = lastSeq + 1) and only from the worker that holds
 * the run, so stored sequences have no gaps and a stale worker cannot write into a newer attempt.
 */
import { AGENT_PHASE, SUMMARY_KEYS, type EngineEvent, type EventBatchMsg, type EventsAck, type RunEndStatus, type RunSummary } from "../../lib/contracts/index.ts";
import type { Db, DbHandle, Provider } from "../db/client.ts";
import { insertRows } from "../db/bulk-insert.ts";
import { parseJson } from "./dto.ts";

const summaryKeys = new Set<string>(SUMMARY_KEYS);

export interface IngestResult extends EventsAck {
  /** The batch was written now (false for duplicates and refusals). */
  stored: boolean;
  /** The attempt ended with this batch (`interrupted`: the run is queued again). */
  ended?: RunEndStatus;
  /**
   * The events as stored (when `stored`): the batch without the metric points and episodes a
   * resumed attempt re-sent for steps already stored. Live subscribers get exactly these, so a
   * live chart after a resume equals the stored series (no repeated steps, no backward jump).
   */
  events?: EngineEvent[];
  duplicate?: boolean;
}

/** Batches are small (one worker flush): 900 parameters per statement as before. */
const insertIgnore = (db: Db, provider: Provider, table: string, cols: readonly string[], rows: unknown[][]) =>
  insertRows(db, provider, table, cols, rows, { paramsPerStatement: 900, onConflict: "ignore" });

class Refused extends Error {
  constructor(readonly ack: IngestResult & { retry?: boolean }) {
    super(ack.error ?? "refused");
  }
}

function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: string })?.code;
  const msg = String((e as Error)?.message ?? "");
  return code === "P2002" || /unique constraint|UNIQUE constraint failed|duplicate key/i.test(msg);
}

/**
 * Writes one batch for `workerId` (parsed with the contract's eventBatchSchema). The
 * acknowledgement is ok for a new or an already stored batch; `stop` tells the worker to stop the
 * run (cancel requested, or the run is not its own).
 */
export async function ingestBatch(h: DbHandle, msg: EventBatchMsg, workerId: string): Promise<IngestResult> {
  // a lost race with another writer of the same run (another node) is decided on a second look
  for (let attempt = 0; ; attempt++) {
    const r = await ingestOnce(h, msg, workerId);
    if (!r.retry || attempt >= 2) return r;
  }
}

async function ingestOnce(h: DbHandle, msg: EventBatchMsg, workerId: string): Promise<IngestResult & { retry?: boolean }> {
  const { runId, seq, events } = msg;

  try {
    return await h.write((db) =>
      db.$transaction(
        async (tx) => {
          const run = await tx.run.findUnique({
            where: { id: runId },
            select: { status: true, workerId: true, lastSeq: true, cancelRequested: true, summary: true, wallSeconds: true },
          });
          if (!run) throw new Refused({ ok: false, seq, stop: true, stored: false, error: `unknown run ${runId}` });
          const owned = run.status === "running" && run.workerId === workerId;
          if (seq <= run.lastSeq) throw new Refused({ ok: true, seq, stored: false, duplicate: true, ...(!owned || run.cancelRequested ? { stop: true } : {}) });
          if (!owned) throw new Refused({ ok: false, seq, stop: true, stored: false, error: `run ${runId} is ${run.status}${run.workerId && run.workerId !== workerId ? " on another worker" : ""}` });
          if (seq !== run.lastSeq + 1) throw new Refused({ ok: false, seq, stored: false, error: `out of order: expected seq ${run.lastSeq + 1}, got ${seq}` });

          const summary = parseJson<RunSummary>(run.summary, {});
          const kept = await withoutStored(tx as unknown as Db, runId, events, summary.step ?? -1, summary.update ?? -1);
          let wall = run.wallSeconds;
          const data: Record<string, unknown> = { lastSeq: seq };
          const metrics: unknown[][] = [];
          const episodes: unknown[][] = [];
          const logs: { runId: string; seq: number; level: string; message: string; at: Date }[] = [];
          let ended: IngestResult["ended"];
          const now = new Date();
          for (const e of kept) {
            switch (e.type) {
              case "run_start":
                data.backend = e.meta.backend;
                data.device = e.meta.device;
                break;
              case "metric":
                metrics.push([runId, e.key, e.step, e.update, e.value, e.wall]);
                if (summaryKeys.has(e.key)) (summary as Record<string, number>)[e.key] = e.value;
                summary.update = Math.max(summary.update ?? 0, e.update);
                summary.step = Math.max(summary.step ?? 0, e.step);
                if (Number.isFinite(e.wall)) wall = Math.max(wall, e.wall);
                break;
              case "episode":
                episodes.push([runId, seq, e.phase, e.step, e.update, String(e.record.id), e.record.num_chunks, e.record.metrics.coverage, e.record.metrics.f1, e.record.return, JSON.stringify(e.record)]);
                break;
              case "checkpoint":
                await tx.checkpoint.upsert({
                  where: { runId_update_best: { runId, update: e.update, best: e.best } },
                  create: { runId, step: e.step, update: e.update, path: e.path, best: e.best, evalReturn: e.evalReturn ?? null, createdAt: now },
                  update: { step: e.step, path: e.path, evalReturn: e.evalReturn ?? null, createdAt: now },
                });
                break;
              case "sweep_point": {
                const p = e.point;
                const row = { tokens: p.tokens, samples: p.samples, point: JSON.stringify(p) };
                await tx.sweepPoint.upsert({ where: { runId_numChunks: { runId, numChunks: p.numChunks } }, create: { runId, numChunks: p.numChunks, ...row }, update: row });
                break;
              }
              case "agent_sample": {
                const r = e.row;
                episodes.push([runId, seq, AGENT_PHASE, 0, 0, r.id, r.num_chunks, r.metrics.coverage, r.metrics.f1, r.correct, JSON.stringify(r)]);
                break;
              }
              case "agent_summary": {
                // an agent job's point rows hold its summaries (server/runs/agent-upload.ts); it measures no tokens
                const p = e.summary;
                const row = { tokens: 0, samples: p.n, point: JSON.stringify(p) };
                await tx.sweepPoint.upsert({ where: { runId_numChunks: { runId, numChunks: p.numChunks } }, create: { runId, numChunks: p.numChunks, ...row }, update: row });
                break;
              }
              case "progress":
                if (e.phase === "train" || e.phase === "sweep" || e.phase === "agent" || data.progressTotal === undefined) {
                  data.progressDone = Math.round(e.done);
                  data.progressTotal = Math.round(e.total);
                }
                break;
              case "log":
                logs.push({ runId, seq, level: e.level, message: e.message, at: now });
                break;
              case "run_end":
                ended = e.status;
                if (e.status === "interrupted" && !run.cancelRequested) {
                  // the worker shut down: queued again, to resume from the checkpoint this batch or
                  // an earlier one stored; the attempt is not counted against MAX_ATTEMPTS
                  const last = await tx.checkpoint.findFirst({ where: { runId }, orderBy: [{ best: "asc" }, { update: "desc" }, { id: "desc" }], select: { path: true } });
                  data.status = "queued";
                  data.workerId = null;
                  data.leaseUntil = null;
                  data.resumeFrom = last?.path ?? null;
                  data.attempt = { decrement: 1 };
                  data.error = null;
                  logs.push({ runId, seq, level: "info", message: `${e.error ?? "the worker shut down"}${last ? "" : " (no checkpoint yet: it starts over)"}`, at: now });
                  break;
                }
                // a cancel the user asked for meanwhile wins over the requeue
                data.status = e.status === "interrupted" ? "cancelled" : e.status;
                data.finishedAt = now;
                data.leaseUntil = null;
                data.cancelRequested = false;
                data.error = e.status === "failed" ? (e.error ?? "failed") : null;
                summary.update = Math.max(summary.update ?? 0, e.update);
                summary.step = Math.max(summary.step ?? 0, e.step);
                if (e.error) logs.push({ runId, seq, level: "error", message: e.error, at: now });
                break;
            }
          }
          data.summary = JSON.stringify(summary);
          data.wallSeconds = wall;
          // the conditional update is the guard against a concurrent writer of the same seq
          const n = await tx.run.updateMany({ where: { id: runId, lastSeq: run.lastSeq, status: "running", workerId }, data });
          if (n.count !== 1) throw new Refused({ ok: false, seq, stored: false, error: "run changed while writing; resend", retry: true });
          await tx.eventBatch.create({ data: { runId, seq, events: JSON.stringify(kept), createdAt: now } });
          if (metrics.length) await insertIgnore(tx as unknown as Db, h.provider, "MetricPoint", ["runId", "key", "step", "update", "value", "wall"], metrics);
          if (episodes.length) {
            await insertIgnore(tx as unknown as Db, h.provider, "Episode", ["runId", "seq", "phase", "step", "update", "sampleId", "numChunks", "coverage", "f1", "return", "record"], episodes);
          }
          if (logs.length) await tx.logLine.createMany({ data: logs });
          const stop = !ended && run.cancelRequested;
          return { ok: true, seq, stored: true, events: kept, ...(ended ? { ended } : {}), ...(stop ? { stop: true } : {}) };
        },
        { maxWait: 20_000, timeout: 60_000 },
      ),
    );
  } catch (e) {
    if (e instanceof Refused) return e.ack;
    // a concurrent writer (another dashboard node) stored the same (run, seq) first
    if (isUniqueViolation(e)) return { ok: false, seq, stored: false, retry: true };
    throw e;
  }
}

/**
 * `events` less the metric points and episodes already stored for this run. Only a resumed
 * attempt re-sends those (it restarts from a checkpoint behind the last stored step), so the
 * database is asked only when the batch reaches back to a step (update) at or below the stored maximum.
 */
async function withoutStored(db: Db, runId: string, events: EngineEvent[], maxStep: number, maxUpdate: number): Promise<EngineEvent[]> {
  let lo = Infinity;
  let loUpdate = Infinity;
  for (const e of events) {
    if (e.type === "metric") lo = Math.min(lo, e.step);
    else if (e.type === "episode") loUpdate = Math.min(loUpdate, e.update);
  }
  if (lo > maxStep && loUpdate > maxUpdate) return events;
  const [points, eps] = await Promise.all([
    lo <= maxStep ? db.metricPoint.findMany({ where: { runId, step: { gte: lo, lte: maxStep } }, select: { key: true, step: true } }) : [],
    loUpdate <= maxUpdate ? db.episode.findMany({ where: { runId, update: { gte: loUpdate, lte: maxUpdate } }, select: { update: true, phase: true, sampleId: true, numChunks: true } }) : [],
  ]);
  if (!points.length && !eps.length) return events;
  const have = new Set(points.map((p) => `${p.key}\u0000${p.step}`));
  const haveEp = new Set(eps.map((x) => `${x.update}\u0000${x.phase}\u0000${x.sampleId}\u0000${x.numChunks}`));
  return events.filter((e) => {
    if (e.type === "metric") return !have.has(`${e.key}\u0000${e.step}`);
    if (e.type === "episode") return !haveEp.has(`${e.update}\u0000${e.phase}\u0000${String(e.record.id)}\u0000${e.record.num_chunks}`);
    return true;
  });
}

/** Stored batches after `afterSeq`, in order (a browser's catch-up). */
export async function batchesAfter(h: DbHandle, runId: string, afterSeq: number, limit = 200): Promise<{ seq: number; events: EngineEvent[] }[]> {
  const rows = await h.prisma.eventBatch.findMany({ where: { runId, seq: { gt: afterSeq } }, orderBy: { seq: "asc" }, take: limit, select: { seq: true, events: true } });
  return rows.map((r) => ({ seq: r.seq, events: parseJson<EngineEvent[]>(r.events, []) }));
}
