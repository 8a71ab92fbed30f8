/**
 * A job's stdout and stderr (the files Slurm writes in the jobs folder) into its run's log while
 * it runs: each poll reads on from the bytes already copied (the caller keeps that offset on the
 * run, written with the lines, so a dashboard restart neither loses nor doubles a line), whole
 * lines only, bounded per poll and per job, so a chatty job cannot flood the log table. When the
 * job ends the rest is read, at most its last FINAL_BYTES: a job that died before its worker said
 * anything (a missing node binary, Slurm's "CANCELLED AT … DUE TO TIME LIMIT") still explains itself.
 */
import fs from "node:fs";
import path from "node:path";
import { shortText } from "../../../lib/contracts/short-text.ts";
import { openedPath } from "../../qrag/index.ts";

export const OUTPUT_LIMITS = {
  /** Bytes read from one file in one poll. */
  pollBytes: 64 << 10,
  /** Bytes of one file copied while the job runs; past it, only its end is read when it ends. */
  jobBytes: 1 << 20,
  /** The most read of what is left when the job ends. */
  finalBytes: 8 << 10,
  /** Characters kept of one line. */
  lineChars: 500,
};

export interface OutputRead {
  lines: string[];
  /** The offset to read on from next time (unchanged: nothing new). */
  offset: number;
}

type Opened = { fd: number } | { refused: string } | null;

/**
 * Opens `file` only if it is a regular file directly in `dir`, as resolved at open time: the last
 * component is never followed (O_NOFOLLOW), the descriptor's real path must sit in dir's real path,
 * and a FIFO cannot block the dashboard (O_NONBLOCK). null: it does not exist (yet).
 */
function openJobFile(dir: string, file: string): Opened {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return null;
    return { refused: code === "ELOOP" ? "a link" : `not readable (${code ?? "error"})` };
  }
  try {
    if (path.dirname(openedPath(fd, file)) !== fs.realpathSync(dir)) throw new Error("outside the jobs folder");
    if (!fs.fstatSync(fd).isFile()) throw new Error("not a regular file");
    return { fd };
  } catch (e) {
    fs.closeSync(fd);
    return { refused: (e as Error).message };
  }
}

const cleanLines = (text: string, lineChars: number) =>
  text
    .split("\n")
    .map((l) => l.replace(/\r$/, "").replace(/\t/g, "  "))
    .filter((l) => l.trim() !== "")
    .map((l) => shortText(l, lineChars));

function readAt(fd: number, from: number, len: number): Buffer {
  const buf = Buffer.alloc(len);
  const n = fs.readSync(fd, buf, 0, len, from);
  return buf.subarray(0, n);
}

/**
 * The lines `file` gained after `offset`. While the job runs (`final` false): whole lines only (a
 * line longer than a poll's bytes is cut), at most `pollBytes`, nothing past `jobBytes` (one line
 * says so). When it ended: all that is left, or a note and its last `finalBytes`. A file that is a
 * link, outside `dir` or not a regular file is not read: one line says so and it is never read again.
 */
export function readJobOutput(dir: string, file: string, offset: number, final: boolean, limits = OUTPUT_LIMITS): OutputRead {
  const name = path.basename(file);
  const opened = openJobFile(dir, file);
  if (!opened) return { lines: [], offset };
  if ("refused" in opened) {
    if (offset > limits.jobBytes) return { lines: [], offset };
    return { lines: [`${name} not read: ${opened.refused}`], offset: limits.jobBytes + 1 };
  }
  const { fd } = opened;
  try {
    const size = fs.fstatSync(fd).size;
    if (final) {
      if (size <= offset) return { lines: [], offset };
      const skipped = size - offset > limits.finalBytes;
      const from = skipped ? size - limits.finalBytes : offset;
      const lines = cleanLines(readAt(fd, from, size - from).toString("utf8"), limits.lineChars);
      if (skipped) lines.splice(0, 1, `… ${size - offset - limits.finalBytes} bytes of ${name} not copied; its last lines:`); // the first is cut
      return { lines, offset: size };
    }
    if (offset >= limits.jobBytes || size <= offset) return { lines: [], offset };
    const to = Math.min(size, offset + limits.pollBytes, limits.jobBytes);
    const buf = readAt(fd, offset, to - offset);
    const atCap = offset + buf.length >= limits.jobBytes;
    const nl = buf.lastIndexOf(0x0a);
    // a part line waits for its end, unless it already fills a whole poll (cut) or the cap is reached
    const take = atCap || (nl < 0 && buf.length === limits.pollBytes) ? buf.length : nl + 1;
    const lines = cleanLines(buf.subarray(0, take).toString("utf8"), limits.lineChars);
    if (atCap) lines.push(`${name} is over ${limits.jobBytes} bytes: the rest is not copied while the job runs`);
    return { lines, offset: offset + take };
  } finally {
    fs.closeSync(fd);
  }
}

/** A job's two files as "[job 12 stdout] …" lines, with their new offsets. */
export function jobOutput(
  dir: string,
  jobId: string,
  files: { stdout: string; stderr: string },
  at: { stdout: number; stderr: number },
  final: boolean,
): { lines: string[]; stdout: number; stderr: number } {
  const out = readJobOutput(dir, files.stdout, at.stdout, final);
  const err = readJobOutput(dir, files.stderr, at.stderr, final);
  return {
    lines: [...out.lines.map((l) => `[job ${jobId} stdout] ${l}`), ...err.lines.map((l) => `[job ${jobId} stderr] ${l}`)],
    stdout: out.offset,
    stderr: err.offset,
  };
}
