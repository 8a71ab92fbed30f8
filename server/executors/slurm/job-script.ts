/**
 * The batch script of a run's job and its request: the job starts one trainer worker
 * (server/worker/main.ts --one-run, run as the dashboard runs it: worker-entry.ts) that connects back to the dashboard with the token made for
 * this job, takes this run only (the token binds it, server/realtime/workers.ts) and exits when the
 * run ends, which ends the job. Everything the worker needs travels as the job's own variables
 * (`--export` names them, request.ts); the script itself holds no secret, since it stays on disk.
 */
import path from "node:path";
import type { ResourceRequest } from "../../../lib/contracts/index.ts";
import type { JobRequest } from "./request.ts";
import { nodeFlagsFor } from "../../worker-entry.ts";

export interface JobPlan {
  runId: string;
  /** This run's n-th job (1, 2, …): names its files. */
  jobNumber: number;
  partition: string;
  resources: ResourceRequest;
  /** The worker token made for this job (its secret). */
  token: string;
  dashboardUrl: string;
  jobsDir: string;
  /** The repository root on the nodes (the project installed where jobs can run it). */
  root: string;
  /** The worker's entry there, run as the dashboard runs it (worker-entry.ts). */
  worker: string;
  /** The node binary on the nodes. */
  node: string;
  /** The data root config paths resolve in (the dashboard's, on the shared file system). */
  dataRoot: string;
}

/** Single quotes for bash: the only character to escape is the quote itself. */
const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Where the n-th job of a run writes its stdout and stderr (Slurm writes them; the executor reads their tails). */
export function jobOutputPaths(jobsDir: string, runId: string, jobNumber: number): { stdout: string; stderr: string } {
  const base = path.join(jobsDir, `${runId}-${jobNumber}`);
  return { stdout: `${base}.out`, stderr: `${base}.err` };
}

export function jobRequestFor(p: JobPlan): JobRequest {
  const base = `${p.runId}-${p.jobNumber}`;
  const out = jobOutputPaths(p.jobsDir, p.runId, p.jobNumber);
  const r = p.resources;
  const script = [
    "#!/bin/bash",
    `# Q-RAG Studio: run ${p.runId}, job ${p.jobNumber}; the worker exits when the run ends`,
    `cd ${sh(p.root)} || exit 1`,
    `exec ${[p.node, ...nodeFlagsFor(p.worker), p.worker].map(sh).join(" ")} --one-run`,
    "",
  ].join("\n");
  return {
    script,
    name: jobName(p.runId),
    partition: p.partition,
    cpus: r.cpus ?? 1,
    memMb: r.mem_mb ?? 4096,
    timeLimitMin: r.time_limit_min ?? 60,
    ...(r.gpus ? { gpus: r.gpus } : {}),
    ...(r.gpu_type ? { gpuType: r.gpu_type } : {}),
    ...(r.account ? { account: r.account } : {}),
    ...(r.qos ? { qos: r.qos } : {}),
    stdoutPath: out.stdout,
    stderrPath: out.stderr,
    env: {
      QRAG_DASHBOARD_URL: p.dashboardUrl,
      QRAG_WORKER_TOKEN: p.token,
      QRAG_WORKER_NAME: `slurm-${base}`,
      QRAG_WORKER_DATA_DIR: path.join(p.jobsDir, base),
      QRAG_DATA_ROOT: p.dataRoot,
      QRAG_WORKER_ONE_RUN: "1",
      // the engine uses the CPUs Slurm gave the job, no more
      QRAG_WASM_THREADS: String(Math.min(8, Math.max(1, r.cpus ?? 1))),
      NODE_ENV: "production",
    },
  };
}

/** Every job of a run carries its name: how a submission whose answer was lost is found again. */
export const jobName = (runId: string) => `qrag-${runId}`;
