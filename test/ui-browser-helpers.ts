/**
 * Shared set-up for the real-browser tests and the UI latency benchmark: find chromium, make sure
 * the production Next build is current, start the real dashboard server (server/main.ts with its
 * local worker) on a free port with a throw-away database, and launch headless chromium.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { withProcessLock } from "./process-lock.ts";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const SCREENSHOTS = path.join(ROOT, "test-results", "screenshots");

/** Flags from docs/offline-stack.md §3 (headless is set by Playwright). */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
];

export const chromiumPath = () => process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Why the browser tests cannot run here, or null. Under CI=true a missing browser is an error. */
export function browserUnavailable(): string | null {
  const p = chromiumPath();
  if (fs.existsSync(p)) return null;
  const msg = `chromium not found at ${p} (install it with \`apt-get install -y chromium\` or set CHROMIUM_PATH)`;
  if (process.env.CI === "true") throw new Error(msg);
  return msg;
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
}

/** A new page of `browser` whose uncaught errors are collected in `errors` (a test ends asserting none). */
export async function watchedPage(browser: Browser, errors: string[], viewport: { width: number; height: number }): Promise<Page> {
  const page = await browser.newPage({ viewport });
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  return page;
}

function newestMtime(dir: string): number {
  let newest = 0;
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.name === "node_modules" || e.name.startsWith(".")) continue;
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else newest = Math.max(newest, fs.statSync(p).mtimeMs);
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return newest;
}

/**
 * Runs `next build` when there is no build or a source file is newer than it. Test files call it
 * at once: one builds, holding a lock, and the others wait and then find the build fresh.
 */
export function ensureNextBuild(log: (m: string) => void = () => {}): void {
  const lock = path.join(os.tmpdir(), `qrag-next-build-${crypto.createHash("sha1").update(fs.realpathSync(ROOT)).digest("hex").slice(0, 12)}.lock`);
  withProcessLock(lock, () => buildIfStale(log), { onWait: () => log("another test file is building Next here: waiting for it") });
}

/** Pids of `next build` processes running in this checkout (`npm start`'s or another session's rewrites .next/). */
function otherNextBuilds(): number[] {
  const out: number[] = [];
  for (const pid of fs.existsSync("/proc") ? fs.readdirSync("/proc") : []) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (!cmd.some((a) => /(^|\/)next(\.js)?$|next\/dist\/bin\/next$/.test(a)) || !cmd.includes("build")) continue;
      if (fs.realpathSync(`/proc/${pid}/cwd`) === fs.realpathSync(ROOT)) out.push(Number(pid));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

function buildIfStale(log: (m: string) => void): void {
  // a build started outside the tests would swap .next/ under us: let it finish first
  for (let waited = 0; otherNextBuilds().length && waited < 600; waited++) {
    if (waited === 0) log("another `next build` is running in this checkout: waiting for it");
    spawnSync("sleep", ["1"]);
  }
  const id = path.join(ROOT, ".next", "BUILD_ID");
  const built = fs.existsSync(id) ? fs.statSync(id).mtimeMs : 0;
  const sources = Math.max(...["app", "components", "lib", "server"].map((d) => newestMtime(path.join(ROOT, d))), fs.statSync(path.join(ROOT, "next.config.ts")).mtimeMs);
  if (built && built >= sources && process.env.QRAG_E2E_REBUILD !== "1") return;
  log(built ? "sources changed since the last next build: rebuilding" : "no next build: building");
  const r = spawnSync("npx", ["next", "build"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" }, encoding: "utf8", timeout: 15 * 60_000 });
  if (r.status !== 0) throw new Error(`next build failed (${r.status ?? r.signal}):\n${(r.stdout ?? "").slice(-3000)}\n${(r.stderr ?? "").slice(-3000)}`);
}

export interface TestServer {
  url: string;
  dataDir: string;
  workerToken: string;
  output: () => string;
  stop(): Promise<void>;
}

/** Starts `node --import tsx server/main.ts` (production, free port, temp SQLite file, local worker). */
export async function startTestServer(opts: { env?: Record<string, string> } = {}): Promise<TestServer> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-e2e-"));
  let out = "";
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "server", "main.ts"), "--port", "0"], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: "production",
      NEXT_TELEMETRY_DISABLED: "1",
      QRAG_DATA_DIR: dataDir,
      DATABASE_URL: `file:${path.join(dataDir, "qrag.db")}`,
      ...opts.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 90 s:\n${out.slice(-3000)}`)), 90_000);
    const onData = (b: Buffer) => {
      out += b.toString();
      const m = /Q-RAG Studio on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before it was ready:\n${out.slice(-3000)}`));
    });
  });
  const workerToken = fs.readFileSync(path.join(dataDir, "worker-token"), "utf8").trim();
  return {
    url,
    dataDir,
    workerToken,
    output: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise<void>((r) => child.once("exit", () => r()));
        child.kill("SIGTERM");
        const t = setTimeout(() => child.kill("SIGKILL"), 15_000);
        await gone;
        clearTimeout(t);
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
