/**
 * Pure readers of Slurm's machine-readable output (sbatch --parsable, squeue with a fixed format,
 * sacct --parsable2): no process, no clock, so the unit tests feed them output captured from a
 * real slurmctld (test/fixtures/slurm/). A line that does not fit is skipped, never guessed at.
 */
import { jobStateFrom, type SlurmJob } from "./states.ts";

/** A job id as the client accepts it: a job, or one task of an array ("123_4"). */
export const JOB_ID = /^[0-9]{1,12}(_[0-9]{1,9})?$/;

/** `sbatch --parsable` prints "jobid" or "jobid;cluster". */
export function parseSbatchId(stdout: string): string | null {
  const line = stdout.trim().split(/\r?\n/).pop() ?? "";
  const m = /^([0-9]{1,12})(;[A-Za-z0-9_.-]+)?$/.exec(line.trim());
  return m ? m[1] : null;
}

/**
 * Slurm's durations: "M:SS", "H:MM:SS", "D-HH:MM:SS" (squeue %M, sacct Elapsed) → seconds;
 * "INVALID", "UNLIMITED", "" and anything else → null.
 */
export function parseElapsed(s: string): number | null {
  const m = /^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$/.exec(s.trim());
  if (!m) return null;
  const [, d, h, min, sec] = m;
  return ((Number(d ?? 0) * 24 + Number(h ?? 0)) * 60 + Number(min)) * 60 + Number(sec);
}

/**
 * squeue's output format: job id, state (long name), reason, node list, time used, partition.
 * None of these fields holds free text (job names do, so they are left out), so "|" splits safely.
 */
export const SQUEUE_FORMAT = "%i|%T|%r|%N|%M|%P";

export function parseSqueue(stdout: string): SlurmJob[] {
  const out: SlurmJob[] = [];
  for (const line of stdout.split(/\r?\n/)) {
    const f = line.trim().split("|");
    if (f.length !== 6 || !JOB_ID.test(f[0])) continue;
    const [jobId, state, reason, nodes, used, partition] = f;
    out.push({ jobId, ...jobStateFrom(state, reason, nodes), elapsedS: parseElapsed(used), partition: partition || null });
  }
  return out;
}

/** sacct's fields, in this order (`sacct -X -n -P -o …`: the allocation only, no steps). */
export const SACCT_FIELDS = "JobID,State,Reason,NodeList,Elapsed,Partition,ExitCode";

export function parseSacct(stdout: string): SlurmJob[] {
  const out: SlurmJob[] = [];
  for (const line of stdout.split(/\r?\n/)) {
    const f = line.trim().split("|");
    if (f.length !== 7 || !JOB_ID.test(f[0])) continue;
    const [jobId, state, reason, nodes, elapsed, partition, exitCode] = f;
    out.push({ jobId, ...jobStateFrom(state, reason, nodes, exitCode), elapsedS: parseElapsed(elapsed), partition: partition || null });
  }
  return out;
}
