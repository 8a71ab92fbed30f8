/**
 * Context-length sweeps as jobs. A sweep is a Run of kind "sweep" (sweepOf = the evaluated run,
 * config = its SweepSpec), so the scheduler claims, leases, cancels and resumes it like any run;
 * its events store sweep points and one Episode row (phase "sweep") per episode. A sweep run by
 * the CLI (`qrag sweep --out/--episodes`) can be uploaded as a completed sweep job.
 */
import { z } from "zod";
import type { AcrossLengthsDto, AgentSummary, AcrossSampleDto, EpisodeRecord, SweepDto, SweepListDto, SweepPoint, SweepReader, SweepRequest, SweepSpec, SweepUpload } from "../../lib/contracts/index.ts";
import { episodeRecordSchema, runListSelect, sweepPointSchema } from "../../lib/contracts/index.ts";
import type { Db, DbHandle } from "../db/client.ts";
import { insertRows } from "../db/bulk-insert.ts";
import { badRequest, conflict, notFound } from "./errors.ts";
import { parseJson, toRunDto } from "./dto.ts";
import { ensureRun } from "./queries.ts";
import { newRunId, workerNames, type RunsDeps } from "./service.ts";
import { resolveDataPath } from "../qrag/index.ts";
import { settings } from "../settings.ts";
import { queueNames } from "./queues.ts";

/** Queues a sweep of one of `runId`'s checkpoints. */
export async function createSweep(h: DbHandle, runId: string, body: SweepRequest, deps: RunsDeps): Promise<SweepDto> {
  const run = await h.prisma.run.findUnique({ where: { id: runId }, select: { name: true, kind: true, envName: true, task: true, queue: true, resources: true } });
  if (!run) throw notFound(`run ${runId}`);
  if (run.kind === "sweep") throw conflict(`run ${runId} is a sweep job; sweep the run it evaluates`);
  if (run.envName !== "babilong") throw conflict(`sweeps need a BabiLong run (this one is ${run.envName})`);
  const ckpt =
    body.checkpoint === "best" || body.checkpoint === "last"
      ? await h.prisma.checkpoint.findFirst({ where: { runId, best: body.checkpoint === "best" }, orderBy: [{ update: "desc" }, { id: "desc" }] })
      : await h.prisma.checkpoint.findFirst({ where: { runId, update: body.checkpoint }, orderBy: [{ best: "asc" }, { id: "desc" }] });
  if (!ckpt) {
    const what = typeof body.checkpoint === "number" ? `at update ${body.checkpoint}` : `"${body.checkpoint}"`;
    throw badRequest(`run ${runId} has no checkpoint ${what}`, { checkpoint: `no checkpoint ${what} (the run has saved none yet, or not this one)` });
  }
  const spec: SweepSpec = {
    checkpoint: ckpt.path,
    checkpointLabel: `${ckpt.best ? "best" : "last"} @ update ${ckpt.update}`,
    lengths: body.lengths,
    samples: body.samples,
    threshold: body.threshold,
    baselines: body.baselines,
    oracleStop: body.oracleStop,
    source: "dashboard",
    ...(body.reader ? { reader: checkedReader(body.reader, deps.dataRoot ?? settings().dataRoot) } : {}),
  };
  const id = newRunId();
  await h.write((db) =>
    db.run.create({
      data: {
        id, kind: "sweep", sweepOf: runId, status: "queued", name: `${run.name} · sweep ${spec.checkpointLabel}`.slice(0, 200),
        config: JSON.stringify(spec), envName: run.envName, task: run.task, progressTotal: spec.lengths.length * spec.samples,
        createdBy: deps.actor ?? null,
        // it runs where the run it evaluates ran, asking for the same resources (on the connected
        // workers when that queue is gone from this dashboard's settings: a sweep never waits forever)
        ...(queueNames().includes(run.queue) ? { queue: run.queue, resources: run.resources } : {}),
      },
    }),
  );
  deps.notifier.changed([id]);
  const [created] = await sweepDtos(h, { id });
  deps.scheduler.kick();
  return created;
}

/**
 * The Run row of an uploaded sweep job, complete when stored: a CLI sweep or an agent evaluation
 * (agent-upload.ts) of `runId`, named by the upload or by its label, `done` episodes of `done`.
 */
export function completedSweepRun(id: string, runId: string, run: { name: string; envName: string; task: string }, spec: SweepSpec, name: string | undefined, done: number, actor: string | null | undefined) {
  const now = new Date();
  return {
    id, kind: "sweep", sweepOf: runId, status: "completed", name: (name || `${run.name} · ${spec.checkpointLabel}`).slice(0, 200),
    config: JSON.stringify(spec), envName: run.envName, task: run.task, startedAt: now, finishedAt: now,
    progressDone: done, progressTotal: done, createdBy: actor ?? null,
  };
}

/** A GGUF reader's file must be a file inside the data root now (the worker checks again when it opens it). */
export function checkedReader(r: SweepReader, dataRoot: string, field = "reader"): SweepReader {
  if (r.provider !== "gguf") return r;
  const p = resolveDataPath(dataRoot, r.file, { kind: "file" });
  if (!p.ok) throw badRequest(`${field}.file ${p.message}`, { [`${field}.file`]: p.message });
  return { provider: "gguf", file: p.rel };
}

export async function sweepDtos(h: DbHandle, where: { id: string } | { sweepOf: string }): Promise<SweepDto[]> {
  const rows = await h.prisma.run.findMany({
    where: { ...where, kind: "sweep" },
    select: { ...runListSelect, config: true, sweepPoints: { select: { point: true }, orderBy: { numChunks: "asc" } } },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
  });
  const names = await workerNames(h);
  const now = Date.now();
  return rows.map(({ config, sweepPoints, ...row }) => {
    const spec = parseJson<SweepSpec>(config, {} as SweepSpec);
    const run = toRunDto(row, names, now);
    // an agent evaluation's point rows hold its summary rows (server/runs/agent-upload.ts)
    if (spec.source === "agent") return { run, spec, points: [], agent: sweepPoints.map((p) => parseJson<AgentSummary>(p.point, {} as AgentSummary)) };
    return { run, spec, points: sweepPoints.map((p) => parseJson<SweepPoint>(p.point, {} as SweepPoint)) };
  });
}

/** The sweeps of a run, oldest first, with their points. */
export async function listSweeps(h: DbHandle, runId: string): Promise<SweepListDto> {
  await ensureRun(h, runId);
  return { sweeps: await sweepDtos(h, { sweepOf: runId }) };
}

/** One sweep job (GET /api/sweeps/:id). */
export async function getSweep(h: DbHandle, sweepId: string): Promise<SweepDto> {
  const [s] = await sweepDtos(h, { id: sweepId });
  if (!s) throw notFound(`sweep ${sweepId}`);
  return s;
}

/** "file line N: field: message" for each bad line; never the line's text. */
export function parseJsonl<T>(file: string, text: string, schema: z.ZodType<T>, errors: Record<string, string>): { line: number; value: T }[] {
  const out: { line: number; value: T }[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    if (!raw.trim() || Object.keys(errors).length >= 20) return;
    const where = `${file} line ${i + 1}`;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      errors[where] = "not valid JSON";
      return;
    }
    const r = schema.safeParse(json);
    if (!r.success) {
      const issue = r.error.issues[0];
      errors[where] = `${issue.path.join(".") || "(line)"}: ${issue.message}`;
      return;
    }
    out.push({ line: i + 1, value: r.data });
  });
  return out;
}

const sweepEpisodeLine = episodeRecordSchema.extend({ numChunks: z.number().int().min(1) });

/**
 * Stores `qrag sweep --out` (and `--episodes`) files as a completed sweep of `runId`, in one
 * transaction: any bad line (named by file and line) leaves nothing behind.
 */
export async function uploadSweep(h: DbHandle, runId: string, body: SweepUpload, deps: RunsDeps): Promise<SweepDto> {
  const run = await h.prisma.run.findUnique({ where: { id: runId }, select: { name: true, kind: true, envName: true, task: true, queue: true, resources: true } });
  if (!run) throw notFound(`run ${runId}`);
  if (run.kind === "sweep") throw conflict(`run ${runId} is a sweep job; upload to the run it evaluates`);
  const errors: Record<string, string> = {};
  const points = parseJsonl(body.points.name, body.points.text, sweepPointSchema, errors);
  const episodes = body.episodes ? parseJsonl(body.episodes.name, body.episodes.text, sweepEpisodeLine, errors) : [];
  if (!points.length && !Object.keys(errors).length) errors[body.points.name] = "no sweep points (expected one JSON line per length, as `qrag sweep --out` writes)";
  const seenPoint = new Map<number, number>();
  for (const p of points) {
    const prev = seenPoint.get(p.value.numChunks);
    if (prev !== undefined) errors[`${body.points.name} line ${p.line}`] = `numChunks: ${p.value.numChunks} repeats line ${prev}`;
    seenPoint.set(p.value.numChunks, p.line);
  }
  if (points.length > 8) errors[body.points.name] = `at most 8 lengths per sweep (got ${points.length})`;
  const seenEp = new Map<string, number>();
  for (const e of episodes) {
    const key = `${e.value.numChunks}:${e.value.id}`;
    const where = `${body.episodes!.name} line ${e.line}`;
    if (seenEp.has(key)) errors[where] = `id: sample ${JSON.stringify(e.value.id.slice(0, 80))} at ${e.value.numChunks} chunks repeats line ${seenEp.get(key)}`;
    else if (!seenPoint.has(e.value.numChunks)) errors[where] = `numChunks: ${e.value.numChunks} has no sweep point in ${body.points.name}`;
    seenEp.set(key, e.line);
  }
  if (Object.keys(errors).length) throw badRequest(`invalid sweep files: ${Object.keys(errors).slice(0, 5).join("; ")}`, errors);

  const first = points[0].value;
  const spec: SweepSpec = {
    checkpoint: "uploaded",
    checkpointLabel: `uploaded ${body.points.name}`.slice(0, 200),
    lengths: points.map((p) => p.value.numChunks),
    samples: Math.max(...points.map((p) => p.value.samples)),
    threshold: first.threshold,
    baselines: points.every((p) => p.value.bm25 !== undefined),
    oracleStop: first.oracle_stop,
    source: "upload",
  };
  const id = newRunId();
  await h.write((db) =>
    db.$transaction(
      async (tx) => {
        await tx.run.create({ data: completedSweepRun(id, runId, run, spec, body.name, episodes.length, deps.actor) });
        await tx.sweepPoint.createMany({ data: points.map(({ value: p }) => ({ runId: id, numChunks: p.numChunks, tokens: p.tokens, samples: p.samples, point: JSON.stringify(p) })) });
        await insertRows(
          tx as unknown as Db, h.provider, "Episode",
          ["runId", "seq", "phase", "step", "update", "sampleId", "numChunks", "coverage", "f1", "return", "record"],
          episodes.map(({ value: { numChunks, ...rec } }) => [id, 0, "sweep", 0, 0, rec.id, numChunks, rec.metrics.coverage, rec.metrics.f1, rec.return, JSON.stringify(rec)]),
          { paramsPerStatement: 9000 },
        );
      },
      { maxWait: 20_000, timeout: 120_000 },
    ),
  );
  deps.notifier.changed([id]);
  return getSweep(h, id);
}

/** A sample id without its haystack size: BabiLong ids end in "@n<chunks>". */
export const sampleBase = (id: string) => id.replace(/@n\d+$/, "");

/**
 * The same samples at every length of a sweep, for the "across lengths" view: per sample and
 * length the picks, their Q and whether each was gold (the full records stay on the server).
 */
export async function acrossLengths(h: DbHandle, sweepId: string): Promise<AcrossLengthsDto> {
  const sweep = await h.prisma.run.findUnique({ where: { id: sweepId }, select: { kind: true } });
  if (!sweep || sweep.kind !== "sweep") throw notFound(`sweep ${sweepId}`);
  const rows = await h.prisma.episode.findMany({ where: { runId: sweepId, phase: "sweep" }, select: { id: true, numChunks: true, record: true }, orderBy: { id: "asc" } });
  const lengths = new Set<number>();
  const bySample = new Map<string, AcrossSampleDto>();
  for (const r of rows) {
    const rec = parseJson<EpisodeRecord | null>(r.record, null);
    if (!rec) continue;
    lengths.add(r.numChunks);
    const base = sampleBase(rec.id);
    let s = bySample.get(base);
    if (!s) bySample.set(base, (s = { sample: base, question: rec.question, cells: {} }));
    const gold = new Set(rec.sf_idx);
    s.cells[r.numChunks] = {
      episodeId: r.id,
      coverage: rec.metrics.coverage,
      f1: rec.metrics.f1,
      steps: rec.steps.map((st) => ({ index: st.index, q: st.q, gold: st.gold })),
      found: new Set(rec.pred_idx.filter((i) => gold.has(i))).size,
      gold: gold.size,
    };
  }
  return { lengths: [...lengths].sort((a, b) => a - b), samples: [...bySample.values()] };
}
