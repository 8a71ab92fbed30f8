import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { withProcessLock } from "./process-lock.ts";

const lockDir = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "qrag-lock-")), "build.lock");
const holdAs = (dir: string, pid: number) => {
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, "pid"), String(pid));
};

test("process lock: held with our pid while fn runs, released after, also when fn throws", () => {
  const dir = lockDir();
  const seen = withProcessLock(dir, () => fs.readFileSync(path.join(dir, "pid"), "utf8"));
  assert.equal(seen, String(process.pid));
  assert.equal(fs.existsSync(dir), false);
  assert.throws(() => withProcessLock(dir, () => { throw new Error("build failed"); }), /build failed/);
  assert.equal(fs.existsSync(dir), false);
});

test("process lock: a live holder is waited for (fn not run, onWait once), up to waitMs", () => {
  const dir = lockDir();
  holdAs(dir, process.ppid); // the test runner: alive
  let ran = false;
  let waits = 0;
  const t0 = Date.now();
  assert.throws(() => withProcessLock(dir, () => (ran = true), { waitMs: 500, onWait: () => waits++ }), new RegExp(`still held by ${process.ppid}`));
  assert.ok(Date.now() - t0 >= 500);
  assert.equal(ran, false);
  assert.equal(waits, 1);
  assert.equal(fs.readFileSync(path.join(dir, "pid"), "utf8"), String(process.ppid), "a live holder's lock is left alone");
});

test("process lock: a holder that is gone (killed mid-build) is taken over", () => {
  const dir = lockDir();
  const pidMax = Number(fs.readFileSync("/proc/sys/kernel/pid_max", "utf8"));
  holdAs(dir, pidMax + 1); // no process can have it
  let waits = 0;
  assert.equal(withProcessLock(dir, () => fs.readFileSync(path.join(dir, "pid"), "utf8"), { waitMs: 500, onWait: () => waits++ }), String(process.pid));
  assert.equal(waits, 0);
  assert.equal(fs.existsSync(dir), false);
});
