/**
 * An executor job's state in words, as a research group reads `squeue`: Slurm's own state name,
 * with where it runs or why it waits ("PENDING (Resources)", "RUNNING on node7", "TIMEOUT on
 * node7"), and the badge class its status colour comes from.
 */

const HOLDS_NODE = ["RUNNING", "COMPLETING", "SUSPENDED"];
const WAITING = ["SUBMITTING", "PENDING"];

export function jobStateText(j: { state: string | null; node: string | null; reason: string | null }): string {
  if (!j.state) return "not submitted yet";
  if (j.state === "SUBMITTING") return `SUBMITTING (${j.reason ?? "sbatch"})`;
  if (j.state === "PENDING") return `PENDING${j.reason ? ` (${j.reason})` : ""}`;
  const on = j.node ? ` on ${j.node}` : "";
  if (HOLDS_NODE.includes(j.state)) return `${j.state}${on}`;
  // an ended job: where it ran, and Slurm's reason when it ended early with one
  return `${j.state}${on}${j.reason && j.state !== "COMPLETED" ? ` (${j.reason})` : ""}`;
}

/** The run status whose badge colours this job state (StatusBadge's classes). */
export function jobStateTone(state: string | null): "queued" | "running" | "completed" | "failed" | "cancelled" {
  if (!state || WAITING.includes(state)) return "queued";
  if (HOLDS_NODE.includes(state)) return "running";
  if (state === "COMPLETED") return "completed";
  if (state === "CANCELLED" || state === "PREEMPTED") return "cancelled";
  return "failed";
}

/** Seconds a job has run: start to end, or to `now` while it holds its node; null before it started. */
export function jobSeconds(j: { startedAt: string | null; endedAt: string | null }, now: number): number | null {
  if (!j.startedAt) return null;
  return Math.max(0, ((j.endedAt ? Date.parse(j.endedAt) : now) - Date.parse(j.startedAt)) / 1000);
}
