/**
 * The trainer worker process: connects out to the dashboard's /workers namespace, is handed runs
 * one at a time, executes them with the engine and streams their events back.
 *
 *   npm run worker -- --url http://dashboard:3000 --token <token> [--name gpu-box] [--data-dir data]
 *
 * Environment equivalents (server/settings.ts): QRAG_DASHBOARD_URL, QRAG_WORKER_TOKEN, QRAG_WORKER_NAME,
 * QRAG_WORKER_DATA_DIR; QRAG_BACKEND (or --backend) forces a tfjs backend. The worker id is kept
 * in <data-dir>/worker-<name>.id so a restarted worker keeps its identity. SIGINT/SIGTERM cancel
 * the active run (the engine saves a checkpoint), wait for its events to be acknowledged (at most
 * QRAG_WORKER_SHUTDOWN_MS, default 4 s, at most 4.5 s: SIGTERM ends a worker within 5 s) and exit.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { io } from "socket.io-client";
import type { AssignAck, HeartbeatMsg, WorkerHello } from "../../lib/contracts/index.ts";
import { HEARTBEAT_MS, WORKER_NAMESPACE, issuesText, runAssignmentSchema, runCancelSchema } from "../../lib/contracts/index.ts";
import { settings } from "../settings.ts";
import { BACKEND_PREFS, configureEngine } from "../qrag/index.ts";
import { errorMessage, stderrLogger, type Logger } from "./log.ts";
import { probeBackend, startRun, type EngineProcess, type RunExecution } from "./runner.ts";
import type { WorkerSocket } from "./socket.ts";

const USAGE = `usage: npm run worker -- --url <dashboard url> --token <token> [--name <name>] [--data-dir <dir>] [--data-root <dir>] [--backend ${BACKEND_PREFS.join("|")}] [--one-run]
  env: QRAG_DASHBOARD_URL, QRAG_WORKER_TOKEN, QRAG_WORKER_NAME, QRAG_WORKER_DATA_DIR, QRAG_DATA_ROOT (config paths resolve inside it; default the data dir), QRAG_BACKEND`;

class UsageError extends Error {}

interface Cli {
  url: string;
  token: string;
  name: string;
  dataDir: string;
  /** The only folder run configs may read files from (data-root.ts). */
  dataRoot: string;
  backend?: string;
  /** Exit after the first run ends (a Slurm job's worker: the job ends with its run). */
  oneRun: boolean;
}

function parseCli(argv: string[]): Cli {
  const { values } = parseArgs({
    args: argv,
    options: {
      url: { type: "string" },
      token: { type: "string" },
      name: { type: "string" },
      "data-dir": { type: "string" },
      "data-root": { type: "string" },
      backend: { type: "string" },
      "one-run": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(USAGE + "\n");
    process.exit(0);
  }
  const e = settings();
  const url = values.url ?? e.worker.dashboardUrl;
  const token = values.token ?? e.workerToken;
  if (!url || !token) throw new UsageError(`missing ${!url ? "--url (or QRAG_DASHBOARD_URL)" : "--token (or QRAG_WORKER_TOKEN)"}`);
  try {
    const u = new URL(url);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("not http(s)");
  } catch {
    throw new UsageError(`--url must be an http(s) URL, got "${url}"`);
  }
  const dataDir = values["data-dir"] ? path.resolve(values["data-dir"]) : e.worker.dataDir;
  return {
    url: url.replace(/\/+$/, ""),
    token,
    name: values.name ?? e.worker.name,
    dataDir,
    dataRoot: values["data-root"] ? path.resolve(values["data-root"]) : e.dataRootFor(dataDir),
    backend: values.backend,
    oneRun: values["one-run"] ?? e.worker.oneRun,
  };
}

/** Reads (or creates) the worker's persistent id in `<dataDir>/worker-<name>.id`. */
export function workerIdFor(dataDir: string, name: string): string {
  const safe = name.replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 80) || "worker";
  const file = path.join(dataDir, `worker-${safe}.id`);
  try {
    const id = fs.readFileSync(file, "utf8").trim();
    if (/^[A-Za-z0-9._-]{8,128}$/.test(id)) return id;
  } catch {
    /* first start */
  }
  const id = crypto.randomUUID();
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(file, id + "\n");
  return id;
}

/** What this worker tells the dashboard about itself (besides its token and runs). */
interface Identity {
  workerId: string;
  host: string;
  backend: string;
  device: string;
}

/**
 * The engine's settings for this process (run configs are checked here, runner.ts), the worker's
 * id, and the backend runs will get, probed in a forked engine process. That process is kept for
 * the first run (`engine`), which then skips a second load of tfjs and its backend: a one-run
 * worker (a Slurm job's) is assigned its run right after connecting, and a worker (re)started while
 * runs are queued gets one at once. One that waits longer than QRAG_WORKER_SPARE_ENGINE_MS lets it
 * go (WorkerSession), since an idle engine holds memory and, on webgpu, the GPU.
 */
async function startUp(cli: Cli, log: Logger): Promise<{ me: Identity; engine?: EngineProcess }> {
  // this process checks run configs with the engine (runner.ts): its settings, with this worker's data root
  configureEngine({ ...settings().engine, dataRoot: cli.dataRoot, ...(cli.backend ? { backend: cli.backend } : {}) });
  const workerId = workerIdFor(cli.dataDir, cli.name);
  // the engine (and tfjs) runs in a forked process per run; probe there which backend runs get
  // (the forked processes read QRAG_BACKEND from the environment they inherit)
  if (cli.backend) process.env.QRAG_BACKEND = cli.backend;
  const { backend, device, skipped, engine } = await probeBackend(log, { keep: cli.oneRun || settings().worker.spareEngineMs > 0 });
  // the GPU route is worth one line when it was not taken (no adapter, no Vulkan loader, …)
  const webgpuWhy = skipped.find((s) => s.startsWith("webgpu:"));
  if (webgpuWhy) log("info", `webgpu not used: ${webgpuWhy.slice("webgpu:".length).trim()}`);
  // runs get the probed backend, so their engines do not search again (Dawn's adapter search included)
  if (!process.env.QRAG_BACKEND || process.env.QRAG_BACKEND === "auto") process.env.QRAG_BACKEND = backend;
  const host = os.hostname();
  log("info", `id ${workerId} on ${host}; backend ${backend}, device ${device}; dashboard ${cli.url}`);
  return { me: { workerId, host, backend, device }, engine };
}

/**
 * One worker process's connection to the dashboard and its runs: the socket (reconnecting), the
 * heartbeat, run assignments and cancels, and the shutdown sequence.
 */
class WorkerSession {
  /**
   * Runs not yet finished: at most one training (no run_end yet), plus runs whose run_end was
   * emitted but whose last batches still wait for the dashboard's ack. A new run is accepted as
   * soon as the previous one stopped training; all of them are listed in heartbeats and the hello.
   */
  private readonly runs = new Map<string, RunExecution>();
  private shuttingDown = false;
  private readonly instance = crypto.randomUUID();
  private readonly socket: WorkerSocket;
  private readonly hbTimer: NodeJS.Timeout;
  private lastConnectError = "";
  private rejoinTimer: NodeJS.Timeout | null = null;
  private exitCode = 0;

  /** `engine`: the probe's engine process, kept for the first run (startUp); a long-lived worker lets it go after QRAG_WORKER_SPARE_ENGINE_MS. */
  constructor(
    private readonly cli: Cli,
    private readonly me: Identity,
    private readonly log: Logger,
    private engine?: EngineProcess,
  ) {
    const spare = engine;
    if (spare && !cli.oneRun) {
      // disconnected, the idle engine exits at once (engine-process.ts); a run that took it keeps it
      setTimeout(() => {
        if (this.engine === spare) {
          this.engine = undefined;
          if (spare.child.connected) spare.child.disconnect();
        }
      }, settings().worker.spareEngineMs).unref();
    }
    this.socket = io(`${cli.url}${WORKER_NAMESPACE}`, {
      auth: (cb) => cb(this.hello() as unknown as Record<string, unknown>),
      transports: ["websocket"],
      reconnection: true,
      reconnectionAttempts: Infinity,
      reconnectionDelay: 500,
      reconnectionDelayMax: 5_000,
    });
    this.hbTimer = setInterval(() => this.heartbeat(), HEARTBEAT_MS);
    this.watchConnection();
    this.socket.on("run:assign", (msg, ack) => this.assign(msg, ack));
    this.socket.on("run:cancel", (msg) => {
      const p = runCancelSchema.safeParse(msg);
      const run = p.success ? this.runs.get(p.data.runId) : undefined;
      if (run && !run.ended) run.cancel("cancelled from the dashboard");
    });
  }

  private training(): RunExecution | undefined {
    return [...this.runs.values()].find((r) => !r.ended);
  }

  private activeRuns(): string[] {
    return [...this.runs.keys()];
  }

  private hello(): WorkerHello {
    const { workerId, host, backend, device } = this.me;
    return { token: this.cli.token, workerId, name: this.cli.name, host, backend, device, activeRuns: this.activeRuns(), instance: this.instance };
  }

  private heartbeat(): void {
    if (!this.socket.connected) return;
    const msg: HeartbeatMsg = { workerId: this.me.workerId, runs: this.activeRuns() };
    this.socket.emit("heartbeat", msg);
  }

  private rejoinLater(ms: number): void {
    if (this.rejoinTimer || this.shuttingDown) return;
    this.rejoinTimer = setTimeout(() => {
      this.rejoinTimer = null;
      if (!this.socket.connected && !this.shuttingDown) this.socket.connect();
    }, ms);
  }

  /** Connects, disconnects and refusals: logged once each, rejoined when socket.io gives up, a rejected token ends the worker. */
  private watchConnection(): void {
    const { socket, log, cli } = this;
    socket.on("connect", () => {
      this.lastConnectError = "";
      log("info", `connected to ${cli.url}${this.runs.size ? ` (active: ${this.activeRuns().join(", ")})` : ""}`);
      this.heartbeat();
    });
    socket.on("disconnect", (reason) => {
      if (this.shuttingDown) return;
      log("warn", `disconnected (${reason}); reconnecting`);
      // a server-side disconnect turns automatic reconnection off
      if (reason === "io server disconnect") this.rejoinLater(2_000);
    });
    socket.on("connect_error", (err) => {
      const msg = errorMessage(err);
      if (msg !== this.lastConnectError) log("warn", `cannot connect to ${cli.url}: ${msg}`);
      this.lastConnectError = msg;
      if (!socket.active) {
        // the dashboard's middleware refused us: a wrong token never heals, unless a run is active
        if (/token|auth|unauthori[sz]ed|forbidden/i.test(msg) && this.runs.size === 0) {
          log("error", `the dashboard rejected this worker (${msg}); check --token`);
          void this.shutdown("auth", 3);
          return;
        }
        this.rejoinLater(5_000);
      }
    });
  }

  /** "run:assign": take the run when idle (the same attempt again is fine; a newer one supersedes ours). */
  private assign(msg: unknown, ack: unknown): void {
    const { runs, log } = this;
    const reply = (r: AssignAck) => {
      if (typeof ack === "function") ack(r);
    };
    const p = runAssignmentSchema.safeParse(msg);
    if (!p.success) {
      log("warn", `ignored a malformed run assignment: ${issuesText(p.error)}`);
      return reply({ ok: false, error: `malformed RunAssignment: ${issuesText(p.error)}` });
    }
    const raw = p.data;
    const same = runs.get(raw.runId);
    if (same) {
      // the same assignment resent (e.g. after a reconnect) is fine. A newer attempt means the
      // dashboard gave ours up: drop it (runner.ts) and take the new one when offered again.
      if (same.attempt === raw.attempt) return reply({ ok: true });
      const was = same.state;
      if (raw.attempt > same.attempt) same.supersede(raw.attempt);
      return reply({ ok: false, error: `still finishing attempt ${same.attempt} of run ${raw.runId} (${was})${raw.attempt > same.attempt ? "; stopping it, offer again" : ""}` });
    }
    if (this.shuttingDown) return reply({ ok: false, error: "worker is shutting down" });
    const busy = this.training();
    if (busy) return reply({ ok: false, error: `busy with run ${busy.runId}` });
    log("info", `assigned run ${raw.runId} (attempt ${raw.attempt}, seq from ${raw.nextSeq}${raw.resumeFrom ? `, resume ${raw.resumeFrom}` : ""})`);
    const run = startRun(raw, { socket: this.socket, log, dataRoot: this.cli.dataRoot, engine: this.engine });
    this.engine = undefined;
    runs.set(run.runId, run);
    reply({ ok: true });
    this.heartbeat();
    void run.done.then((outcome) => {
      runs.delete(run.runId);
      if (!outcome.delivered) log("warn", `run ${run.runId} ended ${outcome.status}; the dashboard refused its last events`);
      this.heartbeat();
      if (this.cli.oneRun) void this.shutdown(`run ${run.runId} ended (${outcome.status}); --one-run`);
    });
  }

  /**
   * Cancels the training run (its engine saves a checkpoint), waits up to QRAG_WORKER_SHUTDOWN_MS
   * for every run's events to be acknowledged, closes the socket and exits.
   */
  async shutdown(why: string, code = 0): Promise<void> {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    this.exitCode = code;
    const { log } = this;
    const pending = [...this.runs.values()];
    if (pending.length) {
      const limit = settings().worker.shutdownMs;
      const run = this.training();
      if (run) {
        log("info", `${why}: cancelling run ${run.runId}, saving a checkpoint (waiting up to ${limit / 1000} s)`);
        run.interrupt(`worker shutting down (${why})`, `worker ${this.cli.name} shut down (${why}); queued again to resume from its last checkpoint`);
      } else {
        log("info", `${why}: delivering the last events (waiting up to ${limit / 1000} s)`);
      }
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        Promise.all(pending.map((r) => r.done)).then(() => false),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(true), limit))),
      ]);
      clearTimeout(timer);
      if (timedOut) {
        log("warn", `events of ${this.activeRuns().join(", ")} not all acknowledged before exit (dashboard unreachable?); the runs' files stay in their run folders`);
        this.exitCode = this.exitCode || 1;
      }
    }
    clearInterval(this.hbTimer);
    if (this.rejoinTimer) clearTimeout(this.rejoinTimer);
    this.socket.close();
    log("info", "stopped");
    process.exit(this.exitCode);
  }
}

async function main(): Promise<void> {
  let cli: Cli;
  try {
    cli = parseCli(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`${errorMessage(e)}\n${USAGE}\n`);
    process.exit(2);
  }
  const log: Logger = stderrLogger(cli.name);
  const { me, engine } = await startUp(cli, log);
  const session = new WorkerSession(cli, me, log, engine);
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    if (++signals > 1) {
      log("warn", `${sig} again: exiting now`);
      process.exit(130);
    }
    void session.shutdown(sig);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
}

// Concise fatal errors: Node would otherwise print the throwing source line, which for tfjs-wasm
// is its whole minified bundle.
function fatal(kind: string, e: unknown): void {
  const stack = e instanceof Error && e.stack ? e.stack.split("\n").slice(1, 4).map((l) => l.slice(0, 200)).join("\n") : "";
  process.stderr.write(`worker: ${kind}: ${errorMessage(e)}${stack ? "\n" + stack : ""}\n`);
  process.exit(1);
}
process.on("uncaughtException", (e) => fatal("uncaught exception", e));
process.on("unhandledRejection", (e) => fatal("unhandled rejection", e));

main().catch((e: unknown) => fatal("startup failed", e));
