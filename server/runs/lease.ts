/**
 * Handing runs to workers: the atomic claim (a conditional update, so two workers, or two
 * dashboard nodes on one PostgreSQL, never take the same run), lease extension by heartbeats,
 * and the sweeper that takes runs back from workers whose lease ran out.
 */
import type { DbHandle } from "../db/client.ts";
import { lastCheckpointPath } from "./service.ts";

/** The oldest queued runs, in the order they should be offered. */
export async function queuedRunIds(h: DbHandle, limit = 10, exclude: readonly string[] = []): Promise<string[]> {
  const rows = await h.prisma.run.findMany({
    where: { status: "queued", ...(exclude.length ? { id: { notIn: [...exclude] } } : {}) },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    select: { id: true },
    take: limit,
  });
  return rows.map((r) => r.id);
}

export interface Claimed {
  runId: string;
  config: string;
  resumeFrom: string | null;
  lastSeq: number;
  attempt: number;
}

/**
 * queued → running for `workerId`, if and only if the run is still queued. Returns the claimed
 * run, or null when another claim won.
 */
export async function claimRun(h: DbHandle, runId: string, workerId: string, leaseMs: number): Promise<Claimed | null> {
  return h.write(async (db) => {
    const now = new Date();
    const n = await db.run.updateMany({
      where: { id: runId, status: "queued" },
      data: {
        status: "running",
        workerId,
        leaseUntil: new Date(now.getTime() + leaseMs),
        attempt: { increment: 1 },
        cancelRequested: false,
        finishedAt: null,
        error: null,
      },
    });
    if (n.count !== 1) return null;
    await db.run.updateMany({ where: { id: runId, startedAt: null }, data: { startedAt: now } });
    const r = await db.run.findUniqueOrThrow({ where: { id: runId }, select: { config: true, resumeFrom: true, lastSeq: true, attempt: true } });
    return { runId, ...r };
  });
}

/** Gives a claimed run back to the queue (the worker refused the assignment). */
export async function unclaimRun(h: DbHandle, runId: string, workerId: string): Promise<boolean> {
  const n = await h.write((db) =>
    db.run.updateMany({
      where: { id: runId, status: "running", workerId },
      data: { status: "queued", workerId: null, leaseUntil: null, attempt: { decrement: 1 } },
    }),
  );
  return n.count === 1;
}

export interface HeartbeatResult {
  /** Runs the worker reports that are not (or no longer) its to run: it should stop them. */
  stop: string[];
  /** Runs of this worker with a pending cancel (re-sent in case the first message was lost). */
  cancel: string[];
}

/** Extends the leases of the worker's running runs and says which reported runs to stop. */
export async function heartbeat(h: DbHandle, workerId: string, runIds: readonly string[], leaseMs: number): Promise<HeartbeatResult> {
  const ids = [...new Set(runIds)];
  return h.write(async (db) => {
    const now = new Date();
    await db.worker.updateMany({ where: { id: workerId }, data: { lastSeen: now } });
    if (!ids.length) return { stop: [], cancel: [] };
    await db.run.updateMany({ where: { id: { in: ids }, workerId, status: "running" }, data: { leaseUntil: new Date(now.getTime() + leaseMs) } });
    const rows = await db.run.findMany({ where: { id: { in: ids } }, select: { id: true, status: true, workerId: true, cancelRequested: true } });
    const mine = new Map(rows.filter((r) => r.status === "running" && r.workerId === workerId).map((r) => [r.id, r]));
    return {
      stop: ids.filter((id) => !mine.has(id)),
      cancel: [...mine.values()].filter((r) => r.cancelRequested).map((r) => r.id),
    };
  });
}

/** After a dashboard restart nobody could heartbeat: give every running run a fresh lease. */
export async function renewAllLeases(h: DbHandle, leaseMs: number): Promise<number> {
  const n = await h.write((db) => db.run.updateMany({ where: { status: "running" }, data: { leaseUntil: new Date(Date.now() + leaseMs) } }));
  return n.count;
}

export interface Expired {
  runId: string;
  workerId: string | null;
  outcome: "queued" | "failed" | "cancelled";
  resumeFrom: string | null;
}

/**
 * Running runs whose lease passed: a cancel in flight → cancelled; a checkpoint → queued again,
 * resuming from it; otherwise failed ("worker lost").
 */
export async function expireLeases(h: DbHandle, now = new Date()): Promise<Expired[]> {
  const due = await h.prisma.run.findMany({ where: { status: "running", leaseUntil: { lt: now } }, select: { id: true } });
  const out: Expired[] = [];
  for (const { id } of due) {
    const r = await h.write(async (db): Promise<Expired | null> => {
      const run = await db.run.findUnique({ where: { id }, select: { workerId: true, cancelRequested: true, lastSeq: true } });
      if (!run) return null;
      const from = await lastCheckpointPath(db, id);
      const gone = `worker lost: no heartbeat from ${run.workerId ?? "its worker"} before the lease ran out`;
      let outcome: Expired["outcome"];
      let data;
      if (run.cancelRequested) {
        outcome = "cancelled";
        data = { status: "cancelled", finishedAt: now, leaseUntil: null, cancelRequested: false, ...(from ? { resumeFrom: from } : {}) };
      } else if (from) {
        outcome = "queued";
        data = { status: "queued", workerId: null, leaseUntil: null, resumeFrom: from };
      } else {
        outcome = "failed";
        data = { status: "failed", finishedAt: now, leaseUntil: null, error: gone };
      }
      const n = await db.run.updateMany({ where: { id, status: "running", leaseUntil: { lt: now } }, data });
      if (n.count !== 1) return null;
      const message =
        outcome === "queued" ? `${gone}; queued again to resume from ${from}` : outcome === "cancelled" ? `${gone}; cancel completed` : `${gone}; no checkpoint to resume from`;
      await db.logLine.create({ data: { runId: id, seq: run.lastSeq, level: outcome === "failed" ? "error" : "warn", message, at: now } });
      return { runId: id, workerId: run.workerId, outcome, resumeFrom: outcome === "queued" ? from : null };
    });
    if (r) out.push(r);
  }
  return out;
}
