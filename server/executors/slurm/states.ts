/**
 * A Slurm job's state as the dashboard shows and acts on it: Slurm's own state names (the ones a
 * research group already reads in `squeue`), folded into a typed union. Waiting carries Slurm's
 * reason, running carries the node, an ended job says how it ended; what Slurm no longer knows
 * (the controller forgot it and there is no accounting) is "UNKNOWN", never a guess.
 */

/** The job waits: `reason` is Slurm's (Resources, Priority, QOSMaxGRESPerUser, BeginTime, …). */
export interface PendingJob {
  state: "PENDING";
  reason: string;
}

/** The job holds its node(s): starting (CONFIGURING), running, ending (COMPLETING), or suspended. */
export interface ActiveJob {
  state: "RUNNING" | "COMPLETING" | "SUSPENDED";
  node: string;
}

/** How a job ended. Every one but COMPLETED ended the job's work early. */
export const ENDED_STATES = ["COMPLETED", "FAILED", "TIMEOUT", "PREEMPTED", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"] as const;
export type EndedState = (typeof ENDED_STATES)[number];

export interface EndedJob {
  state: EndedState;
  /** The node it ran on; null when it never started (cancelled while pending). */
  node: string | null;
  /** Slurm's reason where it gave one (a pending job's, kept at cancel), else null. */
  reason: string | null;
  /** "exit:signal" as Slurm prints it (sacct only), else null. */
  exitCode: string | null;
}

/** Slurm no longer knows the job, or printed a state this code does not know (`raw`). */
export interface UnknownJob {
  state: "UNKNOWN";
  raw: string;
}

export type SlurmJobState = PendingJob | ActiveJob | EndedJob | UnknownJob;

/** One job's answer: its state plus what every state has. */
export type SlurmJob = SlurmJobState & {
  jobId: string;
  /** Seconds it has run (0 while pending); null when Slurm did not say. */
  elapsedS: number | null;
  partition: string | null;
};

export const isEnded = (s: SlurmJobState): s is EndedJob => (ENDED_STATES as readonly string[]).includes(s.state);

/** Slurm's "none" spellings for a reason or a node list. */
const nothing = (s: string | undefined): string | null => {
  const t = (s ?? "").trim();
  return t === "" || t === "None" || t === "(null)" || t === "n/a" || t === "None assigned" ? null : t;
};

/**
 * Folds Slurm's state name (squeue %T, sacct State: "CANCELLED by 0", "REQUEUED", …) with its
 * reason and node list into the union. REQUEUED/REQUEUE_HOLD and held jobs wait again, so they are
 * PENDING with that reason; CONFIGURING already holds its node, so it is RUNNING there.
 */
export function jobStateFrom(raw: string, reason?: string, nodes?: string, exitCode?: string): SlurmJobState {
  const name = raw.trim().split(/\s+/)[0]?.toUpperCase() ?? "";
  const why = nothing(reason);
  const node = nothing(nodes);
  switch (name) {
    case "PENDING":
      return { state: "PENDING", reason: why ?? "None" };
    case "REQUEUED":
    case "REQUEUE_HOLD":
    case "REQUEUE_FED":
    case "RESV_DEL_HOLD":
    case "SPECIAL_EXIT":
      return { state: "PENDING", reason: why ?? name };
    case "CONFIGURING":
    case "RUNNING":
    case "RESIZING":
    case "SIGNALING":
    case "STAGE_OUT":
      return { state: "RUNNING", node: node ?? "" };
    case "COMPLETING":
      return { state: "COMPLETING", node: node ?? "" };
    case "SUSPENDED":
    case "STOPPED":
      return { state: "SUSPENDED", node: node ?? "" };
    default:
      if ((ENDED_STATES as readonly string[]).includes(name)) return { state: name as EndedState, node, reason: why, exitCode: nothing(exitCode) };
      return { state: "UNKNOWN", raw: raw.trim() || "(empty)" };
  }
}
