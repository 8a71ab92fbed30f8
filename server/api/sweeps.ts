/** REST handlers for context-length sweeps (bound to paths in router.ts); cancel/resume are the runs' own. */
import { createAgentBody, createSweepBody, runIdParams, uploadAgentBody, uploadSweepBody } from "../../lib/contracts/index.ts";
import { uploadAgent } from "../runs/agent-upload.ts";
import { createAgentRun } from "../runs/agent-jobs.ts";
import { acrossLengths, createSweep, getSweep, listSweeps, uploadSweep } from "../runs/sweeps.ts";
import { handler, parseWith, readJson, type Params } from "./http.ts";

const idOf = (params: Params) => parseWith(runIdParams, params, "run id").id;

export const runSweeps = {
  GET: handler(async (_req, p, d) => listSweeps(d.db, idOf(p))),
  POST: handler(async (req, p, d) => createSweep(d.db, idOf(p), parseWith(createSweepBody, await readJson(req), "body"), d), 201),
};
export const runSweepUpload = {
  POST: handler(async (req, p, d) => uploadSweep(d.db, idOf(p), parseWith(uploadSweepBody, await readJson(req), "body"), d), 201),
};
/** An agent evaluation (`qrag agent --out`) stored as a completed sweep job of the run (server/runs/agent-upload.ts). */
export const runAgentUpload = {
  POST: handler(async (req, p, d) => uploadAgent(d.db, idOf(p), parseWith(uploadAgentBody, await readJson(req), "body"), d), 201),
};
/** An agent evaluation the worker runs (server/runs/agent-jobs.ts). */
export const runAgentJobs = {
  POST: handler(async (req, p, d) => createAgentRun(d.db, idOf(p), parseWith(createAgentBody, await readJson(req), "body"), d), 201),
};
export const sweepItem = { GET: handler(async (_req, p, d) => getSweep(d.db, idOf(p))) };
export const sweepAcross = { GET: handler(async (_req, p, d) => acrossLengths(d.db, idOf(p))) };
