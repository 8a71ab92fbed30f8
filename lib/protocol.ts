/**
 * The platform's wire contract, shared by the dashboard server, trainer workers and the browser:
 * REST payloads (app/api/*), the socket.io namespaces /workers and /ui, and run statuses.
 * Types only (plus a few constants), so it is safe to import from client components.
 */
import type { EngineEvent, EpisodeRecord, MetricKey, SweepPoint } from "../server/qrag/events.ts";

export type { EngineEvent, EpisodeRecord, MetricKey, SweepPoint };

export const RUN_STATUSES = ["queued", "running", "completed", "failed", "cancelled"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const ACTIVE_STATUSES: readonly RunStatus[] = ["queued", "running"];

/** Sort keys of the runs table, shared by the page, the REST validator and the query. */
export const RUN_LIST_SORTS = ["createdAt", "name", "status", "duration"] as const;
export type RunListSort = (typeof RUN_LIST_SORTS)[number];
/** GET /api/runs parameters; `S` is how statuses are carried (one string in the URL, a list once parsed). */
export interface RunListQuery<S> {
  status?: S;
  q?: string;
  tag?: string;
  sort?: RunListSort;
  order?: "asc" | "desc";
  limit?: number;
  offset?: number;
}

/** Key metrics kept on each run for the runs table (latest values). */
export interface RunSummary {
  qf_loss?: number;
  eval_coverage?: number;
  eval_f1?: number;
  eval_return?: number;
  train_return?: number;
  transitions_per_s?: number;
  update?: number;
  step?: number;
}

/** A run as the REST API returns it. */
export interface RunDto {
  id: string;
  name: string;
  status: RunStatus;
  preset: string | null;
  envName: string;
  task: string;
  tags: string[];
  notes: string;
  workerId: string | null;
  workerName: string | null;
  backend: string | null;
  device: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** Seconds from start to finish (or to now while running). */
  durationSeconds: number | null;
  error: string | null;
  parentId: string | null;
  attempt: number;
  lastSeq: number;
  progressDone: number;
  progressTotal: number;
  summary: RunSummary;
}

export interface RunDetailDto extends RunDto {
  /** The validated engine config. */
  config: unknown;
  resumeFrom: string | null;
  checkpoints: CheckpointDto[];
}

export interface CheckpointDto {
  step: number;
  update: number;
  path: string;
  best: boolean;
  evalReturn: number | null;
  createdAt: string;
}

/** GET /api/runs?status=&q=&tag=&sort=createdAt|name|status|duration&order=asc|desc&limit=&offset= */
export interface RunListDto {
  runs: RunDto[];
  total: number;
}

/** POST /api/runs body. `config` is validated with the engine's zod schema. */
export interface CreateRunBody {
  name?: string;
  preset?: string;
  config: unknown;
  tags?: string[];
  notes?: string;
  /** Set when the form was opened as a clone of another run. */
  parentId?: string;
}

/** 400 responses: one message per field path ("envs.task"), plus a summary. */
export interface FieldErrorsDto {
  error: string;
  fieldErrors: Record<string, string>;
}

/**
 * GET /api/runs/:id/metrics?keys=a,b&width=800&x=step|wall
 * Long series come back as deterministic buckets (min, max, last per bucket) sized for `width`
 * pixels, so 100k-point runs stay fast and spikes stay visible.
 */
export interface SeriesPoint {
  step: number;
  update: number;
  wall: number;
  value: number;
  min?: number;
  max?: number;
}
export interface MetricsDto {
  series: Record<string, SeriesPoint[]>;
  /** The run's lastSeq when the response was built: subscribe with afterSeq = this. */
  lastSeq: number;
}

/** GET /api/runs/:id/episodes?limit=&phase= (latest first) and /api/runs/:id/episodes/:episodeId */
export interface EpisodeDto {
  id: number;
  phase: string;
  step: number;
  update: number;
  sampleId: string;
  coverage: number;
  f1: number;
  return: number;
  record?: EpisodeRecord;
}

/** GET /api/runs/:id/logs?limit= (latest last) */
export interface LogLineDto {
  seq: number;
  level: string;
  message: string;
  at: string;
}

/** GET /api/presets: presets from configs/ resolved by the engine. */
export interface PresetDto {
  name: string;
  config: unknown;
}

/** GET /api/workers */
export interface WorkerDto {
  id: string;
  name: string;
  backend: string;
  device: string;
  host: string;
  status: "idle" | "busy" | "offline";
  lastSeen: string;
  runId: string | null;
}

// ---------------------------------------------------------------------------------------------
// socket.io namespace /workers (worker ⇄ server). The worker authenticates with
// `auth: WorkerHello`; the server rejects a wrong token.

export interface WorkerHello {
  token: string;
  workerId: string;
  name: string;
  host: string;
  backend: string;
  device: string;
  /** Runs this worker is still executing (after a dashboard restart or reconnect). */
  activeRuns: string[];
}

/** server → worker "run:assign" (acked by the worker). */
export interface RunAssignment {
  runId: string;
  config: unknown;
  /** Checkpoint folder to resume from, if any. */
  resumeFrom: string | null;
  /** First sequence number the worker must use for this attempt (lastSeq + 1). */
  nextSeq: number;
  attempt: number;
  /** Where the engine writes this run's files (checkpoints, JSONL). */
  runDir: string;
}

/** worker → server "run:events" (ack callback receives EventsAck). Batches span ≤ 250 ms. */
export interface EventBatchMsg {
  runId: string;
  seq: number;
  events: EngineEvent[];
}
export interface EventsAck {
  ok: boolean;
  seq: number;
  /** Set when the server wants the worker to stop this run (cancelled, reassigned, unknown). */
  stop?: boolean;
  error?: string;
}

/** worker → server "heartbeat" every 2 s; server → worker "run:cancel" {runId}. */
export interface HeartbeatMsg {
  workerId: string;
  runs: string[];
}

// ---------------------------------------------------------------------------------------------
// socket.io namespace /ui (browser ⇄ server)

/** browser → server "subscribe": replay batches with seq > afterSeq, then stream live. */
export interface SubscribeMsg {
  runId: string;
  afterSeq: number;
}
/** server → browser "run:batch" (replayed or live, in seq order). */
export interface RunBatchMsg {
  runId: string;
  seq: number;
  events: EngineEvent[];
}
/** server → browser "runs:changed" whenever a run's status, summary or progress changes. */
export interface RunsChangedMsg {
  runIds: string[];
}

export const WORKER_NAMESPACE = "/workers";
export const UI_NAMESPACE = "/ui";
export const HEARTBEAT_MS = 2_000;
/** A run whose worker has not heartbeated for this long loses its lease. */
export const LEASE_MS = 10_000;
/** Worker batching window: short enough for live charts (chart p95 212 ms with 5 runs streaming,
 *  500 ms at 250), long enough that those 5 runs make ≤ 100 transactions/s, not one per event. */
export const BATCH_MS = 50;
