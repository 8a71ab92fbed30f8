/** Database rows → the REST DTOs of lib/protocol.ts. */
import type { CheckpointDto, RunDetailDto, RunDto, RunStatus, RunSummary } from "../../lib/protocol.ts";

export function parseJson<T>(text: string | null | undefined, fallback: T): T {
  if (!text) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

/** The Run columns the runs table needs (no config: it can be large). */
export const runListSelect = {
  id: true, name: true, status: true, preset: true, envName: true, task: true, tags: true, notes: true,
  workerId: true, backend: true, device: true, createdAt: true, startedAt: true, finishedAt: true,
  error: true, parentId: true, attempt: true, lastSeq: true, progressDone: true, progressTotal: true,
  summary: true,
} as const;

export interface RunListRow {
  id: string;
  name: string;
  status: string;
  preset: string | null;
  envName: string;
  task: string;
  tags: string;
  notes: string;
  workerId: string | null;
  backend: string | null;
  device: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  error: string | null;
  parentId: string | null;
  attempt: number;
  lastSeq: number;
  progressDone: number;
  progressTotal: number;
  summary: string;
}

export function durationSeconds(startedAt: Date | null, finishedAt: Date | null, status: string, now = Date.now()): number | null {
  if (!startedAt) return null;
  const end = finishedAt ? finishedAt.getTime() : status === "running" ? now : null;
  return end === null ? null : Math.max(0, (end - startedAt.getTime()) / 1000);
}

export function toRunDto(r: RunListRow, workerNames: ReadonlyMap<string, string>, now = Date.now()): RunDto {
  return {
    id: r.id,
    name: r.name,
    status: r.status as RunStatus,
    preset: r.preset,
    envName: r.envName,
    task: r.task,
    tags: parseJson<string[]>(r.tags, []),
    notes: r.notes,
    workerId: r.workerId,
    workerName: r.workerId ? (workerNames.get(r.workerId) ?? null) : null,
    backend: r.backend,
    device: r.device,
    createdAt: r.createdAt.toISOString(),
    startedAt: r.startedAt?.toISOString() ?? null,
    finishedAt: r.finishedAt?.toISOString() ?? null,
    durationSeconds: durationSeconds(r.startedAt, r.finishedAt, r.status, now),
    error: r.error,
    parentId: r.parentId,
    attempt: r.attempt,
    lastSeq: r.lastSeq,
    progressDone: r.progressDone,
    progressTotal: r.progressTotal,
    summary: parseJson<RunSummary>(r.summary, {}),
  };
}

export interface CheckpointRow {
  step: number;
  update: number;
  path: string;
  best: boolean;
  evalReturn: number | null;
  createdAt: Date;
}

export function toCheckpointDto(c: CheckpointRow): CheckpointDto {
  return { step: c.step, update: c.update, path: c.path, best: c.best, evalReturn: c.evalReturn, createdAt: c.createdAt.toISOString() };
}

export function toRunDetailDto(
  r: RunListRow & { config: string; resumeFrom: string | null },
  checkpoints: CheckpointRow[],
  workerNames: ReadonlyMap<string, string>,
): RunDetailDto {
  return { ...toRunDto(r, workerNames), config: parseJson<unknown>(r.config, null), resumeFrom: r.resumeFrom, checkpoints: checkpoints.map(toCheckpointDto) };
}
