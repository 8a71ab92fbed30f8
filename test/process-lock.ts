/**
 * A lock between processes for synchronous test set-up (ensureNextBuild): a directory made
 * atomically, its holder's pid in a file inside. Two e2e files finding the build stale at once
 * would otherwise both start `next build`, and Next refuses the second ("Another next build
 * process is already running"). A lock whose holder is gone (killed mid-build) is taken over.
 * By hand because the set-up blocks in spawnSync: proper-lockfile keeps its lock fresh with a
 * timer, which cannot fire while the holder blocks, so others would take a held lock as stale.
 */
import fs from "node:fs";
import path from "node:path";
import { alive } from "../server/local/local-worker.ts";

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** The pid holding the lock at `dir`, or null (none, or a holder that has not written its pid yet). */
function holder(dir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(dir, "pid"), "utf8"));
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** Runs `fn` holding the lock at `dir`; waits for a live holder (`onWait` once), at most `waitMs`. */
export function withProcessLock<T>(dir: string, fn: () => T, opts: { waitMs?: number; onWait?: () => void } = {}): T {
  const deadline = Date.now() + (opts.waitMs ?? 15 * 60_000);
  let waited = false;
  for (;;) {
    try {
      fs.mkdirSync(dir);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const pid = holder(dir);
    if (pid !== null && !alive(pid)) {
      fs.rmSync(dir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`lock ${dir}: still held by ${pid ?? "a process starting"} after ${opts.waitMs ?? 15 * 60_000} ms`);
    if (!waited) opts.onWait?.();
    waited = true;
    sleep(200);
  }
  try {
    fs.writeFileSync(path.join(dir, "pid"), String(process.pid));
    return fn();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
