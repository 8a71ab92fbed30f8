/**
 * The dashboard's Slurm client: submit a job, read jobs' states, cancel one — through Slurm's own
 * commands (sbatch, squeue, sacct, scancel) on the dashboard's host, as a research group's users
 * do, so it works wherever those commands do (no slurmrestd, no database access). Stateless: the
 * job ids it returns are the caller's to store.
 *
 * States come from `squeue --states=all`, which answers for running, waiting and recently ended
 * jobs alike while slurmctld remembers them (MinJobAge, 300 s by default); jobs it has forgotten
 * are asked of `sacct` (accounting through slurmdbd). Without accounting (the tests' cluster:
 * `sacct` says "accounting storage is disabled") a forgotten job is UNKNOWN, so the caller must
 * poll more often than MinJobAge to see every ending.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { runSlurm, SlurmCommandError, type CommandOptions } from "./command.ts";
import { JOB_ID, parseSacct, parseSbatchId, parseSqueue, SACCT_FIELDS, SQUEUE_FORMAT } from "./parse.ts";
import { checkJobRequest, sbatchArgs, type JobRequest } from "./request.ts";
import type { SlurmJob } from "./states.ts";

export interface SlurmClientOptions extends CommandOptions {
  /**
   * Where job scripts are written (a folder inside the data root, made if missing); also the jobs'
   * working folder. It must be visible at the same path on the compute nodes (a shared file system).
   */
  jobsDir: string;
  /** Folder of Slurm's commands (e.g. /opt/slurm/bin); PATH when left out. */
  binDir?: string;
  /** Job ids per squeue/sacct call, so that a thousand jobs never make one giant argv (default 200). */
  idsPerCall?: number;
}

export class SlurmClient {
  constructor(private readonly o: SlurmClientOptions) {}

  private run(cmd: string, args: readonly string[], env?: NodeJS.ProcessEnv) {
    return runSlurm(this.o.binDir ? path.join(this.o.binDir, cmd) : cmd, args, { ...this.o, env: env ?? this.o.env });
  }

  /**
   * Submits one batch job and answers its id. The request is checked first (JobRequestError naming
   * each bad field; nothing is written or run); the script is written to a fresh file of its own
   * (mode 0700, never overwritten) in `jobsDir`; sbatch refusing it raises a SlurmCommandError
   * carrying sbatch's one-line reason ("invalid partition specified: gpu2; …").
   */
  async submit(request: JobRequest): Promise<string> {
    const r = checkJobRequest(request);
    fs.mkdirSync(this.o.jobsDir, { recursive: true, mode: 0o700 });
    const slug = r.name.replace(/[^A-Za-z0-9_.-]+/g, "-").slice(0, 40);
    const scriptPath = path.join(this.o.jobsDir, `${slug}-${Date.now().toString(36)}-${randomBytes(4).toString("hex")}.sh`);
    // "wx": a name taken is an error, never a script replaced under a job that may still read it
    fs.writeFileSync(scriptPath, r.script, { mode: 0o700, flag: "wx" });
    const base = this.o.env ?? process.env;
    const { stdout } = await this.run("sbatch", sbatchArgs(r, scriptPath, this.o.jobsDir), { ...base, ...r.env });
    const id = parseSbatchId(stdout);
    // sbatch said yes but printed no id: the job may exist, so say so rather than submit again
    if (!id) throw new SlurmCommandError("sbatch", `accepted the job but printed no job id (${JSON.stringify(stdout.slice(0, 80))})`, 0);
    return id;
  }

  /**
   * The states of `ids`, one answer per id, in the order asked. squeue first (one call per
   * `idsPerCall` ids); the ids it no longer knows are asked of sacct; ids neither knows are UNKNOWN.
   */
  async jobStates(ids: readonly string[]): Promise<SlurmJob[]> {
    for (const id of ids) if (!JOB_ID.test(id)) throw new RangeError(`not a Slurm job id: ${JSON.stringify(id.slice(0, 40))}`);
    const unique = [...new Set(ids)];
    const found = new Map<string, SlurmJob>();
    for (const chunk of chunks(unique, this.o.idsPerCall ?? 200)) {
      for (const j of parseSqueue(await this.squeue(chunk))) found.set(j.jobId, j);
    }
    const missing = unique.filter((id) => !found.has(id));
    for (const chunk of chunks(missing, this.o.idsPerCall ?? 200)) {
      for (const j of parseSacct(await this.sacct(chunk))) if (!found.has(j.jobId)) found.set(j.jobId, j);
    }
    return ids.map((id) => found.get(id) ?? { jobId: id, state: "UNKNOWN", raw: "not known to squeue or sacct", elapsedS: null, partition: null });
  }

  private async squeue(ids: readonly string[]): Promise<string> {
    try {
      return (await this.run("squeue", ["--noheader", "--states=all", `--jobs=${ids.join(",")}`, `--format=${SQUEUE_FORMAT}`])).stdout;
    } catch (e) {
      // asked for one job it has forgotten, squeue fails instead of printing nothing
      if (e instanceof SlurmCommandError && /Invalid job id specified/i.test(e.reason)) return "";
      throw e;
    }
  }

  private async sacct(ids: readonly string[]): Promise<string> {
    try {
      return (await this.run("sacct", ["--noheader", "--parsable2", "--allocations", `--jobs=${ids.join(",")}`, `--format=${SACCT_FIELDS}`])).stdout;
    } catch (e) {
      // a cluster without slurmdbd: nothing to ask, the jobs stay UNKNOWN
      if (e instanceof SlurmCommandError && /accounting storage is disabled/i.test(e.reason)) return "";
      throw e;
    }
  }

  /**
   * The ids of the jobs named `name` that squeue still knows (waiting, running or recently ended),
   * ascending: how a submission whose answer was lost (the dashboard died inside sbatch) is found.
   */
  async jobIdsNamed(name: string): Promise<string[]> {
    if (!/^[A-Za-z0-9_.-]{1,200}$/.test(name)) throw new RangeError("a job name of letters, digits, _ . -");
    const { stdout } = await this.run("squeue", ["--noheader", "--states=all", `--name=${name}`, "--format=%i"]);
    return stdout.split(/\s+/).filter((id) => JOB_ID.test(id)).sort((a, b) => Number(a) - Number(b));
  }

  /** Cancels a job (waiting or running); a job already ended is no error (scancel says nothing). */
  async cancel(jobId: string): Promise<void> {
    if (!JOB_ID.test(jobId)) throw new RangeError(`not a Slurm job id: ${JSON.stringify(jobId.slice(0, 40))}`);
    await this.run("scancel", [jobId]);
  }
}

function* chunks<T>(xs: readonly T[], n: number): Generator<T[]> {
  for (let i = 0; i < xs.length; i += n) yield xs.slice(i, i + n);
}
