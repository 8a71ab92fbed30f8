/**
 * Handing runs to workers, and every write of the Worker table.
 *
 * - The atomic claim: a conditional update (queued → running), so two workers, or two dashboard
 *   nodes on one PostgreSQL, never take the same run. An idle connected worker is offered the
 *   oldest queued run; a refused offer gives the run back to the queue.
 * - Leases: heartbeats extend them; the lease reaper takes runs back from workers whose lease ran out
 *   (resume from the last checkpoint, or fail when there is none, or finish a pending cancel).
 * - Batches: each worker batch is written by runs/ingest.ts, serialised per run so runs are
 *   written and published in seq order; the worker's slot frees when its run ends.
 *
 * The socket layer (server/realtime/workers.ts) authenticates workers and relays messages; it
 * gives each connected worker a `WorkerLink` to reach it. What changed is told to `notifier`.
 */
import path from "node:path";
import type { AssignAck, EventsAck, RunAssignment, WorkerHello } from "../../lib/contracts/index.ts";
import { eventBatchSchema, issuesText } from "../../lib/contracts/index.ts";
import type { DbHandle } from "../db/client.ts";
import { parseJson } from "./dto.ts";
import { ingestBatch } from "./ingest.ts";
import type { RunNotifier } from "./notifier.ts";

/** How the scheduler reaches one connected worker. */
export interface WorkerLink {
  /** Offers a run; null when the worker did not answer in time. */
  assign(a: RunAssignment): Promise<AssignAck | null>;
  cancel(runId: string): void;
  /** Drops the connection (a newer connection of the same worker took over). */
  disconnect(): void;
}

export interface SchedulerOptions {
  leaseMs: number;
  /** Where a run's files go: <runsDir>/<runId>. */
  runsDir: string;
  notifier: RunNotifier;
  log?: (msg: string) => void;
}

export interface Scheduler {
  /**
   * Why this hello may not connect now (null: it may): a live connection of the same worker id
   * from another process. Two processes with one id would otherwise take the connection from each
   * other without end, both running jobs.
   */
  refusal(hello: WorkerHello): string | null;
  /** A worker connected (authenticated); resolves once it is registered. A job's worker (`job`) is offered its one run only. */
  connected(hello: WorkerHello, link: WorkerLink, job?: JobBinding): Promise<void>;
  disconnected(workerId: string, link: WorkerLink): void;
  heartbeat(workerId: string, runs: readonly string[]): Promise<void>;
  /** One "run:events" message from a worker: validated, written, acknowledged. */
  receiveBatch(workerId: string, raw: unknown): Promise<EventsAck>;
  /** Offer queued work to idle workers (new or resumed runs). */
  kick(): void;
  /** Forward a cancel to the worker executing the run. */
  cancel(runId: string, workerId: string | null): void;
  /** Ids of the workers connected to this node. */
  connectedWorkers(): string[];
  /** Runs the lease reaper once: takes back the runs whose lease expired. */
  reapLeases(): Promise<void>;
  close(): void;
}

/** A worker started by an executor's job for one run: it signed in with the token made for that job. */
export interface JobBinding {
  runId: string;
  /** The worker token's id: the run's `jobTokenId` while the job is its current one. */
  tokenId: number;
}

interface Conn {
  hello: WorkerHello;
  job?: JobBinding;
  link: WorkerLink;
  /** Runs this worker executes (as far as this server knows). */
  runs: Set<string>;
  /** An assignment is in flight. */
  offering: boolean;
  /** Registration written. */
  ready: Promise<void>;
  /** Not offered anything before this time (ms): it refused the last offer. */
  pausedUntil?: number;
}

/** After a refusal, a worker waits this long for its next offer (the refused run may be offered again at once). */
const REFUSAL_PAUSE_MS = 1_000;

/** What the scheduler's parts share: the connected workers, the Worker-row writes, the kick. */
interface Core {
  h: DbHandle;
  o: SchedulerOptions;
  conns: Map<string, Conn>;
  log: (msg: string) => void;
  closed: boolean;
  who(c: Conn): string;
  /** The worker's row: busy with its first run, or idle. */
  setWorkerRow(c: Conn): Promise<unknown>;
  /** The worker no longer runs these; its row follows. */
  release(c: Conn, runIds: readonly string[]): Promise<void>;
  /** Offer queued work to idle workers. */
  kick(): void;
}

function schedulerCore(h: DbHandle, o: SchedulerOptions): Core {
  const core: Core = {
    h,
    o,
    conns: new Map(),
    log: o.log ?? ((m: string) => console.log(`[scheduler] ${m}`)),
    closed: false,
    who: (c) => c.hello.name || c.hello.workerId,
    setWorkerRow: (c) => {
      const runId = [...c.runs][0] ?? null;
      return h.write((db) => db.worker.updateMany({ where: { id: c.hello.workerId }, data: { status: runId ? "busy" : "idle", runId, lastSeen: new Date() } }));
    },
    release: async (c, runIds) => {
      let any = false;
      for (const id of runIds) any = c.runs.delete(id) || any;
      if (any) await core.setWorkerRow(c).catch(() => undefined);
    },
    kick: () => {}, // set by assignments()
  };
  return core;
}

/** Serialises work per run, so batches are written and published in order. */
function perRunQueue(): <T>(runId: string, fn: () => Promise<T>) => Promise<T> {
  const chains = new Map<string, Promise<unknown>>();
  return <T>(runId: string, fn: () => Promise<T>): Promise<T> => {
    const next = (chains.get(runId) ?? Promise.resolve()).then(fn, fn);
    const tail = next.catch(() => undefined);
    chains.set(runId, tail);
    void tail.then(() => {
      if (chains.get(runId) === tail) chains.delete(runId);
    });
    return next;
  };
}

/** The assignment a claimed run is offered with. */
function assignmentOf(id: string, claimed: Claimed, runsDir: string): RunAssignment {
  return {
    runId: id,
    config: parseJson<unknown>(claimed.config, null),
    resumeFrom: claimed.resumeFrom,
    nextSeq: claimed.lastSeq + 1,
    attempt: claimed.attempt,
    runDir: path.join(runsDir, id),
    kind: claimed.kind === "sweep" ? "sweep" : "train",
    ...(claimed.skipLengths.length ? { skipLengths: claimed.skipLengths } : {}),
  };
}

/**
 * The assignment loop (sets `core.kick`): each idle connected worker is offered the oldest queued
 * run it can claim (up to 5 tries past runs another worker or node won); a refused offer gives the
 * run back to the queue and pauses that worker a little. Also the heartbeat's run bookkeeping.
 */
function assignments(core: Core) {
  const { h, o, conns, log, who } = core;
  let assigning = false;
  let again = false;
  const assignLoop = async () => {
    if (assigning) {
      again = true;
      return;
    }
    assigning = true;
    try {
      do {
        again = false;
        for (const c of conns.values()) {
          if (core.closed || c.offering || c.runs.size || (c.pausedUntil ?? 0) > Date.now()) continue;
          const tried: string[] = [];
          for (let k = 0; k < 5; k++) {
            // a job's worker takes its own run only; the other workers the workers queue's
            const [id] = c.job ? (k ? [] : [c.job.runId]) : await queuedRunIds(h, 1, tried);
            if (!id) break;
            tried.push(id);
            const claimed = await claimRun(h, id, c.hello.workerId, o.leaseMs, c.job?.tokenId);
            if (!claimed) continue; // another worker or node won; try the next one
            c.runs.add(id);
            c.offering = true;
            const a = assignmentOf(id, claimed, o.runsDir);
            log(`run ${id} (attempt ${a.attempt}${a.resumeFrom ? `, resuming from ${a.resumeFrom}` : ""}) → ${who(c)}`);
            await core.setWorkerRow(c).catch(() => undefined);
            o.notifier.changed([id]);
            void offer(c, a);
            break;
          }
        }
      } while (again && !core.closed);
    } catch (e) {
      log(`assignment failed: ${(e as Error).message}`);
    } finally {
      assigning = false;
    }
  };
  const kick = () => void assignLoop();
  core.kick = kick;

  const offer = async (c: Conn, a: RunAssignment) => {
    const res = await c.link.assign(a).catch(() => null);
    c.offering = false;
    if (!res) {
      // no answer: the lease runs out unless the worker heartbeats the run
      log(`run ${a.runId}: no answer to the assignment from ${who(c)}`);
      return;
    }
    if (res.ok) return;
    log(`run ${a.runId} refused by ${who(c)}: ${res.error ?? "refused"}`);
    c.pausedUntil = Date.now() + REFUSAL_PAUSE_MS;
    c.runs.delete(a.runId);
    await unclaimRun(h, a.runId, c.hello.workerId).catch(() => undefined);
    await core.setWorkerRow(c).catch(() => undefined);
    o.notifier.changed([a.runId]);
    kick();
  };

  const onHeartbeat = async (c: Conn, runs: readonly string[]) => {
    const r = await heartbeat(h, c.hello.workerId, runs, o.leaseMs);
    for (const runId of runs) if (!r.stop.includes(runId)) c.runs.add(runId);
    for (const runId of [...r.stop, ...r.cancel]) c.link.cancel(runId);
    if (r.stop.length) {
      await core.release(c, r.stop);
      kick();
    }
  };

  return { kick, onHeartbeat };
}

/** The lease reaper: takes back runs whose lease expired (and cancels them on a worker still connected here). */
function leaseReaper(core: Core): () => Promise<void> {
  const { h, o, conns, log } = core;
  let reaping = false;
  return async () => {
    if (reaping || core.closed) return;
    reaping = true;
    try {
      const expired = await expireLeases(h);
      for (const e of expired) {
        log(`run ${e.runId}: lease expired on ${e.workerId ?? "?"} → ${e.outcome}${e.resumeFrom ? ` (resume from ${e.resumeFrom})` : ""}`);
        const c = e.workerId ? conns.get(e.workerId) : undefined;
        if (c?.runs.has(e.runId)) {
          c.link.cancel(e.runId);
          await core.release(c, [e.runId]);
        }
      }
      if (expired.length) {
        o.notifier.changed(expired.map((e) => e.runId));
        core.kick();
      }
    } catch (e) {
      log(`lease reaper failed: ${(e as Error).message}`);
    } finally {
      reaping = false;
    }
  };
}

/** A worker connected: it replaces an older connection of its id, its row is written, and the runs it reports are heartbeated. */
async function registerWorker(core: Core, hello: WorkerHello, link: WorkerLink, job: JobBinding | undefined, onHeartbeat: (c: Conn, runs: readonly string[]) => Promise<void>): Promise<void> {
  const { h, conns, log } = core;
  const id = hello.workerId;
  const old = conns.get(id);
  if (old && old.link !== link) old.link.disconnect();
  const c: Conn = { hello, link, ...(job ? { job } : {}), runs: new Set(hello.activeRuns), offering: false, ready: Promise.resolve() };
  conns.set(id, c);
  log(`worker ${core.who(c)} connected (${hello.backend}, ${hello.device}${hello.activeRuns.length ? `, running ${hello.activeRuns.join(",")}` : ""})`);
  c.ready = (async () => {
    const runId = hello.activeRuns[0] ?? null;
    const fields = { name: hello.name || id, backend: hello.backend, device: hello.device, host: hello.host, status: runId ? "busy" : "idle", runId, lastSeen: new Date() };
    await h.write((db) => db.worker.upsert({ where: { id }, create: { id, ...fields }, update: fields }));
    if (hello.activeRuns.length) await onHeartbeat(c, hello.activeRuns);
  })().catch((e: Error) => log(`worker ${id} registration failed: ${e.message}`));
  await c.ready;
  core.kick();
}

/** One "run:events" message: validated, written in seq order per run, published, acknowledged; a run that ended frees its worker. */
async function receiveBatch(core: Core, perRun: ReturnType<typeof perRunQueue>, workerId: string, raw: unknown): Promise<EventsAck> {
  const { h, o, conns } = core;
  const p = eventBatchSchema.safeParse(raw);
  const seq = typeof (raw as { seq?: unknown })?.seq === "number" ? (raw as { seq: number }).seq : 0;
  if (!p.success) return { ok: false, seq, error: `invalid batch: ${issuesText(p.error).slice(0, 2000)}` };
  const msg = p.data;
  return perRun(msg.runId, async () => {
    await conns.get(workerId)?.ready;
    const r = await ingestBatch(h, msg, workerId);
    if (r.stored) {
      o.notifier.batch({ runId: msg.runId, seq: msg.seq, events: r.events ?? msg.events });
      const statusChanged = r.ended || msg.events.some((e) => e.type === "run_start");
      o.notifier.changed([msg.runId], statusChanged ? "status" : "progress");
    }
    if (r.ended || (r.stop && !r.ok)) {
      const c = conns.get(workerId);
      if (c) await core.release(c, [msg.runId]);
      core.kick();
    }
    const a: EventsAck = { ok: r.ok, seq: r.seq };
    if (r.stop) a.stop = true;
    if (r.error) a.error = r.error;
    return a;
  });
}

export function createScheduler(h: DbHandle, o: SchedulerOptions): Scheduler {
  const core = schedulerCore(h, o);
  const { conns, log, who } = core;
  const perRun = perRunQueue();
  const { kick, onHeartbeat } = assignments(core);
  const reapLeases = leaseReaper(core);

  return {
    refusal(hello) {
      const old = conns.get(hello.workerId);
      if (!old || (hello.instance && old.hello.instance === hello.instance)) return null;
      return `worker id ${hello.workerId} is already connected (${old.hello.host || "unknown host"}); start this worker with its own --data-dir or --name`;
    },
    connected: (hello, link, job) => registerWorker(core, hello, link, job, onHeartbeat),
    disconnected(workerId, link) {
      const c = conns.get(workerId);
      if (c?.link !== link) return;
      conns.delete(workerId);
      log(`worker ${who(c)} disconnected`);
      void h.write((db) => db.worker.updateMany({ where: { id: workerId }, data: { status: "offline", lastSeen: new Date() } })).catch(() => undefined);
    },
    async heartbeat(workerId, runs) {
      const c = conns.get(workerId);
      if (!c) return;
      await c.ready;
      await onHeartbeat(c, runs);
    },
    receiveBatch: (workerId, raw) => receiveBatch(core, perRun, workerId, raw),
    kick,
    cancel(runId, workerId) {
      const targets = workerId ? [conns.get(workerId)] : [...conns.values()].filter((c) => c.runs.has(runId));
      for (const c of targets) c?.link.cancel(runId);
    },
    connectedWorkers: () => [...conns.keys()],
    reapLeases,
    close() {
      core.closed = true;
      for (const c of conns.values()) c.link.disconnect();
      conns.clear();
    },
  };
}

/** At start: workers could not heartbeat while this server was down, so every running run gets
 *  `graceMs` to be reclaimed by its reconnecting worker, and no worker counts as connected.
 *  With `otherNodes` (several dashboard nodes on one database) workers seen within `graceMs` may
 *  be connected to another node: those keep their status. */
export async function schedulerStartup(h: DbHandle, graceMs: number, otherNodes = false): Promise<void> {
  await renewAllLeases(h, graceMs);
  const quiet = otherNodes ? { lastSeen: { lt: new Date(Date.now() - graceMs) } } : {};
  await h.write((db) => db.worker.updateMany({ where: { status: { not: "offline" }, ...quiet }, data: { status: "offline" } }));
}

// ---- the database side: claim, heartbeat, expiry ----------------------------------------------------

/** The oldest queued runs of the workers queue, in the order they should be offered (an executor's queue has its own workers). */
export async function queuedRunIds(h: DbHandle, limit = 10, exclude: readonly string[] = []): Promise<string[]> {
  const rows = await h.prisma.run.findMany({
    where: { status: "queued", queue: "workers", ...(exclude.length ? { id: { notIn: [...exclude] } } : {}) },
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
  kind: string;
  /** A sweep job: lengths whose points are stored (a resumed attempt skips them). */
  skipLengths: number[];
}

/**
 * queued → running for `workerId`, if and only if the run is still queued; null when another claim
 * won. A job's worker (`jobTokenId`) claims only while its job is the run's current one.
 */
export async function claimRun(h: DbHandle, runId: string, workerId: string, leaseMs: number, jobTokenId?: number): Promise<Claimed | null> {
  return h.write(async (db) => {
    const now = new Date();
    const n = await db.run.updateMany({
      where: { id: runId, status: "queued", ...(jobTokenId !== undefined ? { jobTokenId } : {}) },
      data: { status: "running", workerId, leaseUntil: new Date(now.getTime() + leaseMs), attempt: { increment: 1 }, cancelRequested: false, finishedAt: null, error: null },
    });
    if (n.count !== 1) return null;
    await db.run.updateMany({ where: { id: runId, startedAt: null }, data: { startedAt: now } });
    const r = await db.run.findUniqueOrThrow({ where: { id: runId }, select: { config: true, resumeFrom: true, lastSeq: true, attempt: true, kind: true } });
    const skipLengths = r.kind === "sweep" ? (await db.sweepPoint.findMany({ where: { runId }, select: { numChunks: true } })).map((p) => p.numChunks) : [];
    return { runId, ...r, skipLengths };
  });
}

/** Gives a claimed run back to the queue (the worker refused the assignment). */
export async function unclaimRun(h: DbHandle, runId: string, workerId: string): Promise<boolean> {
  const n = await h.write((db) =>
    db.run.updateMany({ where: { id: runId, status: "running", workerId }, data: { status: "queued", workerId: null, leaseUntil: null, attempt: { decrement: 1 } } }),
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
    return { stop: ids.filter((id) => !mine.has(id)), cancel: [...mine.values()].filter((r) => r.cancelRequested).map((r) => r.id) };
  });
}

async function renewAllLeases(h: DbHandle, leaseMs: number): Promise<number> {
  const n = await h.write((db) => db.run.updateMany({ where: { status: "running" }, data: { leaseUntil: new Date(Date.now() + leaseMs) } }));
  return n.count;
}

/** The checkpoint a new attempt resumes from: the latest "last" (else the latest best). */
export async function lastCheckpointPath(db: DbHandle["prisma"], runId: string): Promise<string | null> {
  const c = await db.checkpoint.findFirst({ where: { runId }, orderBy: [{ best: "asc" }, { update: "desc" }, { id: "desc" }], select: { path: true } });
  return c?.path ?? null;
}

export interface Expired {
  runId: string;
  workerId: string | null;
  outcome: "queued" | "failed" | "cancelled";
  resumeFrom: string | null;
}

/** A run whose workers keep dying (a config that crashes every machine) stops after this many attempts. */
export const MAX_ATTEMPTS = 100;

/**
 * Running runs whose lease passed: a cancel in flight → cancelled; otherwise queued again,
 * resuming from the last checkpoint, or from the start when it had none yet (ingestion drops the
 * points the new attempt re-sends, so nothing is doubled). A sweep job's stored points are its
 * checkpoint (the next attempt skips those lengths). After MAX_ATTEMPTS attempts: failed.
 */
export async function expireLeases(h: DbHandle, now = new Date()): Promise<Expired[]> {
  const due = await h.prisma.run.findMany({ where: { status: "running", leaseUntil: { lt: now } }, select: { id: true } });
  const out: Expired[] = [];
  for (const { id } of due) {
    const r = await h.write(async (db): Promise<Expired | null> => {
      const run = await db.run.findUnique({ where: { id }, select: { workerId: true, cancelRequested: true, lastSeq: true, kind: true, attempt: true } });
      if (!run) return null;
      const sweepJob = run.kind === "sweep";
      const from = sweepJob ? null : await lastCheckpointPath(db, id);
      const gone = `worker lost: no heartbeat from ${run.workerId ?? "its worker"} before the lease ran out`;
      let outcome: Expired["outcome"];
      let data;
      if (run.cancelRequested) {
        outcome = "cancelled";
        data = { status: "cancelled", finishedAt: now, leaseUntil: null, cancelRequested: false, ...(from ? { resumeFrom: from } : {}) };
      } else if (run.attempt < MAX_ATTEMPTS) {
        outcome = "queued";
        data = { status: "queued", workerId: null, leaseUntil: null, resumeFrom: from };
      } else {
        outcome = "failed";
        data = { status: "failed", finishedAt: now, leaseUntil: null, error: `${gone}; gave up after ${run.attempt} attempts` };
      }
      const n = await db.run.updateMany({ where: { id, status: "running", leaseUntil: { lt: now } }, data });
      if (n.count !== 1) return null;
      const message =
        outcome === "queued"
          ? `${gone}; queued again to ${from ? `resume from ${from}` : sweepJob ? "resume from its stored sweep points" : "start over (no checkpoint yet)"}`
          : outcome === "cancelled"
            ? `${gone}; cancel completed`
            : `${gone}; gave up after ${run.attempt} attempts`;
      await db.logLine.create({ data: { runId: id, seq: run.lastSeq, level: outcome === "failed" ? "error" : "warn", message, at: now } });
      return { runId: id, workerId: run.workerId, outcome, resumeFrom: outcome === "queued" ? from : null };
    });
    if (r) out.push(r);
  }
  return out;
}
