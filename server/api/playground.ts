/**
 * REST handlers of the playground (lib/contracts/playground.ts; bound to paths in router.ts). The
 * episode runs in an engine process of the pool (server/playground/pool.ts), never in this one.
 * Running stores nothing (viewer role, like the launch form's dry run); saving runs the same
 * episode again and stores it (member), so a stored episode is always what the checkpoint did.
 */
import { playgroundBody, playgroundSampleQuery, runIdParams, type PlaygroundResultDto, type PlaygroundSavedDto } from "../../lib/contracts/index.ts";
import { playgroundCheckpoint, playgroundRequest, playgroundSampleOf, savePlaygroundEpisode } from "../runs/playground.ts";
import { ApiError } from "../runs/errors.ts";
import { PlaygroundError } from "../playground/pool.ts";
import { handler, parseWith, queryOf, readJson, type ApiDeps, type Params } from "./http.ts";

const idOf = (params: Params) => parseWith(runIdParams, params, "run id").id;

async function play(req: Request, p: Params, d: ApiDeps): Promise<PlaygroundResultDto> {
  const t0 = performance.now();
  const runId = idOf(p);
  const body = parseWith(playgroundBody, await readJson(req), "body");
  const input = playgroundRequest(body);
  if (!d.playground) throw new ApiError(503, "the playground is not available on this server");
  const ckpt = await playgroundCheckpoint(d.db, runId, body.checkpoint, d.playground.runsDir);
  try {
    const r = await d.playground.pool.run(ckpt.dir, input);
    return { record: r.record, checkpoint: { name: ckpt.name, update: ckpt.update, step: ckpt.step }, ms: { total: performance.now() - t0, engine: r.ms }, warm: r.warm };
  } catch (e) {
    if (e instanceof PlaygroundError) throw new ApiError(e.status, e.message);
    throw e;
  }
}

export const runPlayground = { POST: handler(play) };

export const runPlaygroundEpisodes = {
  POST: handler(async (req, p, d): Promise<PlaygroundSavedDto> => {
    const r = await play(req, p, d);
    const runId = idOf(p);
    return { runId, episodeId: await savePlaygroundEpisode(d.db, runId, r.checkpoint.update, r.record) };
  }, 201),
};

export const runPlaygroundSample = {
  GET: handler(async (req, p, d) => playgroundSampleOf(d.db, idOf(p), parseWith(playgroundSampleQuery, queryOf(req), "query").index ?? 0, d.dataRoot)),
};
