/**
 * What the REST API returns. Row types come from Prisma's payload types for the selections the
 * server makes (so a column change shows up here at compile time); `Wire<…>` is their JSON form
 * (dates as ISO strings), and the few JSON-in-text columns (tags, summary, record) are typed.
 * Type-only imports of the generated client: nothing of Prisma reaches the browser bundle.
 */
import type { Prisma } from "../../generated/sqlite/client.ts";
import type { EpisodeRecord } from "./engine-events.ts";
import type { AgentSample } from "./llm-agent.ts";
import type { SummaryKey } from "./metrics.ts";
import type { CellValue } from "./run-columns.ts";
import type { ResourceRequest } from "./queues.ts";

export const RUN_STATUSES = ["queued", "running", "completed", "failed", "cancelled"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const ACTIVE_STATUSES: readonly RunStatus[] = ["queued", "running"];

/** Dates become ISO strings on the wire. */
export type Wire<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K] };

/** The latest value of each summary key (metrics.ts `SUMMARY_KEYS`), and the last update and step. */
export type RunSummary = Partial<Record<SummaryKey | "update" | "step", number>>;

/** The Run columns of the runs table (no config: it can be large). */
export const runListSelect = {
  id: true, name: true, status: true, preset: true, envName: true, task: true, tags: true, notes: true,
  workerId: true, backend: true, device: true, createdAt: true, startedAt: true, finishedAt: true,
  error: true, kind: true, sweepOf: true, parentId: true, attempt: true, lastSeq: true, progressDone: true, progressTotal: true,
  summary: true, createdBy: true,
  // where it executes, and its executor's current job (the table's queue column, the run page's panel, live)
  queue: true, jobId: true, jobState: true, jobNode: true, jobReason: true, jobCount: true, jobOutBytes: true, jobErrBytes: true,
} as const satisfies Prisma.RunSelect;
export type RunListRow = Prisma.RunGetPayload<{ select: typeof runListSelect }>;

/** A run as the REST API returns it, and as the server publishes its changes ("runs:state"). */
export type RunDto = Omit<Wire<RunListRow>, "status" | "tags" | "summary" | JobColumn> & {
  status: RunStatus;
  /** "workers" (connected workers) or an executor's queue. */
  queue: string;
  /** The executor's job; null on the workers queue. */
  executor: ExecutorDto | null;
  tags: string[];
  summary: RunSummary;
  workerName: string | null;
  /** Seconds from start to finish (or to the time of the answer while running). */
  durationSeconds: number | null;
  /** The values of the columns a runs list asked for (`cols`), by column key; absent: not asked. */
  columns?: Record<string, CellValue>;
};

export const checkpointSelect = { step: true, update: true, path: true, best: true, evalReturn: true, createdAt: true } as const satisfies Prisma.CheckpointSelect;
export type CheckpointDto = Wire<Prisma.CheckpointGetPayload<{ select: typeof checkpointSelect }>>;

/** The Run columns ExecutorDto is made of. */
type JobColumn = "jobId" | "jobState" | "jobNode" | "jobReason" | "jobCount" | "jobOutBytes" | "jobErrBytes";

/** Where a run's current job is (a run of an executor's queue), as last polled. */
export interface ExecutorDto {
  kind: "slurm";
  /** null until submitted. */
  jobId: string | null;
  /** Slurm's state name (PENDING, RUNNING, COMPLETED, TIMEOUT, CANCELLED, …; SUBMITTING before sbatch answered). */
  state: string | null;
  node: string | null;
  /** Slurm's reason for a pending job (Resources, Priority, …). */
  reason: string | null;
  /** Jobs submitted for this run so far (a requeued run gets a new one). */
  jobs: number;
  /** Bytes of the current job's stdout and stderr copied into the run's log so far (it grows while the job writes). */
  output: number;
}

export const runJobSelect = { number: true, jobId: true, state: true, node: true, reason: true, submittedAt: true, startedAt: true, endedAt: true } as const satisfies Prisma.RunJobSelect;
/** One of a run's executor jobs (its attempts on the cluster), the current one included. */
export type RunJobDto = Wire<Prisma.RunJobGetPayload<{ select: typeof runJobSelect }>>;

export type RunDetailDto = RunDto & {
  /** The validated engine config. */
  config: unknown;
  resumeFrom: string | null;
  checkpoints: CheckpointDto[];
  /** The resource request with the queue's defaults applied. */
  resources: ResourceRequest;
  /** The executor's jobs for this run, newest first (at most MAX_JOBS_SHOWN); empty on the workers queue. */
  jobs: RunJobDto[];
};
export const MAX_JOBS_SHOWN = 100;

export interface RunListDto {
  runs: RunDto[];
  total: number;
}

/** 400 answers: one message per field path ("config.envs.task"), plus a summary. */
export interface FieldErrorsDto {
  error: string;
  fieldErrors: Record<string, string>;
}

/** A metric point; long series come back bucketed (min, max, last per bucket) for a pixel width. */
export type SeriesPoint = Wire<Prisma.MetricPointGetPayload<{ select: { step: true; update: true; wall: true; value: true } }>> & { min?: number; max?: number };
export interface MetricsDto {
  series: Record<string, SeriesPoint[]>;
  /** The run's lastSeq when the answer was built: subscribe with afterSeq = this. */
  lastSeq: number;
}

export const episodeListSelect = { id: true, phase: true, step: true, update: true, sampleId: true, numChunks: true, coverage: true, f1: true, return: true } as const satisfies Prisma.EpisodeSelect;
export type EpisodeDto = Wire<Prisma.EpisodeGetPayload<{ select: typeof episodeListSelect }>> & {
  record?: EpisodeRecord;
  /** An agent episode (phase "agent", an uploaded `qrag agent` sample row) carries its row here instead of `record`. */
  agent?: AgentSample;
};

export const logLineSelect = { seq: true, level: true, message: true, at: true } as const satisfies Prisma.LogLineSelect;
export type LogLineDto = Wire<Prisma.LogLineGetPayload<{ select: typeof logLineSelect }>>;

/** A preset from configs/presets, resolved and validated by the engine. */
export interface PresetDto {
  name: string;
  config: unknown;
}

export type WorkerDto = Wire<Prisma.WorkerGetPayload<{ select: { id: true; name: true; backend: true; device: true; host: true; lastSeen: true; runId: true } }>> & {
  status: "idle" | "busy" | "offline";
};

/** GET /api/schema: the run config's JSON Schema (input side: defaulted keys are optional). */
export interface ConfigSchemaDto {
  schema: JsonSchema;
}
/** The subset of JSON Schema (draft 2020-12, as z.toJSONSchema writes it) the launch form reads. */
export interface JsonSchema {
  type?: string | string[];
  description?: string;
  default?: unknown;
  const?: unknown;
  enum?: unknown[];
  /** Values a free-form field is usually given (the launch form offers them as a select). */
  examples?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  items?: JsonSchema | boolean;
  prefixItems?: JsonSchema[];
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
}

/** POST /api/runs/validate: the config as it would be stored (defaults applied), or why not. */
export type ValidatedConfigDto = { ok: true; config: unknown } | ({ ok: false } & FieldErrorsDto);
