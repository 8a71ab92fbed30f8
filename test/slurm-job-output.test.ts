/**
 * A Slurm job's output into its run's log (server/executors/slurm/job-output.ts), on real files:
 * read on from an offset, whole lines only while the job runs, bounded per poll, per job and per
 * line; the rest (or its end) once the job ended; links, files outside the jobs folder and FIFOs
 * refused once, without blocking.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { jobOutput, OUTPUT_LIMITS, readJobOutput } from "../server/executors/slurm/job-output.ts";
import { tmpDir } from "./platform-helpers.ts";

test("read on from the offset: whole lines while the job runs, a part line once it ended, never a line twice", () => {
  const dir = tmpDir("qrag-job-out-");
  const f = path.join(dir, "r-1.out");
  assert.deepEqual(readJobOutput(dir, f, 0, false), { lines: [], offset: 0 }, "not written yet");
  fs.writeFileSync(f, "one\r\n\ntwo\tcols\nthr");
  const a = readJobOutput(dir, f, 0, false);
  assert.deepEqual(a, { lines: ["one", "two  cols"], offset: 15 });
  assert.deepEqual(readJobOutput(dir, f, a.offset, false), { lines: [], offset: 15 }, "the part line waits for its end");
  fs.appendFileSync(f, "ee\nfour");
  const b = readJobOutput(dir, f, a.offset, false);
  assert.deepEqual(b, { lines: ["three"], offset: 21 });
  assert.deepEqual(readJobOutput(dir, f, b.offset, true), { lines: ["four"], offset: 25 }, "the job ended: its last part line too");
  assert.deepEqual(readJobOutput(dir, f, 25, true), { lines: [], offset: 25 });
  const both = jobOutput(dir, "12", { stdout: f, stderr: path.join(dir, "r-1.err") }, { stdout: 21, stderr: 0 }, true);
  assert.deepEqual(both, { lines: ["[job 12 stdout] four"], stdout: 25, stderr: 0 });
});

test("bounded: bytes per poll, bytes per job (said once), characters per line, and only the end of a long rest", () => {
  const dir = tmpDir("qrag-job-out-");
  const f = path.join(dir, "r-1.err");
  const limits = { pollBytes: 100, jobBytes: 250, finalBytes: 60, lineChars: 20 };
  fs.writeFileSync(f, `${"x".repeat(30)}\n`.repeat(20)); // 620 bytes
  const a = readJobOutput(dir, f, 0, false, limits);
  assert.equal(a.offset, 93, "three whole lines of the first 100 bytes");
  assert.deepEqual(a.lines, Array(3).fill(`${"x".repeat(19)}…`), "lines clipped");
  let at = a.offset;
  const seen: string[] = [...a.lines];
  for (let i = 0; i < 5; i++) {
    const r = readJobOutput(dir, f, at, false, limits);
    seen.push(...r.lines);
    at = r.offset;
  }
  assert.equal(at, 250, "stops at the job's bound");
  assert.equal(seen.filter((l) => l.includes("over 250 bytes")).length, 1, "said once");
  const end = readJobOutput(dir, f, at, true, limits);
  assert.equal(end.offset, 620);
  assert.match(end.lines[0], /^… 310 bytes of r-1\.err not copied; its last lines:$/);
  assert.ok(end.lines.length <= 3, JSON.stringify(end.lines));
  // one line longer than a poll: cut rather than waiting forever
  const g = path.join(dir, "r-2.out");
  fs.writeFileSync(g, "y".repeat(150));
  assert.deepEqual(readJobOutput(dir, g, 0, false, limits).offset, 100);
  assert.equal(OUTPUT_LIMITS.jobBytes, 1 << 20);
});

test("a link, a file outside the jobs folder or a FIFO is refused once (never followed, never blocking)", () => {
  const dir = tmpDir("qrag-job-out-");
  const outside = tmpDir("qrag-job-out-secret-");
  const secret = path.join(outside, "secret");
  fs.writeFileSync(secret, "password\n");
  fs.symlinkSync(secret, path.join(dir, "r-1.out"));
  const a = readJobOutput(dir, path.join(dir, "r-1.out"), 0, false);
  assert.deepEqual(a.lines, ["r-1.out not read: a link"]);
  assert.ok(a.offset > OUTPUT_LIMITS.jobBytes);
  assert.deepEqual(readJobOutput(dir, path.join(dir, "r-1.out"), a.offset, true).lines, [], "said once");
  // a folder that links out: the file's real path is not in the jobs folder
  fs.symlinkSync(outside, path.join(dir, "sub"));
  assert.deepEqual(readJobOutput(dir, path.join(dir, "sub", "secret"), 0, true).lines, ["secret not read: outside the jobs folder"]);
  execFileSync("mkfifo", [path.join(dir, "r-2.err")]);
  assert.deepEqual(readJobOutput(dir, path.join(dir, "r-2.err"), 0, false).lines, ["r-2.err not read: not a regular file"]);
});
