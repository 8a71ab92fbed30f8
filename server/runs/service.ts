/**
 * Run lifecycle operations behind the REST API: create, list, detail, edit, cancel, resume,
 * clone. Configs go through the engine's one pipeline (buildRunConfig). Writes go through the
 * handle's write queue; every change is told to `deps.notifier` (browsers get the new state) and
 * new queued work kicks the scheduler.
 */
import crypto from "node:crypto";
import type { Prisma } from "../../generated/sqlite/client.ts";
import type { CloneRunBody, CreateRunBody, ResourceRequest, PatchRunBody, RunDetailDto, RunDto, RunListDto, RunListQuery, RunListRow } from "../../lib/contracts/index.ts";
import { checkpointSelect, MAX_JOBS_SHOWN, runJobSelect, clauseHolds, compareCells, parseColumn, RUN_LIST_SORTS, runListSelect, type RunColumn, type RunListSort } from "../../lib/contracts/index.ts";
import { cellOf, checkConfigColumns, metricStats, parsedRun } from "./list-columns.ts";
import { buildRunConfig, checkEncoderPath, checkEnvPaths, ConfigError, describeConfig, type RunConfig, type RunConfigInput } from "../qrag/index.ts";
import { settings } from "../settings.ts";
import type { DbHandle } from "../db/client.ts";
import { conflict, invalid, notFound } from "./errors.ts";
import { parseJson, runDetailSelect, toRunDetailDto, toRunDto } from "./dto.ts";
import { resolveQueue } from "./queues.ts";
import { silentNotifier, type RunNotifier } from "./notifier.ts";
import { lastCheckpointPath, type Scheduler } from "./scheduler.ts";

/** Who hears of changes: the dashboard passes its notifier and scheduler; scripts and tests need neither. */
export interface RunsDeps {
  notifier: RunNotifier;
  scheduler: Pick<Scheduler, "kick" | "cancel">;
  /** The folder every path a config names must lie in (default QRAG_DATA_ROOT, else the data folder). */
  dataRoot?: string;
  /** Who asks (recorded as Run.createdBy on new runs); absent for scripts and tests. */
  actor?: string;
}
const standalone: RunsDeps = { notifier: silentNotifier, scheduler: { kick: () => {}, cancel: () => {} } };

/** Run ids sort by creation time (base-36 ms) and carry 32 random bits against same-ms clashes. */
export function newRunId(): string {
  return `${Date.now().toString(36)}${crypto.randomBytes(4).toString("hex")}`;
}

/**
 * The engine's config pipeline; its errors become a 400 naming each field. Paths the config names
 * must lie in the data root (issue 10): they are stored relative to it, so a worker with its own
 * root finds the same files; a path outside answers the same 400 whether it exists or not.
 */
export function runConfigFrom(input: RunConfigInput, dataRoot: string = settings().dataRoot): RunConfig {
  let config: RunConfig;
  try {
    config = buildRunConfig(input);
  } catch (e) {
    if (e instanceof ConfigError) throw invalid("config", e.issues);
    throw e;
  }
  const paths = checkEnvPaths(config.envs, dataRoot);
  const enc = checkEncoderPath(config.algo.encoder, dataRoot); // an hf folder, word vectors
  const issues = [...paths.issues, ...enc.issues];
  if (issues.length) throw invalid("config", issues.map((i) => ({ path: `config.${i.path}`, message: i.message })));
  return { ...config, envs: paths.env, algo: { ...config.algo, encoder: enc.encoder } };
}

/** Worker id → name, for run rows' workerName. */
export async function workerNames(h: DbHandle): Promise<Map<string, string>> {
  const ws = await h.prisma.worker.findMany({ select: { id: true, name: true } });
  return new Map(ws.map((w) => [w.id, w.name]));
}

function normTags(tags: readonly string[] | undefined): string[] {
  return [...new Set((tags ?? []).map((t) => t.trim()).filter(Boolean))];
}

/** Validates and stores a queued run. Nothing is written when the input is bad. */
export async function createRun(h: DbHandle, input: CreateRunBody & { base?: unknown }, deps: RunsDeps = standalone): Promise<RunDetailDto> {
  const config = runConfigFrom(input, deps.dataRoot);
  if (input.parentId && !(await h.prisma.run.findUnique({ where: { id: input.parentId }, select: { id: true } }))) {
    throw invalid("parent run", [{ path: "parentId", message: "no such run" }]);
  }
  const { queue, resources } = resolveQueue(input.queue, input.resources);
  const d = describeConfig(config);
  const id = newRunId();
  // the answer is the row as written: an idle worker may claim the run before a second read
  const row = await h.write((db) =>
    db.run.create({
      select: runDetailSelect,
      data: {
        id,
        name: (input.name?.trim() || d.defaultName).slice(0, 200),
        status: "queued",
        config: JSON.stringify(config),
        preset: input.preset ?? null,
        envName: d.envName,
        task: d.task,
        tags: JSON.stringify(normTags(input.tags)),
        notes: input.notes ?? "",
        parentId: input.parentId ?? null,
        createdBy: deps.actor ?? null,
        queue,
        resources: JSON.stringify(resources),
      },
    }),
  );
  deps.notifier.changed([id]);
  const created = toRunDetailDto(row, [], await workerNames(h));
  deps.scheduler.kick();
  return created;
}

/** The runs table: filters, search, sort and page in the database; 3 queries, no N+1. */
export async function listRuns(h: DbHandle, query: RunListQuery = {}): Promise<RunListDto> {
  const sortColumn = query.sort && !(RUN_LIST_SORTS as readonly string[]).includes(query.sort) ? (parseColumn(query.sort) as RunColumn) : null;
  checkConfigColumns(query, sortColumn);
  // sweep jobs belong to the run they evaluate (its Sweep section), not to the runs table
  const and: Prisma.RunWhereInput[] = [{ kind: { not: "sweep" } }];
  if (query.ids) and.push({ id: { in: query.ids } });
  if (query.status?.length) and.push({ status: { in: query.status } });
  if (query.tag) and.push({ tags: { contains: JSON.stringify(query.tag) } });
  if (query.queue) and.push({ queue: query.queue });
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
  const where: Prisma.RunWhereInput = { AND: and };
  const textSort = query.sort === "name" || query.sort === "status" || query.sort === "queue" ? query.sort : null;
  const order = query.order ?? (textSort ? "asc" : "desc");
  const limit = query.limit ?? 100;
  const offset = query.offset ?? 0;
  const now = Date.now();

  let rows: RunListRow[];
  let total: number;
  if (query.where?.length || sortColumn) {
    // filter and sort on config values and metric stats here: the runs the other filters keep,
    // in the table's order, then the expression, then the page
    const clauses = query.where ?? [];
    const candidates = (await h.prisma.run.findMany({ where, select: { id: true, config: true, summary: true, createdAt: true, startedAt: true, finishedAt: true, status: true, name: true, queue: true }, orderBy: [{ createdAt: "desc" }, { id: "asc" }] })).map((r) => ({ ...r, ...parsedRun(r) }));
    const stats = await metricStats(h, null, [...clauses.map((c) => c.column), ...(sortColumn ? [sortColumn] : [])]);
    const kept = candidates.filter((r) => clauses.every((c) => clauseHolds(cellOf(c.column, r, stats), c)));
    const sign = order === "asc" ? 1 : -1;
    const cmp: (a: (typeof kept)[number], b: (typeof kept)[number]) => number = sortColumn
      ? (a, b) => compareCells(cellOf(sortColumn, a, stats), cellOf(sortColumn, b, stats), order)
      : textSort
        ? (a, b) => a[textSort].localeCompare(b[textSort]) * sign
        : query.sort === "duration"
          ? (a, b) => (runMillis(a, now) - runMillis(b, now)) * sign
          : (a, b) => (a.createdAt.getTime() - b.createdAt.getTime()) * sign;
    kept.sort((a, b) => cmp(a, b) || b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? -1 : 1));
    total = kept.length;
    rows = await rowsInOrder(h, kept.slice(offset, offset + limit).map((r) => r.id));
  } else if (query.sort === "duration") {
    // duration depends on "now" for running runs: sort the (small) id/time list here, then page
    const times = await h.prisma.run.findMany({ where, select: { id: true, startedAt: true, finishedAt: true, status: true, createdAt: true } });
    total = times.length;
    times.sort((a, b) => (runMillis(a, now) - runMillis(b, now)) * (order === "asc" ? 1 : -1) || b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? -1 : 1));
    rows = await rowsInOrder(h, times.slice(offset, offset + limit).map((t) => t.id));
  } else {
    const key = (query.sort ?? "createdAt") as RunListSort;
    const orderBy: Prisma.RunOrderByWithRelationInput[] = [{ [key]: order }];
    if (key !== "createdAt") orderBy.push({ createdAt: "desc" });
    orderBy.push({ id: "asc" });
    [rows, total] = await Promise.all([
      h.prisma.run.findMany({ where, select: runListSelect, orderBy, skip: offset, take: limit }),
      h.prisma.run.count({ where }),
    ]);
  }
  const names = await workerNames(h);
  const runs = rows.map((r) => toRunDto(r, names, now));
  if (query.cols?.length) await attachColumns(h, runs, query.cols);
  return { runs, total };
}

/** Milliseconds a run has run (a running one: until `now`; not started: -1). */
function runMillis(t: { startedAt: Date | null; finishedAt: Date | null; status: string }, now: number): number {
  if (!t.startedAt) return -1;
  const end = t.finishedAt?.getTime() ?? (t.status === "running" ? now : t.startedAt.getTime());
  return end - t.startedAt.getTime();
}

/** The list rows of these ids, in this order. */
async function rowsInOrder(h: DbHandle, ids: string[]): Promise<RunListRow[]> {
  const byId = new Map((await h.prisma.run.findMany({ where: { id: { in: ids } }, select: runListSelect })).map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)!).filter(Boolean);
}

/** The chosen columns' values of a page of runs. */
async function attachColumns(h: DbHandle, runs: RunDto[], cols: readonly RunColumn[]): Promise<void> {
  const ids = runs.map((r) => r.id);
  const needConfig = cols.some((c) => c.kind === "config");
  const [configs, stats] = await Promise.all([
    needConfig ? h.prisma.run.findMany({ where: { id: { in: ids } }, select: { id: true, config: true } }) : Promise.resolve([]),
    metricStats(h, ids, cols),
  ]);
  const configOf = new Map(configs.map((c) => [c.id, parseJson<unknown>(c.config, {})]));
  for (const r of runs) {
    const view = { id: r.id, config: configOf.get(r.id) ?? {}, summary: r.summary };
    r.columns = Object.fromEntries(cols.map((c) => [c.key, cellOf(c, view, stats) ?? null]));
  }
}

export async function getRun(h: DbHandle, id: string): Promise<RunDetailDto> {
  const [run, checkpoints, names, jobs] = await Promise.all([
    h.prisma.run.findUnique({ where: { id }, select: runDetailSelect }),
    h.prisma.checkpoint.findMany({ where: { runId: id }, orderBy: [{ update: "asc" }, { best: "asc" }], select: checkpointSelect }),
    workerNames(h),
    h.prisma.runJob.findMany({ where: { runId: id }, orderBy: { number: "desc" }, take: MAX_JOBS_SHOWN, select: runJobSelect }),
  ]);
  if (!run) throw notFound(`run ${id}`);
  return toRunDetailDto(run, checkpoints, names, jobs);
}

/** The list rows of these runs (what "runs:state" publishes); ids not found are left out. */
export async function runDtos(h: DbHandle, ids: readonly string[]): Promise<RunDto[]> {
  const [rows, names] = await Promise.all([h.prisma.run.findMany({ where: { id: { in: [...ids] } }, select: runListSelect }), workerNames(h)]);
  const now = Date.now();
  return rows.map((r) => toRunDto(r, names, now));
}

export async function patchRun(h: DbHandle, id: string, patch: PatchRunBody, deps: RunsDeps = standalone): Promise<RunDetailDto> {
  const data: Prisma.RunUpdateManyMutationInput = {};
  if (patch.name !== undefined) data.name = patch.name.trim();
  if (patch.tags !== undefined) data.tags = JSON.stringify(normTags(patch.tags));
  if (patch.notes !== undefined) data.notes = patch.notes;
  await writable(h, id);
  const n = await h.write((db) => db.run.updateMany({ where: { id }, data }));
  if (n.count === 0) throw notFound(`run ${id}`);
  deps.notifier.changed([id]);
  return getRun(h, id);
}

/** Imported runs are records of someone else's run: read-only (409 on edits and lifecycle actions). */
async function writable(h: DbHandle, id: string): Promise<{ kind: string }> {
  const run = await h.prisma.run.findUnique({ where: { id }, select: { kind: true } });
  if (!run) throw notFound(`run ${id}`);
  if (run.kind === "imported") throw conflict(`run ${id} is imported and read-only`);
  return run;
}

/** queued → cancelled at once; running → cancelRequested, forwarded to the worker. */
export async function cancelRun(h: DbHandle, id: string, deps: RunsDeps = standalone): Promise<RunDetailDto> {
  await writable(h, id);
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
  // told even without a worker: an executor's job may hold (or wait for) the run
  deps.scheduler.cancel(id, outcome.forward);
  deps.notifier.changed([id]);
  return getRun(h, id);
}

/**
 * A cancelled or failed run with a checkpoint → a new attempt of the same run. A sweep job needs
 * none: the new attempt skips the lengths whose points are stored.
 */
export async function resumeRun(h: DbHandle, id: string, deps: RunsDeps = standalone): Promise<RunDetailDto> {
  await writable(h, id);
  await h.write(async (db) => {
    const run = await db.run.findUnique({ where: { id }, select: { status: true, kind: true } });
    if (!run) throw notFound(`run ${id}`);
    if (run.status !== "cancelled" && run.status !== "failed") throw conflict(`run ${id} is ${run.status}; only cancelled or failed runs can be resumed`);
    const from = run.kind === "sweep" ? null : await lastCheckpointPath(db, id);
    if (!from && run.kind !== "sweep") throw conflict(`run ${id} has no checkpoint to resume from`);
    const n = await db.run.updateMany({
      where: { id, status: run.status },
      data: { status: "queued", resumeFrom: from, finishedAt: null, error: null, cancelRequested: false, leaseUntil: null, workerId: null },
    });
    if (n.count !== 1) throw conflict(`run ${id} changed while resuming; try again`);
  });
  deps.notifier.changed([id]);
  const queued = await getRun(h, id);
  deps.scheduler.kick();
  return queued;
}

/** A new queued run with parentId = the source and the source's config with edits. */
export async function cloneRun(h: DbHandle, id: string, edits: CloneRunBody, deps: RunsDeps = standalone): Promise<RunDetailDto> {
  const src = await h.prisma.run.findUnique({ where: { id }, select: { config: true, preset: true, tags: true, name: true, kind: true, queue: true, resources: true } });
  if (!src) throw notFound(`run ${id}`);
  if (src.kind === "sweep") throw conflict(`run ${id} is a sweep job; start a new sweep from the run it evaluates`);
  return createRun(
    h,
    {
      base: parseJson<unknown>(src.config, {}),
      config: edits.config ?? {},
      overrides: edits.overrides,
      preset: src.preset ?? undefined,
      name: edits.name ?? `${src.name} (clone)`,
      tags: edits.tags ?? parseJson<string[]>(src.tags, []),
      notes: edits.notes ?? "",
      parentId: id,
      // where it ran and what it asked for, unless the edits say otherwise
      queue: edits.queue ?? src.queue,
      resources: edits.resources ?? parseJson<ResourceRequest>(src.resources, {}),
    },
    deps,
  );
}
