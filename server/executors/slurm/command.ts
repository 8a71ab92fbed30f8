/**
 * Runs one Slurm command (sbatch, squeue, sacct, scancel) as an argv array — never through a
 * shell, so no request field is ever parsed as shell text — with a wall-clock timeout and a bound
 * on its output: a hung controller or a flood of jobs cannot stall or swell the dashboard.
 */
import { execFile } from "node:child_process";
import { shortText } from "../../../lib/contracts/short-text.ts";

export interface CommandOptions {
  /** The commands' environment (SLURM_CONF, PATH); the process's own when left out. */
  env?: NodeJS.ProcessEnv;
  /** Kill the command after this long (default 20 s: slurmctld answers in well under a second). */
  timeoutMs?: number;
  /** The most bytes of stdout (and of stderr) kept; more is an error (default 4 MiB). */
  maxBytes?: number;
}

export interface CommandResult {
  stdout: string;
  stderr: string;
}

/** A Slurm command that failed: exit status, timeout or overflow, with its one-line reason. */
export class SlurmCommandError extends Error {
  constructor(
    readonly command: string,
    /** Printable, at most one line: what the command said on stderr (or why it did not finish). */
    readonly reason: string,
    readonly exitCode: number | null,
    /**
     * It may work if asked again: no answer in time, or Slurm said its controller is unreachable.
     * Such a call may still have done its work (an sbatch whose answer was lost made its job).
     */
    readonly transient = false,
  ) {
    super(`${command} failed: ${reason}`);
    this.name = "SlurmCommandError";
  }
}

/** What Slurm's commands say when the controller is busy, restarting or out of reach (not about the request). */
const TRANSIENT =
  /socket timed out|unable to contact slurm controller|slurm temporarily unable|temporarily unavailable|connection refused|connection timed out|zero bytes were transmitted|communication connection failure|slurmctld.*not responding|try again later/i;

export const isTransientReason = (reason: string) => TRANSIENT.test(reason);

const REASON_MAX = 300;

/**
 * Slurm's error text as one printable line: each stderr line without its "sbatch: error: " prefix,
 * repeats dropped, joined by "; ", clipped. sbatch says what is wrong in one line and that the
 * submission failed in another ("invalid partition specified: gpu2" / "Batch job submission
 * failed: Invalid partition name specified"); both together name the field and the verdict.
 */
export function oneLineReason(stderr: string, max = REASON_MAX): string {
  const lines = stderr
    .split(/\r?\n/)
    .map((l) => l.replace(/^\s*[a-z]+:\s*(error|fatal):\s*/i, "").trim())
    .filter((l) => l !== "");
  return shortText([...new Set(lines)].join("; "), max);
}

export function runSlurm(command: string, args: readonly string[], o: CommandOptions = {}): Promise<CommandResult> {
  const timeoutMs = o.timeoutMs ?? 20_000;
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { env: o.env, timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: o.maxBytes ?? 4 << 20, encoding: "utf8", windowsHide: true },
      (err, stdout, stderr) => {
        if (!err) return resolve({ stdout, stderr });
        const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: unknown };
        let reason: string;
        let transient = false;
        if (e.code === "ENOENT") reason = `${command} not found (are Slurm's client commands installed and on PATH?)`;
        else if (e.code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER") reason = `output over ${o.maxBytes ?? 4 << 20} bytes`;
        else if (e.killed) [reason, transient] = [`no answer within ${timeoutMs} ms`, true];
        else {
          reason = oneLineReason(stderr) || `exit status ${String(e.code)}`;
          transient = isTransientReason(stderr);
        }
        reject(new SlurmCommandError(command, reason, typeof e.code === "number" ? e.code : null, transient));
      },
    );
  });
}
