/**
 * The one trainer worker the dashboard starts on its own machine, kept alive (restarted with
 * back-off when it exits) and ended when the dashboard closes.
 *
 * Its pid and the dashboard URL it serves are recorded in <dataDir>/local-worker.json. A
 * dashboard killed with -9 cannot end its worker; the next start finds it there: still alive and
 * pointed at the same URL, it is adopted (it reconnects by itself, and its run continues);
 * otherwise it is ended first. Without this, the old worker and a new one with the same id would
 * both run and fight over one connection.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export interface LocalWorkerOptions {
  url: string;
  dataDir: string;
  /** The worker entry (server/worker-entry.ts), node's flags before it (tsx's loader for the sources) and the folder to run it in. */
  entry: string;
  nodeFlags: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  log: (msg: string) => void;
}

export interface LocalWorker {
  /** The worker's pid (spawned or adopted), when one runs. */
  pid(): number | null;
  stop(): Promise<void>;
}

interface Recorded {
  pid: number;
  url: string;
}

const STOP_WAIT_MS = 6_000;

/** Whether process `pid` runs (exists and is not a zombie); test/process-lock.ts uses it too. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // a zombie (exited, not yet reaped) is gone for our purposes
  try {
    return !/^\d+ \(.*\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true; // no /proc: trust kill(0)
  }
}

/** True when `pid` runs our worker entry (pids are reused: never signal a stranger). */
function isWorker(pid: number, entry: string): boolean {
  if (!alive(pid)) return false;
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(path.basename(path.dirname(entry)) + path.sep + path.basename(entry));
  } catch {
    return process.platform !== "linux";
  }
}

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

async function terminate(pid: number): Promise<void> {
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  if (!(await until(() => !alive(pid), STOP_WAIT_MS))) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone */
    }
    await until(() => !alive(pid), 2_000);
  }
}

export async function startLocalWorker(o: LocalWorkerOptions): Promise<LocalWorker> {
  const file = path.join(o.dataDir, "local-worker.json");
  const write = (r: Recorded | null) => {
    try {
      if (r) fs.writeFileSync(file, JSON.stringify(r) + "\n");
      else fs.rmSync(file, { force: true });
    } catch (e) {
      o.log(`local worker: cannot record its pid in ${file}: ${(e as Error).message}`);
    }
  };
  let child: ChildProcess | null = null;
  let adopted: number | null = null;
  let stopping = false;
  let restartDelay = 1000;
  let timer: NodeJS.Timeout | null = null;

  const spawnNew = () => {
    const started = Date.now();
    // the token travels in the environment, not on a command line other users can read
    const me = spawn(process.execPath, [...o.nodeFlags, o.entry, "--url", o.url, "--name", "local", "--data-dir", o.dataDir], {
      cwd: o.cwd,
      env: o.env,
      stdio: ["ignore", "inherit", "inherit"],
    });
    child = me;
    if (me.pid) write({ pid: me.pid, url: o.url });
    o.log(`local worker started (pid ${me.pid})`);
    me.on("exit", (code, signal) => {
      if (child === me) child = null;
      if (stopping) return;
      if (Date.now() - started > 60_000) restartDelay = 1000;
      o.log(`local worker exited (${signal ?? `code ${code}`}); restarting in ${restartDelay / 1000}s`);
      timer = setTimeout(() => {
        timer = null;
        if (!stopping) spawnNew();
      }, restartDelay);
      restartDelay = Math.min(30_000, restartDelay * 2);
    });
  };

  /** Polls an adopted worker (not our child: no exit event) and starts a new one when it is gone. */
  const watchAdopted = (pid: number) => {
    timer = setTimeout(() => {
      timer = null;
      if (stopping) return;
      if (alive(pid)) return watchAdopted(pid);
      adopted = null;
      o.log(`adopted local worker (pid ${pid}) exited; starting a new one`);
      spawnNew();
    }, 1_000);
  };

  let stale: Recorded | null = null;
  try {
    stale = JSON.parse(fs.readFileSync(file, "utf8")) as Recorded;
  } catch {
    /* none recorded */
  }
  if (stale && Number.isInteger(stale.pid) && stale.pid > 0 && isWorker(stale.pid, o.entry)) {
    if (stale.url === o.url) {
      adopted = stale.pid;
      o.log(`local worker (pid ${stale.pid}) left running by a previous dashboard on ${o.url}: adopted`);
      watchAdopted(stale.pid);
    } else {
      o.log(`ending the local worker (pid ${stale.pid}) a previous dashboard on ${stale.url} left running`);
      await terminate(stale.pid);
    }
  }
  if (adopted === null) spawnNew();

  return {
    pid: () => child?.pid ?? adopted,
    async stop() {
      stopping = true;
      if (timer) clearTimeout(timer);
      const c = child;
      if (c && c.exitCode === null && c.signalCode === null) {
        const gone = new Promise<void>((r) => c.once("exit", () => r()));
        c.kill("SIGTERM");
        const t = setTimeout(() => c.kill("SIGKILL"), STOP_WAIT_MS);
        await gone;
        clearTimeout(t);
      }
      if (adopted !== null) await terminate(adopted);
      write(null);
    },
  };
}
