/**
 * The Slurm executor: every queued run of the "slurm" queue becomes one sbatch job whose worker
 * takes that run (job-script.ts), and the jobs' states are read back by bounded polling.
 *
 * One loop (`tick`, every `pollMs` and on `kick`), never two at once in a process:
 * - reconcile: the states of the runs' live jobs (squeue, then sacct; one call per 200 jobs) are
 *   written on the runs. A job that ended (or that Slurm forgot) has its token revoked; if its run
 *   still counts as running there (the worker died with it: TIMEOUT, NODE_FAIL, killed), the run's
 *   lease is ended now and the scheduler's lease reaper queues it again from its last
 *   acknowledged checkpoint, or cancels it when a cancel was pending (the same path as a lost
 *   worker: no point lost, none doubled). A live job whose run was cancelled, failed or has a
 *   cancel pending is scancelled once.
 * - submit: a queued run with no live job gets one. A conditional update reserves it first
 *   (SUBMITTING, jobCount + 1, the new token's id), so no other tick or node submits it too; the
 *   job id is written with the state PENDING in the one update after sbatch answered. sbatch's
 *   refusal fails the run with its one-line reason; an sbatch that got no answer (timed out, the
 *   controller unreachable) may still have made the job, so its reservation is kept and the
 *   recovery below looks for the job by name after a wait that doubles with each such failure
 *   (adopted, or the run is due again), until `submitTries` in a row fail the run. After `maxJobs`
 *   jobs the run fails.
 * - output: the running jobs' new stdout/stderr lines go into their runs' logs (job-output.ts),
 *   with the bytes read kept on the run in the same write; the rest when the job ends.
 * A run whose worker shut down on SIGTERM (scancel from a shell, pre-emption) was already queued
 * again by ingestion; it gets its next job once its old one is seen ended.
 */
import type { Db, DbHandle } from "../../db/client.ts";
import type { RunNotifier } from "../../runs/notifier.ts";
import { shortText } from "../../../lib/contracts/short-text.ts";
import { SlurmCommandError } from "./command.ts";
import type { SlurmClient } from "./client.ts";
import { jobOutput } from "./job-output.ts";
import { jobName, jobOutputPaths, jobRequestFor, type JobPlan } from "./job-script.ts";
import { JobRequestError } from "./request.ts";
import { ENDED_STATES, isEnded, type SlurmJob } from "./states.ts";

export interface SlurmExecutorOptions {
  client: Pick<SlurmClient, "submit" | "jobStates" | "cancel" | "jobIdsNamed">;
  /**
   * A reservation (SUBMITTING) older than this, that no sbatch of this process is answering, was
   * left by a dashboard that died inside sbatch: the job is looked for by name and adopted, or the
   * run is made due again (default 60 s: well past sbatch's command timeout).
   */
  staleSubmitMs?: number;
  /** sbatch calls in a row that got no answer before the run fails (default 5). */
  submitTries?: number;
  queue: string;
  partition: string;
  pollMs: number;
  maxJobs: number;
  /** Job plan parts that are the same for every job. */
  plan: Pick<JobPlan, "dashboardUrl" | "jobsDir" | "root" | "worker" | "node" | "dataRoot">;
  notifier: RunNotifier;
  /** A worker token for one job (its name binds it to the run) and its revocation (sockets signed in with it end). */
  createToken(name: string): Promise<{ id: number; secret: string }>;
  revokeToken(id: number): Promise<void>;
  tokenName(runId: string): string;
  /** The scheduler's lease reaper (runs whose lease ended: queued again, cancelled or failed). */
  reapLeases(): Promise<void>;
  log?: (m: string) => void;
}

export interface SlurmExecutor {
  /** Look now (a run was created or cancelled). */
  kick(): void;
  /** One whole pass; resolves when done (tests). */
  tick(): Promise<void>;
  close(): void;
}

/** Job states after which a run needs a new job: how a job ends, or Slurm no longer knowing it. */
const GONE: readonly string[] = [...ENDED_STATES, "UNKNOWN"];
const gone = (j: SlurmJob) => isEnded(j) || j.state === "UNKNOWN";
const SUBMIT_BATCH = 50;
/** Job states in which its output files may grow. */
const WRITING: readonly string[] = ["RUNNING", "COMPLETING", "SUSPENDED"];
/** Offsets are INTEGER columns: a final read of a file past 2 GiB stores the most they hold. */
const MAX_OFFSET = 2 ** 31 - 1;

/**
 * A job's start and end for its RunJob row, each set once: the start when it is first seen
 * holding its node (Slurm's elapsed time back from now), the end when it is first seen ended
 * (its start plus Slurm's elapsed time, else now).
 */
async function jobTimes(db: Db, runId: string, jobId: string, j: SlurmJob): Promise<{ startedAt?: Date; endedAt?: Date }> {
  const row = await db.runJob.findFirst({ where: { runId, jobId }, select: { startedAt: true, endedAt: true } });
  if (!row) return {};
  const now = Date.now();
  const ran = j.elapsedS !== null && j.elapsedS > 0;
  const out: { startedAt?: Date; endedAt?: Date } = {};
  const holds = j.state === "RUNNING" || j.state === "COMPLETING" || j.state === "SUSPENDED";
  if (!row.startedAt && (holds || (gone(j) && ran))) out.startedAt = new Date(now - (j.elapsedS ?? 0) * 1000);
  const started = row.startedAt ?? out.startedAt;
  if (!row.endedAt && gone(j)) out.endedAt = started && ran ? new Date(Math.min(now, started.getTime() + j.elapsedS! * 1000)) : new Date(now);
  return out;
}

export function createSlurmExecutor(h: DbHandle, o: SlurmExecutorOptions): SlurmExecutor {
  const log = o.log ?? ((m: string) => console.log(`[slurm] ${m}`));
  const scancelled = new Set<string>();
  /** Runs whose sbatch this process is waiting on: their SUBMITTING is not stale. */
  const inSbatch = new Set<string>();
  const staleSubmitMs = o.staleSubmitMs ?? 60_000;
  const submitTries = o.submitTries ?? 5;
  /** Runs whose sbatch got no answer: not looked for by name before this time (ms). */
  const lookAfter = new Map<string, number>();
  let busy = false;
  let again = false;
  let closed = false;

  const failRun = async (id: string, error: string) => {
    await h.write(async (db) => {
      const run = await db.run.findUnique({ where: { id }, select: { lastSeq: true } });
      const n = await db.run.updateMany({ where: { id, status: "queued" }, data: { status: "failed", finishedAt: new Date(), error } });
      if (n.count === 1) await db.logLine.create({ data: { runId: id, seq: run?.lastSeq ?? 0, level: "error", message: error, at: new Date() } });
    });
    o.notifier.changed([id], "status");
  };

  const reconcile = async () => {
    const live = await h.prisma.run.findMany({
      where: { queue: o.queue, jobId: { not: null }, OR: [{ jobState: null }, { jobState: { notIn: [...GONE] } }] },
      select: {
        id: true, status: true, jobId: true, jobState: true, jobNode: true, jobReason: true, jobTokenId: true, jobCount: true, cancelRequested: true, lastSeq: true,
        jobOutBytes: true, jobErrBytes: true,
      },
    });
    if (!live.length) return;
    const states = await o.client.jobStates(live.map((r) => r.jobId!));
    const changed: string[] = [];
    const wrote: string[] = [];
    let reap = false;
    for (const [i, r] of live.entries()) {
      const j = states[i];
      const node = "node" in j ? j.node || null : null;
      const reason = j.state === "PENDING" ? j.reason : "reason" in j ? j.reason : null;
      const moved = j.state !== r.jobState || node !== r.jobNode || reason !== r.jobReason;
      const ended = gone(j);
      // what the job wrote since the last pass (all that is left once it ended), with its new offsets
      const out =
        ended || WRITING.includes(j.state)
          ? jobOutput(o.plan.jobsDir, r.jobId!, jobOutputPaths(o.plan.jobsDir, r.id, r.jobCount), { stdout: r.jobOutBytes, stderr: r.jobErrBytes }, ended)
          : null;
      const lines = out?.lines ?? [];
      if (ended) {
        log(`run ${r.id}: job ${r.jobId} ended ${j.state} (run ${r.status})`);
        lines.unshift(`Slurm job ${r.jobId} ended ${j.state}${node ? ` on ${node}` : ""}${lines.length ? "; its last output follows" : ""}`);
      }
      const offsets = out ? { jobOutBytes: Math.min(out.stdout, MAX_OFFSET), jobErrBytes: Math.min(out.stderr, MAX_OFFSET) } : {};
      const read = out !== null && (out.stdout !== r.jobOutBytes || out.stderr !== r.jobErrBytes);
      if (moved || read || lines.length) {
        // the state, the lines and the offsets they were read up to in one transaction, guarded by
        // the offsets read from: a restart or another node never writes the same lines twice
        const level = ended && j.state !== "COMPLETED" ? "warn" : "info";
        const at = new Date();
        const stored = await h.write((db) =>
          db.$transaction(async (tx) => {
            const n = await tx.run.updateMany({
              where: { id: r.id, jobId: r.jobId, jobOutBytes: r.jobOutBytes, jobErrBytes: r.jobErrBytes },
              data: { jobState: j.state, jobNode: node, jobReason: reason, ...offsets },
            });
            if (n.count !== 1) return false;
            if (moved) await tx.runJob.updateMany({ where: { runId: r.id, jobId: r.jobId }, data: { state: j.state, node, reason, ...(await jobTimes(tx as unknown as Db, r.id, r.jobId!, j)) } });
            if (lines.length) await tx.logLine.createMany({ data: lines.map((message) => ({ runId: r.id, seq: r.lastSeq, level, message, at })) });
            return true;
          }),
        );
        if (stored && moved) changed.push(r.id);
        else if (stored) wrote.push(r.id);
      }
      if (ended) {
        if (r.jobTokenId !== null) await o.revokeToken(r.jobTokenId);
        if (r.status === "running") {
          // its worker died with the job: end the lease now, the reaper requeues (or cancels) it
          const n = await h.write((db) => db.run.updateMany({ where: { id: r.id, status: "running", jobTokenId: r.jobTokenId }, data: { leaseUntil: new Date(0) } }));
          reap ||= n.count === 1;
        }
      } else if ((r.status === "cancelled" || r.status === "failed" || r.cancelRequested) && !scancelled.has(r.jobId!)) {
        scancelled.add(r.jobId!);
        log(`run ${r.id} ${r.cancelRequested ? "cancel requested" : r.status}: scancel ${r.jobId}`);
        await o.client.cancel(r.jobId!);
      }
    }
    if (changed.length) o.notifier.changed(changed, "status");
    // new output only: the run's row (its executor's output count) tells the run page to read its log again
    if (wrote.length) o.notifier.changed(wrote, "progress");
    if (reap) await o.reapLeases();
  };

  const submitOne = async (r: { id: string; resources: string; jobCount: number; sbatchFails: number }) => {
    if (r.jobCount >= o.maxJobs) return failRun(r.id, `gave up after ${r.jobCount} Slurm jobs (QRAG_SLURM_MAX_JOBS) ended without finishing the run`);
    const token = await o.createToken(o.tokenName(r.id));
    // the reservation: only the tick whose update matched submits (jobCount is the guard)
    const number = r.jobCount + 1;
    // the reservation and its job row in one transaction: a SUBMITTING run always has its row,
    // whose time tells a later pass when a dead dashboard's submission is stale
    const reserved = await h.write((db) =>
      db.$transaction(async (tx) => {
        const n = await tx.run.updateMany({
          where: { id: r.id, status: "queued", queue: o.queue, jobCount: r.jobCount, OR: [{ jobId: null }, { jobState: { in: [...GONE] } }] },
          data: { jobId: null, jobState: "SUBMITTING", jobNode: null, jobReason: null, jobCount: number, jobTokenId: token.id, jobOutBytes: 0, jobErrBytes: 0 },
        });
        if (n.count !== 1) return false;
        await tx.runJob.upsert({ where: { runId_number: { runId: r.id, number } }, create: { runId: r.id, number, state: "SUBMITTING" }, update: { state: "SUBMITTING", submittedAt: new Date() } });
        return true;
      }),
    );
    if (!reserved) return o.revokeToken(token.id);
    o.notifier.changed([r.id], "status");
    let jobId: string;
    inSbatch.add(r.id);
    try {
      const resources = JSON.parse(r.resources) as JobPlan["resources"];
      jobId = await o.client.submit(jobRequestFor({ ...o.plan, runId: r.id, jobNumber: r.jobCount + 1, partition: o.partition, resources, token: token.secret }));
    } catch (e) {
      inSbatch.delete(r.id);
      if (e instanceof SlurmCommandError && e.transient) return sbatchUnanswered(r.id, token.id, r.sbatchFails + 1, e.reason);
      await o.revokeToken(token.id);
      const why =
        e instanceof JobRequestError
          ? `invalid Slurm request: ${Object.entries(e.fields).map(([k, v]) => `${k}: ${v}`).join("; ")}`
          : e instanceof SlurmCommandError
            ? `sbatch refused the job: ${e.reason}`
            : `submitting the job failed: ${(e as Error).message}`;
      log(`run ${r.id}: ${why}`);
      // no job was made: nothing to list among its attempts (the run's error says why)
      await h.write((db) => db.runJob.deleteMany({ where: { runId: r.id, number } }));
      return failRun(r.id, why);
    }
    // the job id and "submitted" (PENDING) in one update: the run never loses its job
    await h.write(async (db) => {
      await db.run.updateMany({ where: { id: r.id, jobTokenId: token.id }, data: { jobId, jobState: "PENDING", jobReason: null, sbatchFails: 0 } });
      await db.runJob.updateMany({ where: { runId: r.id, number }, data: { jobId, state: "PENDING" } });
    });
    inSbatch.delete(r.id);
    log(`run ${r.id}: job ${jobId} submitted (job ${r.jobCount + 1} of at most ${o.maxJobs})`);
    o.notifier.changed([r.id], "status");
  };

  /**
   * sbatch got no answer (timed out, "Unable to contact slurm controller"): it may still have made
   * the job, whose script holds the reservation's token, so the reservation stays and the recovery
   * below looks for the job by name once slurmctld has had time to settle (staleSubmitMs, doubled
   * for each failure in a row, at most 16 times): adopted, or the run is due again. Never a second
   * job for one attempt; after `submitTries` failures in a row the run fails.
   */
  const sbatchUnanswered = async (id: string, tokenId: number, fails: number, reason: string) => {
    lookAfter.set(id, Date.now() + staleSubmitMs * 2 ** Math.min(fails - 1, 4));
    log(`run ${id}: sbatch got no answer (${reason}); failure ${fails} of ${submitTries}, looking for its job later`);
    await h.write((db) =>
      db.run.updateMany({ where: { id, jobState: "SUBMITTING", jobTokenId: tokenId }, data: { sbatchFails: fails, jobReason: shortText(`sbatch got no answer ${fails}× (${reason})`, 200) } }),
    );
    o.notifier.changed([id], "status");
  };

  /**
   * Reservations a dead dashboard left SUBMITTING (it died between the reservation and sbatch's
   * answer): the job it may have made is the one named for the run that none of the run's recorded
   * jobs is. Found: adopted (its script holds the reservation's token). Not found: sbatch made no
   * job, so the reservation is undone and the run is due again. Never a second job for one attempt.
   */
  const recoverSubmitting = async () => {
    // any status: a run cancelled while its sbatch got no answer, or taken by the worker of the job
    // that sbatch made after all, still needs that job found (and scancelled, or watched)
    const stale = await h.prisma.run.findMany({
      where: { queue: o.queue, jobState: "SUBMITTING", jobId: null },
      select: { id: true, status: true, jobCount: true, jobTokenId: true, sbatchFails: true, jobReason: true, jobs: { select: { number: true, jobId: true, submittedAt: true } } },
    });
    for (const r of stale) {
      const reservation = r.jobs.find((j) => j.number === r.jobCount);
      if (!reservation || inSbatch.has(r.id) || Date.now() - reservation.submittedAt.getTime() < staleSubmitMs) continue;
      if ((lookAfter.get(r.id) ?? 0) > Date.now()) continue;
      lookAfter.delete(r.id);
      const known = new Set(r.jobs.flatMap((j) => (j.jobId ? [j.jobId] : [])));
      let named: string[];
      try {
        named = await o.client.jobIdsNamed(jobName(r.id));
      } catch (e) {
        // Slurm unreachable now: ask again next pass; the other runs' submissions go on
        log(`run ${r.id}: looking for a submission left unanswered failed: ${(e as Error).message}`);
        continue;
      }
      const orphan = named.filter((id) => !known.has(id)).at(-1);
      if (orphan) {
        // a dashboard that died inside sbatch, or an sbatch that timed out after slurmctld took the job
        log(`run ${r.id}: job ${orphan} was made by an sbatch whose answer was lost; adopting it`);
        await h.write(async (db) => {
          const n = await db.run.updateMany({ where: { id: r.id, jobState: "SUBMITTING", jobTokenId: r.jobTokenId }, data: { jobId: orphan, jobState: "PENDING", jobReason: null, sbatchFails: 0 } });
          if (n.count === 1) await db.runJob.updateMany({ where: { runId: r.id, number: r.jobCount }, data: { jobId: orphan, state: "PENDING" } });
        });
      } else {
        const giveUp = r.status === "queued" && r.sbatchFails >= submitTries;
        log(`run ${r.id}: a submission left unanswered made no job; ${giveUp ? "giving up" : "submitting again"}`);
        if (r.jobTokenId !== null) await o.revokeToken(r.jobTokenId);
        await h.write(async (db) => {
          const n = await db.run.updateMany({ where: { id: r.id, jobState: "SUBMITTING", jobTokenId: r.jobTokenId }, data: { jobState: null, jobTokenId: null, jobCount: Math.max(0, r.jobCount - 1) } });
          if (n.count === 1) await db.runJob.deleteMany({ where: { runId: r.id, number: r.jobCount } });
        });
        if (giveUp) await failRun(r.id, `${r.jobReason ?? "sbatch got no answer"}; gave up after ${r.sbatchFails} tries (QRAG_SLURM_SUBMIT_TRIES)`);
      }
      o.notifier.changed([r.id], "status");
    }
  };

  const submitDue = async () => {
    const due = await h.prisma.run.findMany({
      where: { status: "queued", queue: o.queue, OR: [{ jobId: null, jobState: null }, { jobState: { in: [...GONE] } }] },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      select: { id: true, resources: true, jobCount: true, sbatchFails: true },
      take: SUBMIT_BATCH,
    });
    for (const r of due) {
      if (closed) return;
      await submitOne(r);
    }
  };

  const tick = async () => {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      do {
        again = false;
        await reconcile();
        await recoverSubmitting();
        await submitDue();
      } while (again && !closed);
    } catch (e) {
      log(`pass failed: ${(e as Error).message}`);
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), o.pollMs);
  return {
    kick: () => void tick(),
    tick,
    close() {
      closed = true;
      clearInterval(timer);
    },
  };
}
