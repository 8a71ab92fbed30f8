/**
 * A job's stdout and stderr into its run's log when the job ends: the last lines of each (bounded:
 * a chatty job cannot flood the log table), so a job that died before its worker said anything
 * (a missing node binary, a module not found, Slurm's own "CANCELLED AT … DUE TO TIME LIMIT")
 * still explains itself on the run page.
 */
import fs from "node:fs";
import { shortText } from "../../../lib/contracts/short-text.ts";

const TAIL_BYTES = 8 << 10;
const TAIL_LINES = 30;

/** The last lines of a file (at most TAIL_LINES of the last TAIL_BYTES); none when it is missing. */
export function tailLines(file: string): string[] {
  let fd: number;
  try {
    fd = fs.openSync(file, "r");
  } catch {
    return [];
  }
  try {
    const size = fs.fstatSync(fd).size;
    const len = Math.min(size, TAIL_BYTES);
    const buf = Buffer.alloc(len);
    fs.readSync(fd, buf, 0, len, size - len);
    const lines = buf.toString("utf8").split(/\r?\n/);
    if (size > len) lines.shift(); // a cut first line
    return lines.filter((l) => l.trim() !== "").slice(-TAIL_LINES).map((l) => shortText(l, 500));
  } finally {
    fs.closeSync(fd);
  }
}

/** Log lines "[job 12 stderr] …" for the job's two files. */
export function jobOutputLines(jobId: string, files: { stdout: string; stderr: string }): string[] {
  return [...tailLines(files.stdout).map((l) => `[job ${jobId} stdout] ${l}`), ...tailLines(files.stderr).map((l) => `[job ${jobId} stderr] ${l}`)];
}
