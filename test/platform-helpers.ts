/**
 * Helpers for the platform tests: temporary SQLite files, a throwaway PostgreSQL (Debian's
 * server binaries, initdb into a temp folder, on 127.0.0.1 and a free port), free ports, and
 * condition polling (waitFor: the one polling helper of the tests; no blind sleeps).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

export const ROOT = path.resolve(import.meta.dirname, "..");

export function tmpDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function sqliteUrl(dir = tmpDir("qrag-db-")): string {
  return `file:${path.join(dir, "test.db")}`;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Thrown from a waitFor condition to give up at once (e.g. the process under test exited). */
export class GiveUp extends Error {}

/**
 * The tests' one polling helper: calls `fn` every `everyMs` until it returns a truthy value, which
 * it resolves to. Other errors thrown by `fn` count as "not yet" (a server still starting) and the
 * last one is named on timeout; a GiveUp or a failed assertion inside `fn` ends the wait at once.
 * On timeout the error reads "timed out after N ms waiting for WHAT", plus `detail()` when given
 * (a child process's output, say).
 */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 30_000,
  everyMs = 100,
  detail?: () => string,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (e) {
      if (e instanceof GiveUp || e instanceof assert.AssertionError) throw e;
      lastErr = e;
    }
    if (Date.now() > end) {
      const more = detail?.();
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? ` (last error: ${(lastErr as Error).message})` : ""}${more ? `\n${more}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

// ---- PostgreSQL ---------------------------------------------------------------------------------

export interface Pg {
  url: string;
  /** A fresh database on the same server. */
  createDatabase(name: string): Promise<string>;
  stop(): void;
}

function pgBinDir(): string | null {
  const base = "/usr/lib/postgresql";
  if (!fs.existsSync(base)) return null;
  const versions = fs.readdirSync(base).filter((v) => fs.existsSync(path.join(base, v, "bin", "initdb"))).sort((a, b) => Number(b) - Number(a));
  return versions.length ? path.join(base, versions[0], "bin") : null;
}

/**
 * Starts a throwaway PostgreSQL, or returns a reason it cannot. With CI=true a missing server
 * is an error (the caller fails the test); otherwise the PostgreSQL tests are skipped.
 * TEST_DATABASE_URL (a postgres:// URL to an existing server) is used instead when set.
 */
export async function startPostgres(): Promise<Pg | { skip: string }> {
  const external = process.env.TEST_DATABASE_URL;
  if (external && /^postgres(ql)?:\/\//.test(external)) return externalPg(external);
  const bin = pgBinDir();
  if (!bin) {
    const why = "PostgreSQL server binaries not found (apt-get install postgresql); PostgreSQL tests skipped";
    if (process.env.CI === "true") throw new Error(why.replace("; PostgreSQL tests skipped", " and CI=true"));
    return { skip: why };
  }
  const root = process.getuid?.() === 0;
  const dir = tmpDir("qrag-pg-");
  const data = path.join(dir, "data");
  const port = await freePort();
  const asPg = (cmd: string, args: string[]) =>
    root ? execFileSync("runuser", ["-u", "postgres", "--", path.join(bin!, cmd), ...args], { stdio: "pipe" }) : execFileSync(path.join(bin!, cmd), args, { stdio: "pipe" });
  if (root) execFileSync("chown", ["postgres", dir]);
  asPg("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"]);
  asPg("pg_ctl", ["-D", data, "-o", `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c full_page_writes=off`, "-l", path.join(dir, "log"), "-w", "-t", "60", "start"]);
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      asPg("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
    } catch {
      // already gone
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", stop);
  return {
    url,
    stop,
    createDatabase: async (name) => {
      const { default: pg } = await import("pg");
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`CREATE DATABASE "${name}"`);
      await c.end();
      return `postgresql://postgres@127.0.0.1:${port}/${name}`;
    },
  };
}

async function externalPg(url: string): Promise<Pg> {
  const u = new URL(url);
  return {
    url,
    stop: () => {},
    createDatabase: async (name) => {
      const { default: pg } = await import("pg");
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`CREATE DATABASE "${name}"`);
      await c.end();
      u.pathname = `/${name}`;
      return u.toString();
    },
  };
}

let dbCounter = 0;
export function uniqueDbName(prefix: string): string {
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${dbCounter++}`;
}

/** Pids of the processes `keep` accepts (Linux /proc); one that ends while it is read is left out. */
export function processes(keep: (pid: number) => boolean): number[] {
  return fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d)).map(Number).filter((pid) => {
    try {
      return keep(pid);
    } catch {
      return false;
    }
  });
}

/** A process's parent pid (its name in /proc/PID/stat may hold spaces and parentheses: read after the last ")"). */
export function parentPid(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

/** Pids of `parent`'s children running the engine process (engine-process.ts, or .mjs in a test bundle). */
export function engineChildren(parent: number): number[] {
  return processes((pid) => parentPid(pid) === parent && /engine-process\.m?[jt]s\b/.test(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8")));
}
