/** Database rows → the REST DTOs of lib/contracts/dto.ts (JSON-in-text columns parsed, dates as ISO). */
import type { CheckpointDto, ResourceRequest, RunDetailDto, RunDto, RunListRow, RunStatus, RunSummary } from "../../lib/contracts/index.ts";
import type { Prisma } from "../../generated/sqlite/client.ts";
import { checkpointSelect, runJobSelect, runListSelect } from "../../lib/contracts/index.ts";
import { WORKERS_QUEUE } from "./queues.ts";

export function parseJson<T>(text: string | null | undefined, fallback: T): T {
  if (!text) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

export function durationSeconds(startedAt: Date | null, finishedAt: Date | null, status: string, now = Date.now()): number | null {
  if (!startedAt) return null;
  const end = finishedAt ? finishedAt.getTime() : status === "running" ? now : null;
  return end === null ? null : Math.max(0, (end - startedAt.getTime()) / 1000);
}

export function toRunDto(row: RunListRow, workerNames: ReadonlyMap<string, string>, now = Date.now()): RunDto {
  const { jobId, jobState, jobNode, jobReason, jobCount, jobOutBytes, jobErrBytes, ...r } = row;
  return {
    ...r,
    executor: r.queue === WORKERS_QUEUE ? null : { kind: "slurm", jobId, state: jobState, node: jobNode, reason: jobReason, jobs: jobCount, output: jobOutBytes + jobErrBytes },
    status: r.status as RunStatus,
    tags: parseJson<string[]>(r.tags, []),
    workerName: r.workerId ? (workerNames.get(r.workerId) ?? null) : null,
    createdAt: r.createdAt.toISOString(),
    startedAt: r.startedAt?.toISOString() ?? null,
    finishedAt: r.finishedAt?.toISOString() ?? null,
    durationSeconds: durationSeconds(r.startedAt, r.finishedAt, r.status, now),
    summary: parseJson<RunSummary>(r.summary, {}),
  };
}

type CheckpointRow = Prisma.CheckpointGetPayload<{ select: typeof checkpointSelect }>;

export function toCheckpointDto(c: CheckpointRow): CheckpointDto {
  return { ...c, createdAt: c.createdAt.toISOString() };
}

/** The detail columns beyond the list's: config, resume point and resource request. */
export const runDetailSelect = { ...runListSelect, config: true, resumeFrom: true, resources: true } as const satisfies Prisma.RunSelect;
type RunDetailRow = Prisma.RunGetPayload<{ select: typeof runDetailSelect }>;

type RunJobRow = Prisma.RunJobGetPayload<{ select: typeof runJobSelect }>;

export function toRunDetailDto(r: RunDetailRow, checkpoints: CheckpointRow[], workerNames: ReadonlyMap<string, string>, jobs: RunJobRow[] = []): RunDetailDto {
  const { config, resumeFrom, resources, ...row } = r;
  return {
    ...toRunDto(row, workerNames),
    config: parseJson<unknown>(config, null),
    resumeFrom,
    checkpoints: checkpoints.map(toCheckpointDto),
    resources: parseJson<ResourceRequest>(resources, {}),
    jobs: jobs.map((j) => ({ ...j, submittedAt: j.submittedAt.toISOString(), startedAt: j.startedAt?.toISOString() ?? null, endedAt: j.endedAt?.toISOString() ?? null })),
  };
}
