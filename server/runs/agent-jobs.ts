/**
 * An agent evaluation queued from the dashboard (issue 30): a sweep job (kind "sweep", spec
 * source "agent") whose spec carries `agentRun`; the worker runs runAgent in its engine process
 * and the engine's agent_sample / agent_summary events are stored as an uploaded file's rows are
 * (server/runs/agent-upload.ts, ingest.ts), so the chart, table and replay player show it as it fills.
 * Like a sweep, it runs on the queue of the run it evaluates (a Slurm queue: its own sbatch job).
 */
import type { AgentRequest, SweepDto, SweepSpec } from "../../lib/contracts/index.ts";
import { sweepReaderLabel } from "../../lib/contracts/index.ts";
import type { DbHandle } from "../db/client.ts";
import { badRequest, conflict, notFound } from "./errors.ts";
import { newRunId, type RunsDeps } from "./service.ts";
import { checkedReader, sweepDtos } from "./sweeps.ts";
import { agentLabel } from "./agent-upload.ts";
import { queueNames } from "./queues.ts";
import { settings } from "../settings.ts";

export async function createAgentRun(h: DbHandle, runId: string, body: AgentRequest, deps: RunsDeps): Promise<SweepDto> {
  const run = await h.prisma.run.findUnique({ where: { id: runId }, select: { name: true, kind: true, envName: true, task: true, queue: true, resources: true } });
  if (!run) throw notFound(`run ${runId}`);
  if (run.kind === "sweep") throw conflict(`run ${runId} is a sweep job; evaluate the run it evaluates`);
  if (run.envName !== "babilong") throw conflict(`the agent runs on BabiLong (this run is ${run.envName})`);
  // the run's best checkpoint: its test samples (the ones its sweeps score), and the encoders of dense / qrag
  const ckpt = await h.prisma.checkpoint.findFirst({ where: { runId }, orderBy: [{ best: "desc" }, { update: "desc" }, { id: "desc" }] });
  if (!ckpt && body.retriever !== "bm25") throw badRequest(`retriever ${body.retriever} needs a checkpoint of run ${runId}`, { retriever: `${body.retriever} needs a checkpoint (the run has saved none yet); bm25 needs none` });
  const model = checkedReader(body.model, deps.dataRoot ?? settings().dataRoot, "model");
  const spec: SweepSpec = {
    checkpoint: ckpt?.path ?? "none",
    checkpointLabel: agentLabel(sweepReaderLabel(model), body.retriever),
    lengths: body.lengths,
    samples: body.samples,
    threshold: 0,
    baselines: false,
    oracleStop: false,
    source: "agent",
    agent: { model: sweepReaderLabel(model), retriever: body.retriever },
    agentRun: { model, retriever: body.retriever, format: body.format, maxCalls: body.maxCalls, maxTokens: body.maxTokens, ...(run.task && /^qa[1-5]$/.test(run.task) ? { task: run.task } : {}) },
  };
  const id = newRunId();
  await h.write((db) =>
    db.run.create({
      data: {
        id, kind: "sweep", sweepOf: runId, status: "queued", name: `${run.name} · ${spec.checkpointLabel}`.slice(0, 200),
        config: JSON.stringify(spec), envName: run.envName, task: run.task, progressTotal: spec.lengths.length * spec.samples, createdBy: deps.actor ?? null,
        // where the run it evaluates ran, with its request (as a sweep: sweeps.ts)
        ...(queueNames().includes(run.queue) ? { queue: run.queue, resources: run.resources } : {}),
      },
    }),
  );
  deps.notifier.changed([id]);
  const [created] = await sweepDtos(h, { id });
  deps.scheduler.kick();
  return created;
}
