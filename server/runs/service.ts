/**
 * Run lifecycle operations behind the REST API: create, list, detail, edit, cancel, resume,
 * clone. Writes go through the handle's write queue; every change is announced to browsers
 * through the platform hooks (runs:changed) and new queued work kicks the assignment loop.
 */
import crypto from "node:crypto";
import type { Prisma } from "../../generated/sqlite/client.ts";
import type { RunDetailDto, RunDto, RunListDto, RunListQuery, RunStatus } from "../../lib/protocol.ts";
import type { DbHandle } from "../db/client.ts";
import { hooks } from "../realtime/hub.ts";
import { applyOverrides, describeConfig, mergeEdits, presetTree, validateRunConfig } from "./config.ts";
import { conflict, notFound, badRequest } from "./errors.ts";
import { parseJson, runListSelect, toRunDetailDto, toRunDto, type RunListRow } from "./dto.ts";

export function newRunId(): string {
  return `${Date.now().toString(36)}${crypto.randomBytes(4).toString("hex")}`;
}

async function workerNames(h: DbHandle): Promise<Map<string, string>> {
  const ws = await h.prisma.worker.findMany({ select: { id: true, name: true } });
  return new Map(ws.map((w) => [w.id, w.name]));
}

export interface CreateRunInput {
  name?: string;
  preset?: string;
  config?: unknown;
  overrides?: string[];
  tags?: string[];
  notes?: string;
  parentId?: string;
}

function normTags(tags: readonly string[] | undefined): string[] {
  return [...new Set((tags ?? []).map((t) => t.trim()).filter(Boolean))];
}

/** Validates and stores a queued run. Nothing is written when the input is bad. */
export async function createRun(h: DbHandle, input: CreateRunInput): Promise<RunDetailDto> {
  let raw: unknown;
  if (input.config !== undefined) raw = input.overrides?.length ? applyOverrides(mergeEdits({}, input.config), input.overrides) : input.config;
  else if (input.preset) raw = presetTree(input.preset, input.overrides ?? []);
  else throw badRequest("config or preset is required", { config: "required (or give a preset)" });
  const config = validateRunConfig(raw);
  if (input.parentId && !(await h.prisma.run.findUnique({ where: { id: input.parentId }, select: { id: true } }))) {
    throw badRequest("unknown parent run", { parentId: "no such run" });
  }
  const d = describeConfig(config);
  const id = newRunId();
  await h.write((db) =>
    db.run.create({
      data: {
        id,
        name: input.name?.trim() || d.defaultName,
        status: "queued",
        config: JSON.stringify(config),
        preset: input.preset ?? null,
        envName: d.envName,
        task: d.task,
        tags: JSON.stringify(normTags(input.tags)),
        notes: input.notes ?? "",
        parentId: input.parentId ?? null,
      },
    }),
  );
  hooks().runsChanged([id]);
  const created = await getRun(h, id);
  hooks().kick();
  return created;
}

export type ListRunsQuery = RunListQuery<RunStatus[]>;

/** The runs table: filters, search, sort and page in the database; 3 queries, no N+1. */
export async function listRuns(h: DbHandle, query: ListRunsQuery = {}): Promise<RunListDto> {
  const and: Prisma.RunWhereInput[] = [];
  if (query.status?.length) and.push({ status: { in: query.status } });
  if (query.tag) and.push({ tags: { contains: JSON.stringify(query.tag) } });
  if (query.q) {
    const q = query.q;
    const ci = h.provider === "postgresql" ? ({ mode: "insensitive" } as object) : {};
    and.push({
      OR: [
        { name: { contains: q, ...ci } },
        { id: { startsWith: q } },
        { notes: { contains: q, ...ci } },
        { tags: { contains: q, ...ci } },
        { task: { contains: q, ...ci } },
        { envName: { contains: q, ...ci } },
      ],
    });
  }
  const where: Prisma.RunWhereInput = and.length ? { AND: and } : {};
  const order = query.order ?? (query.sort === "name" || query.sort === "status" ? "asc" : "desc");
  const limit = query.limit ?? 100;
  const offset = query.offset ?? 0;
  const now = Date.now();

  let rows: RunListRow[];
  let total: number;
  if (query.sort === "duration") {
    // duration depends on "now" for running runs: sort the (small) id/time list here, then page
    const times = await h.prisma.run.findMany({ where, select: { id: true, startedAt: true, finishedAt: true, status: true, createdAt: true } });
    total = times.length;
    const dur = (t: (typeof times)[number]) => {
      if (!t.startedAt) return -1;
      const end = t.finishedAt?.getTime() ?? (t.status === "running" ? now : t.startedAt.getTime());
      return end - t.startedAt.getTime();
    };
    times.sort((a, b) => (dur(a) - dur(b)) * (order === "asc" ? 1 : -1) || b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? -1 : 1));
    const ids = times.slice(offset, offset + limit).map((t) => t.id);
    const byId = new Map((await h.prisma.run.findMany({ where: { id: { in: ids } }, select: runListSelect })).map((r) => [r.id, r]));
    rows = ids.map((id) => byId.get(id)!).filter(Boolean);
  } else {
    const key = query.sort ?? "createdAt";
    const orderBy: Prisma.RunOrderByWithRelationInput[] = [{ [key]: order }];
    if (key !== "createdAt") orderBy.push({ createdAt: "desc" });
    orderBy.push({ id: "asc" });
    [rows, total] = await Promise.all([
      h.prisma.run.findMany({ where, select: runListSelect, orderBy, skip: offset, take: limit }),
      h.prisma.run.count({ where }),
    ]);
  }
  const names = await workerNames(h);
  return { runs: rows.map((r) => toRunDto(r, names, now)), total };
}

export async function getRun(h: DbHandle, id: string): Promise<RunDetailDto> {
  const [run, checkpoints, names] = await Promise.all([
    h.prisma.run.findUnique({ where: { id }, select: { ...runListSelect, config: true, resumeFrom: true } }),
    h.prisma.checkpoint.findMany({ where: { runId: id }, orderBy: [{ update: "asc" }, { best: "asc" }] }),
    workerNames(h),
  ]);
  if (!run) throw notFound(`run ${id}`);
  return toRunDetailDto(run, checkpoints, names);
}

export async function getRunDto(h: DbHandle, id: string): Promise<RunDto> {
  const run = await h.prisma.run.findUnique({ where: { id }, select: runListSelect });
  if (!run) throw notFound(`run ${id}`);
  return toRunDto(run, await workerNames(h));
}

export interface PatchRunInput {
  name?: string;
  tags?: string[];
  notes?: string;
}

export async function patchRun(h: DbHandle, id: string, patch: PatchRunInput): Promise<RunDetailDto> {
  const data: Prisma.RunUpdateManyMutationInput = {};
  if (patch.name !== undefined) data.name = patch.name.trim();
  if (patch.tags !== undefined) data.tags = JSON.stringify(normTags(patch.tags));
  if (patch.notes !== undefined) data.notes = patch.notes;
  const n = await h.write((db) => db.run.updateMany({ where: { id }, data }));
  if (n.count === 0) throw notFound(`run ${id}`);
  hooks().runsChanged([id]);
  return getRun(h, id);
}

/** The checkpoint a new attempt resumes from: the latest "last" (else the latest best). */
export async function lastCheckpointPath(db: DbHandle["prisma"], runId: string): Promise<string | null> {
  const c = await db.checkpoint.findFirst({ where: { runId }, orderBy: [{ best: "asc" }, { update: "desc" }, { id: "desc" }], select: { path: true } });
  return c?.path ?? null;
}

/** queued → cancelled at once; running → cancelRequested, forwarded to the worker. */
export async function cancelRun(h: DbHandle, id: string): Promise<RunDetailDto> {
  const outcome = await h.write(async (db) => {
    const run = await db.run.findUnique({ where: { id }, select: { status: true, workerId: true } });
    if (!run) throw notFound(`run ${id}`);
    if (run.status === "queued") {
      const n = await db.run.updateMany({ where: { id, status: "queued" }, data: { status: "cancelled", finishedAt: new Date(), leaseUntil: null } });
      if (n.count === 1) return { forward: null };
    }
    if (run.status === "running" || run.status === "queued") {
      const n = await db.run.updateMany({ where: { id, status: "running" }, data: { cancelRequested: true } });
      if (n.count === 1) return { forward: run.workerId };
    }
    throw conflict(`run ${id} is ${run.status}; only queued or running runs can be cancelled`);
  });
  if (outcome.forward) hooks().cancelOnWorker(id, outcome.forward);
  hooks().runsChanged([id]);
  return getRun(h, id);
}

/** A cancelled or failed run with a checkpoint → a new attempt of the same run. */
export async function resumeRun(h: DbHandle, id: string): Promise<RunDetailDto> {
  await h.write(async (db) => {
    const run = await db.run.findUnique({ where: { id }, select: { status: true } });
    if (!run) throw notFound(`run ${id}`);
    if (run.status !== "cancelled" && run.status !== "failed") throw conflict(`run ${id} is ${run.status}; only cancelled or failed runs can be resumed`);
    const from = await lastCheckpointPath(db, id);
    if (!from) throw conflict(`run ${id} has no checkpoint to resume from`);
    const n = await db.run.updateMany({
      where: { id, status: run.status },
      data: { status: "queued", resumeFrom: from, finishedAt: null, error: null, cancelRequested: false, leaseUntil: null, workerId: null },
    });
    if (n.count !== 1) throw conflict(`run ${id} changed while resuming; try again`);
  });
  hooks().runsChanged([id]);
  const queued = await getRun(h, id);
  hooks().kick();
  return queued;
}

export interface CloneInput {
  /** A partial config deep-merged onto the source run's config. */
  config?: unknown;
  overrides?: string[];
  name?: string;
  tags?: string[];
  notes?: string;
}

/** A new queued run with parentId = the source and the source's config with edits. */
export async function cloneRun(h: DbHandle, id: string, edits: CloneInput): Promise<RunDetailDto> {
  const src = await h.prisma.run.findUnique({ where: { id }, select: { config: true, preset: true, tags: true, name: true } });
  if (!src) throw notFound(`run ${id}`);
  let tree = mergeEdits(parseJson<unknown>(src.config, {}), edits.config);
  if (edits.overrides?.length) tree = applyOverrides(tree, edits.overrides);
  return createRun(h, {
    config: tree,
    preset: src.preset ?? undefined,
    name: edits.name ?? `${src.name} (clone)`,
    tags: edits.tags ?? parseJson<string[]>(src.tags, []),
    notes: edits.notes ?? "",
    parentId: id,
  });
}
