/**
 * The socket.io contract: namespace /workers (trainer worker ⇄ dashboard server) and /ui
 * (browser ⇄ server). Messages are zod schemas (each side parses what it receives with
 * `.safeParse`), and the event maps below type socket.io's `Namespace`/`Socket` generics, so an
 * emit with the wrong payload does not compile.
 */
import { z } from "zod";
import { engineEventSchema } from "./engine-events.ts";
import type { RunDto } from "./dto.ts";

export const WORKER_NAMESPACE = "/workers";
export const UI_NAMESPACE = "/ui";
/** Workers heartbeat this often. */
export const HEARTBEAT_MS = 2_000;
/** A run whose worker has not heartbeated for this long loses its lease. */
export const LEASE_MS = 10_000;
/** Worker batching window: short enough for live charts (chart p95 212 ms with 5 runs streaming,
 *  500 ms at 250), long enough that those 5 runs make ≤ 100 transactions/s, not one per event. */
export const BATCH_MS = 50;

const runId = z.string().min(1).max(100);
const seq = z.number().int().min(1);

// ---- /workers -----------------------------------------------------------------------------------

/** The worker's `auth` on connect; a wrong token is refused. */
export const workerHelloSchema = z.object({
  token: z.string().max(1000),
  workerId: z.string().min(1).max(200),
  name: z.string().max(200).default(""),
  host: z.string().max(200).default(""),
  backend: z.string().max(100).default("unknown"),
  device: z.string().max(500).default("unknown"),
  /** Runs this worker is still executing (after a dashboard restart or reconnect). */
  activeRuns: z.array(runId).max(100).default([]),
  /**
   * Random per worker process: a reconnect of the same process may replace its old connection
   * (which may not have timed out yet); another process with the same id is refused.
   */
  instance: z.string().max(100).default(""),
});
export type WorkerHello = z.output<typeof workerHelloSchema>;

/** server → worker "run:assign" (answered with AssignAck). */
export const runAssignmentSchema = z.object({
  runId,
  /** The config as the server validated it; the worker validates it again with its engine. */
  config: z.unknown(),
  /** Checkpoint folder to resume from, if any. */
  resumeFrom: z.string().nullable(),
  /** First sequence number the worker must use for this attempt (lastSeq + 1). */
  nextSeq: seq,
  attempt: z.number().int().min(1),
  /** Where the engine writes this run's files (checkpoints, JSONL). */
  runDir: z.string().min(1),
  /** "sweep": `config` is a SweepSpec, the job evaluates a checkpoint (no training). */
  kind: z.enum(["train", "sweep"]).default("train"),
  /** A resumed sweep: lengths whose points are stored already. */
  skipLengths: z.array(z.number().int()).max(100).optional(),
});
export type RunAssignment = z.infer<typeof runAssignmentSchema>;

export const assignAckSchema = z.object({ ok: z.boolean(), error: z.string().optional() });
export type AssignAck = z.infer<typeof assignAckSchema>;

/** worker → server "run:events": one numbered batch (answered with EventsAck). */
export const eventBatchSchema = z.object({ runId, seq, events: z.array(engineEventSchema).max(100_000) });
export type EventBatchMsg = z.infer<typeof eventBatchSchema>;

export interface EventsAck {
  ok: boolean;
  seq: number;
  /** Set when the server wants the worker to stop this run (cancelled, reassigned, unknown). */
  stop?: boolean;
  error?: string;
}
export const eventsAckSchema = z.object({ ok: z.boolean(), seq: z.number().int(), stop: z.boolean().optional(), error: z.string().optional() });

/** worker → server "heartbeat" every HEARTBEAT_MS. */
export const heartbeatSchema = z.object({ workerId: z.string().max(200).optional(), runs: z.array(runId).max(100) });
export type HeartbeatMsg = z.infer<typeof heartbeatSchema>;

/** server → worker "run:cancel". */
export const runCancelSchema = z.object({ runId });
export type RunCancelMsg = z.infer<typeof runCancelSchema>;

export interface WorkerToServer {
  "run:events": (msg: EventBatchMsg, ack: (a: EventsAck) => void) => void;
  heartbeat: (msg: HeartbeatMsg) => void;
}
export interface ServerToWorker {
  "run:assign": (a: RunAssignment, ack: (r: AssignAck) => void) => void;
  "run:cancel": (msg: RunCancelMsg) => void;
}

// ---- /ui ----------------------------------------------------------------------------------------

/** browser → server "subscribe": catch up on the batches with seq > afterSeq, then stream live. */
export const subscribeSchema = z.object({ runId, afterSeq: z.number().int().min(0).default(0) });
export type SubscribeMsg = z.input<typeof subscribeSchema>;
export const unsubscribeSchema = z.object({ runId });

/** server → browser "run:batch" (catch-up or live, in seq order, gapless per subscriber). */
export interface RunBatchMsg {
  runId: string;
  seq: number;
  events: EventBatchMsg["events"];
}
/**
 * server → every browser "runs:state": runs whose status, summary, progress, worker or attempt
 * changed, as the server derived them (the browser only merges these into its caches).
 */
export interface RunsStateMsg {
  runs: RunDto[];
  /** Ids that changed but could not be read (deleted). */
  gone: string[];
}

export interface UiToServer {
  subscribe: (msg: SubscribeMsg, ack: (r: { ok: boolean; error?: string }) => void) => void;
  unsubscribe: (msg: { runId: string }) => void;
}
export interface ServerToUi {
  "run:batch": (msg: RunBatchMsg) => void;
  "runs:state": (msg: RunsStateMsg) => void;
}

/** zod issues → "path: message; …" (socket replies and logs). */
export function issuesText(e: z.ZodError): string {
  return e.issues.map((i) => `${i.path.join(".") || "(message)"}: ${i.message}`).join("; ");
}
