/**
 * Queues: where a run executes. "workers" is the connected workers (the default, today's
 * behaviour); with QRAG_EXECUTOR=slurm there is also "slurm", whose runs become sbatch jobs
 * (server/executors/slurm/executor.ts). A run's resource request is its queue's defaults (settings)
 * with the fields it names on top, stored on the run as asked, so the job it gets later (or again,
 * after a requeue) asks for the same thing.
 */
import { RESOURCE_LIMITS, type QueueDto, type ResourceRequest } from "../../lib/contracts/index.ts";
import type { DbHandle } from "../db/client.ts";
import { settings, type Settings } from "../settings.ts";
import { invalid } from "./errors.ts";

export const WORKERS_QUEUE = "workers";
export const SLURM_QUEUE = "slurm";

/** The queues this dashboard has. */
export function queueNames(s: Settings = settings()): string[] {
  return s.slurm ? [WORKERS_QUEUE, SLURM_QUEUE] : [WORKERS_QUEUE];
}

/** The queue and the request with its defaults; an unknown queue or an inconsistent request → 400 naming the field. */
export function resolveQueue(queue: string | undefined, resources: ResourceRequest | undefined, s: Settings = settings()): { queue: string; resources: ResourceRequest } {
  const q = queue ?? WORKERS_QUEUE;
  if (!queueNames(s).includes(q)) throw invalid("queue", [{ path: "queue", message: `no such queue (this dashboard has: ${queueNames(s).join(", ")})` }]);
  const r: ResourceRequest = { ...(q === SLURM_QUEUE && s.slurm ? s.slurm.defaults : {}), ...resources };
  if (r.gpu_type !== undefined && !(r.gpus ?? 0)) throw invalid("resources", [{ path: "resources.gpu_type", message: "a GPU type needs gpus ≥ 1" }]);
  return { queue: q, resources: r };
}

/** Every queue with its executor, defaults and how many runs wait in it and run (GET /api/queues; one grouped count). */
export async function listQueues(h: DbHandle, s: Settings = settings()): Promise<QueueDto[]> {
  const counts = await h.prisma.run.groupBy({ by: ["queue", "status"], where: { status: { in: ["queued", "running"] } }, _count: { _all: true } });
  const count = (queue: string, status: string) => counts.find((c) => c.queue === queue && c.status === status)?._count._all ?? 0;
  return queueNames(s).map((name) => {
    const slurm = name === SLURM_QUEUE && s.slurm ? s.slurm : null;
    return {
      name,
      kind: slurm ? "slurm" : "workers",
      partition: slurm?.partition ?? null,
      defaults: slurm ? { ...slurm.defaults } : {},
      limits: RESOURCE_LIMITS,
      pending: count(name, "queued"),
      running: count(name, "running"),
    };
  });
}
