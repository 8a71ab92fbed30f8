/**
 * Queues: where a run executes. "workers" is the connected workers (the default, today's
 * behaviour); with QRAG_EXECUTOR=slurm there is also "slurm", whose runs become sbatch jobs
 * (server/executors/slurm/executor.ts). A run's resource request is its queue's defaults (settings)
 * with the fields it names on top, stored on the run as asked, so the job it gets later (or again,
 * after a requeue) asks for the same thing.
 */
import type { ResourceRequest } from "../../lib/contracts/index.ts";
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
