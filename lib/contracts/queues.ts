/**
 * Queues and resource requests (issue 29): where a run executes and what it asks its executor for.
 * One schema bounds the request for the server (POST /api/runs) and the launch form alike, so the
 * form's errors are the server's, field by field.
 */
import { z } from "zod";

/** Slurm's own spelling of partition, account, QoS and GPU type names: nothing a flag could hide in. */
const slurmName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$/, "letters, digits and _ . + - (at most 64)");

/** The bounds of a request's counts: GPUs 0…64, CPUs 1…1024, memory up to 64 TiB, time up to a year. */
export const RESOURCE_LIMITS = {
  gpus: { min: 0, max: 64 },
  cpus: { min: 1, max: 1024 },
  mem_mb: { min: 1, max: 64 << 20 },
  time_limit_min: { min: 1, max: 366 * 24 * 60 },
} as const;
const count = (k: keyof typeof RESOURCE_LIMITS) => {
  const { min, max } = RESOURCE_LIMITS[k];
  return z.number().int("a whole number").min(min, `at least ${min}`).max(max, `at most ${max}`);
};

/**
 * What a run asks its executor for; each field left out takes its queue's default (settings).
 * Bounded here so a typo never reaches a scheduler. Connected workers ignore it; a Slurm queue
 * turns it into sbatch's options.
 */
export const resourceRequest = z.strictObject({
  gpus: count("gpus").optional(),
  gpu_type: slurmName.optional(),
  cpus: count("cpus").optional(),
  mem_mb: count("mem_mb").optional(),
  time_limit_min: count("time_limit_min").optional(),
  account: slurmName.optional(),
  qos: slurmName.optional(),
});
export type ResourceRequest = z.infer<typeof resourceRequest>;
export type ResourceKey = keyof ResourceRequest;

/** The request's fields in the order the launch form and the run page show them. */
export const RESOURCE_FIELDS: readonly { key: ResourceKey; label: string; kind: "count" | "name" }[] = [
  { key: "gpus", label: "GPUs", kind: "count" },
  { key: "gpu_type", label: "GPU type", kind: "name" },
  { key: "cpus", label: "CPUs", kind: "count" },
  { key: "mem_mb", label: "memory (MB)", kind: "count" },
  { key: "time_limit_min", label: "time limit (min)", kind: "count" },
  { key: "account", label: "account", kind: "name" },
  { key: "qos", label: "QoS", kind: "name" },
];

/** A queue's name: "workers" (the connected workers, the default) or one the settings define. */
export const queueName = z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, "a queue name (lowercase letters, digits, _ and -)");

export const EXECUTOR_KINDS = ["workers", "slurm"] as const;
export type ExecutorKind = (typeof EXECUTOR_KINDS)[number];

/** GET /api/queues: one queue this dashboard has. */
export interface QueueDto {
  name: string;
  /** "workers": the connected workers take its runs; "slurm": each run becomes an sbatch job. */
  kind: ExecutorKind;
  /** The Slurm partition its jobs go to; null for the workers queue. */
  partition: string | null;
  /** What a run of this queue asks for when it names nothing (the settings' defaults). */
  defaults: ResourceRequest;
  /** The bounds every request is checked against (RESOURCE_LIMITS). */
  limits: typeof RESOURCE_LIMITS;
  /** Runs of this queue waiting (queued), and running. */
  pending: number;
  running: number;
}
