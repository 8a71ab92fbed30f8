/**
 * What one job asks Slurm for, checked before any sbatch runs: a bad request (zero CPUs, negative
 * GPUs, a partition name with a space) is refused here naming the field, so it never reaches the
 * controller and never costs a queued job. Limits that only the cluster knows (an unknown
 * partition, more than the partition allows) are sbatch's to refuse; its reason is passed on.
 */
import path from "node:path";
import { z } from "zod";

/** Partition, account, QoS and GPU type names: Slurm's own spelling, nothing a flag could hide in. */
const slurmName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$/, "letters, digits and _ . + - (at most 64)");
const count = (max: number) => z.number().int("a whole number").min(1, "at least 1").max(max, `at most ${max}`);
/** Where Slurm writes the job's output: absolute, printable; Slurm's %j (job id) and %x (name) are allowed. */
const outputPath = z
  .string()
  .max(4096)
  .refine((p) => path.isAbsolute(p), "an absolute path")
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  .refine((p) => !/[\u0000-\u001f\u007f]/.test(p), "printable characters only");

export const jobRequestSchema = z
  .object({
    /** The batch script's text; its first line names the interpreter ("#!/bin/bash"). */
    script: z.string().max(1 << 20).refine((s) => s.startsWith("#!"), 'starts with "#!" (the interpreter)'),
    partition: slurmName,
    /** GPUs on the node; 0 or left out: none. */
    gpus: z.number().int("a whole number").min(0, "0 or more").max(64, "at most 64").optional(),
    gpuType: slurmName.optional(),
    cpus: count(1024),
    memMb: count(64 << 20),
    timeLimitMin: count(366 * 24 * 60),
    account: slurmName.optional(),
    qos: slurmName.optional(),
    name: z
      .string()
      .min(1)
      .max(128)
      // eslint-disable-next-line no-control-regex -- control characters are what this refuses
      .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), "printable characters only"),
    /** Variables the job gets (a token, the dashboard's URL); names only reach sbatch's argv, values its environment. */
    env: z.record(z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "a variable name")
        // --export's own words: a variable so named would export everything, or nothing
        .refine((k) => !["ALL", "NONE", "NIL"].includes(k), "ALL, NONE and NIL are --export's words"), z.string().max(1 << 16).refine((v) => !v.includes("\0"), "no NUL")).optional(),
    stdoutPath: outputPath,
    stderrPath: outputPath,
  })
  .strict()
  .refine((r) => r.gpuType === undefined || (r.gpus ?? 0) > 0, { path: ["gpuType"], message: "a GPU type needs gpus ≥ 1" });

export type JobRequest = z.input<typeof jobRequestSchema>;

/** A request Slurm was never asked about: `fields` maps each bad field to what is wrong. */
export class JobRequestError extends Error {
  constructor(readonly fields: Record<string, string>) {
    super(`invalid Slurm job request: ${Object.entries(fields).map(([k, v]) => `${k}: ${v}`).join("; ")}`);
    this.name = "JobRequestError";
  }
}

export function checkJobRequest(r: JobRequest): z.output<typeof jobRequestSchema> {
  const p = jobRequestSchema.safeParse(r);
  if (p.success) return p.data;
  const fields: Record<string, string> = {};
  for (const i of p.error.issues) {
    const key = i.path.join(".") || "request";
    if (!Object.hasOwn(fields, key)) Object.defineProperty(fields, key, { value: i.message, enumerable: true });
  }
  throw new JobRequestError(fields);
}

/**
 * sbatch's arguments for a checked request, its script at `scriptPath`. One task on one node with
 * `cpus` CPUs (a run is one worker process); memory per node; GPUs as a generic resource
 * (`--gres=gpu[:type]:N`, which every Slurm with GPUs understands). `--export` names PATH and the
 * job's own variables only, so the dashboard's secrets (its database URL, its worker token) never
 * reach a job; their values come from sbatch's environment. `--no-requeue`: Slurm never reruns a
 * job by itself (a node failure, pre-emption in REQUEUE mode, where a cluster's JobRequeue=1 would):
 * the rerun would reuse the ended job's revoked token and output files, and show no ending. A job
 * ends, is seen ending (NODE_FAIL, PREEMPTED, …), and the executor submits the run's next one.
 */
export function sbatchArgs(r: z.output<typeof jobRequestSchema>, scriptPath: string, workDir: string): string[] {
  const args = [
    "--parsable",
    `--job-name=${r.name}`,
    `--partition=${r.partition}`,
    "--nodes=1",
    "--ntasks=1",
    `--cpus-per-task=${r.cpus}`,
    `--mem=${r.memMb}M`,
    `--time=${r.timeLimitMin}`,
    "--no-requeue",
    `--output=${r.stdoutPath}`,
    `--error=${r.stderrPath}`,
    `--chdir=${workDir}`,
    `--export=${[...new Set(["PATH", ...Object.keys(r.env ?? {})])].join(",")}`,
  ];
  if (r.gpus) args.push(`--gres=gpu:${r.gpuType ? `${r.gpuType}:` : ""}${r.gpus}`);
  if (r.account) args.push(`--account=${r.account}`);
  if (r.qos) args.push(`--qos=${r.qos}`);
  args.push(scriptPath);
  return args;
}
