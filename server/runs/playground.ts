/**
 * The playground's database side (lib/contracts/playground.ts): which checkpoint folder a run's
 * "best" or "last" is (resolved inside the runs folder at open time: a stored path is never
 * followed outside it), the input checked against every bound before an engine process is asked,
 * a test sample of the run's dataset, and a played episode stored under the run (phase
 * "playground"), as any episode, with its chunks in the record.
 */
import fs from "node:fs";
import path from "node:path";
import { PLAYGROUND_LIMITS, playgroundBody, type EpisodeRecord, type PlaygroundCheckpoint, type PlaygroundInput, type PlaygroundSampleDto } from "../../lib/contracts/index.ts";
import type { z } from "zod";
import { playgroundInput, playgroundSample, validateConfig, type RunConfig } from "../qrag/index.ts";
import type { DbHandle } from "../db/client.ts";
import { ApiError, badRequest, conflict, notFound } from "./errors.ts";
import { parseJson } from "./dto.ts";

export interface PlaygroundCheckpointRow {
  name: PlaygroundCheckpoint;
  dir: string;
  update: number;
  step: number;
}

/** The newest checkpoint row of that name, its folder resolved (links too) inside `runsDir`. */
export async function playgroundCheckpoint(h: DbHandle, runId: string, name: PlaygroundCheckpoint, runsDir: string): Promise<PlaygroundCheckpointRow> {
  const run = await h.prisma.run.findUnique({ where: { id: runId }, select: { kind: true } });
  if (!run) throw notFound(`run ${runId}`);
  if (run.kind === "sweep") throw conflict(`run ${runId} is a sweep job; open the run it evaluates`);
  const row = await h.prisma.checkpoint.findFirst({ where: { runId, best: name === "best" }, orderBy: [{ update: "desc" }, { id: "desc" }] });
  if (!row) throw badRequest(`run ${runId} has no "${name}" checkpoint`, { checkpoint: `no "${name}" checkpoint (the run has saved none yet)` });
  let dir: string;
  let root: string;
  try {
    root = fs.realpathSync(runsDir);
    dir = fs.realpathSync(row.path);
  } catch {
    throw conflict(`the "${name}" checkpoint of run ${runId} is not on the dashboard's machine (its worker keeps it)`);
  }
  if (path.relative(root, dir).startsWith("..") || path.isAbsolute(path.relative(root, dir))) {
    throw conflict(`the "${name}" checkpoint of run ${runId} is outside the dashboard's runs folder`);
  }
  return { name, dir, update: row.update, step: row.step };
}

/** Parses and bounds a playground body; the split document is bounded too (400 naming the field). */
export function playgroundRequest(body: z.output<typeof playgroundBody>): PlaygroundInput {
  const input = playgroundInput(body);
  if (input.chunks.length === 0) throw badRequest("invalid body: document", { document: "has no sentence to retrieve" });
  if (input.chunks.length > PLAYGROUND_LIMITS.chunks) throw badRequest("invalid body: document", { document: `splits into ${input.chunks.length} sentences; at most ${PLAYGROUND_LIMITS.chunks}` });
  if (input.tokens > PLAYGROUND_LIMITS.documentTokens) throw badRequest("invalid body: document", { document: `${input.tokens} tokens; at most ${PLAYGROUND_LIMITS.documentTokens}` });
  return input;
}

async function runConfig(h: DbHandle, runId: string): Promise<RunConfig> {
  const run = await h.prisma.run.findUnique({ where: { id: runId }, select: { config: true } });
  if (!run) throw notFound(`run ${runId}`);
  try {
    return validateConfig(parseJson<unknown>(run.config, null));
  } catch {
    throw conflict(`run ${runId} has no config this engine can draw samples from`);
  }
}

/** Test sample `index` of the run's dataset, bounded as a pasted document is. */
export async function playgroundSampleOf(h: DbHandle, runId: string, index: number, dataRoot?: string): Promise<PlaygroundSampleDto> {
  const config = await runConfig(h, runId);
  let s: PlaygroundSampleDto | null;
  try {
    s = playgroundSample(config, index, dataRoot, PLAYGROUND_LIMITS.chunks);
  } catch (e) {
    if (e instanceof ApiError) throw e;
    throw conflict(`no sample ${index} of this run's dataset: ${(e as Error).name}`);
  }
  if (!s) throw conflict(`sample ${index} has more than the ${PLAYGROUND_LIMITS.chunks} chunks the playground takes`);
  if (new TextEncoder().encode(s.document).length > PLAYGROUND_LIMITS.documentBytes) {
    throw conflict(`sample ${index} is larger than the playground takes (${PLAYGROUND_LIMITS.documentBytes / 1000} KB)`);
  }
  return s;
}

/** Stores a played episode under the run; the id names it among the run's episodes. */
export async function savePlaygroundEpisode(h: DbHandle, runId: string, update: number, record: EpisodeRecord): Promise<number> {
  const sampleId = `playground-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const rec: EpisodeRecord = { ...record, id: sampleId };
  const row = await h.prisma.episode.create({
    data: {
      runId, seq: 0, phase: "playground", step: 0, update, sampleId, numChunks: rec.num_chunks,
      coverage: rec.metrics.coverage, f1: rec.metrics.f1, return: rec.return, record: JSON.stringify(rec),
    },
    select: { id: true },
  });
  return row.id;
}
