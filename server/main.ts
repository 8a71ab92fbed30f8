/**
 * The dashboard server: Next.js (pages) and socket.io on one HTTP server and one port, with the
 * REST API (/api/*) answered by server/api/router.ts in this process. At start it applies the
 * database migrations, opens the one Prisma client, creates the scheduler and the /ui notifier,
 * attaches the /workers and /ui namespaces, and (by default) spawns one local trainer worker so
 * that a new user has a working product with one command.
 *
 *   tsx server/main.ts [--port 3000] [--host 127.0.0.1] [--data-dir data] [--no-worker] [--dev] [--no-next]
 *   Environment: see server/env.ts (PORT, HOST, DATABASE_URL, QRAG_DATA_DIR, QRAG_WORKER_TOKEN, …).
 */
import { spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Server } from "socket.io";
import { HEARTBEAT_MS, UI_NAMESPACE, WORKER_NAMESPACE } from "../lib/contracts/index.ts";
import { sameOrigin } from "./http/same-origin.ts";
import { serveApi } from "./api/router.ts";
import { closeDb, getDb, providerOf } from "./db/client.ts";
import { migrate } from "./db/migrate.ts";
import { env, ROOT } from "./env.ts";
import { wasmThreadsAuto } from "./qrag/index.ts";
import { createScheduler, schedulerStartup } from "./runs/scheduler.ts";
import { attachPostgresAdapter, type Cluster } from "./realtime/cluster.ts";
import { createListCache } from "./runs/list-cache.ts";
import { attachUi, type UiNamespace } from "./realtime/ui.ts";
import { attachWorkers, type WorkersNamespace } from "./realtime/workers.ts";

/** Extra lease time running runs get when the server starts. */
const RESTART_GRACE_MS = 10_000;

export interface ServerOptions {
  port?: number;
  host?: string;
  /** Next dev mode (default: NODE_ENV !== "production"). */
  dev?: boolean;
  databaseUrl?: string;
  /** Spawn (and keep alive) one local worker process (default true). */
  spawnWorker?: boolean;
  workerToken?: string;
  dataDir?: string;
  /** Serve the Next app (default true); false leaves socket.io and /api only. */
  next?: boolean;
  leaseMs?: number;
  /** socket.io across dashboard nodes (default QRAG_SOCKET_ADAPTER; the PostgreSQL adapter on PostgreSQL). */
  socketAdapter?: "postgres" | "none";
  /** Origins besides the server's own that may call it (default QRAG_ALLOWED_ORIGINS). */
  allowedOrigins?: string[];
  log?: (msg: string) => void;
}

export interface RunningServer {
  url: string;
  port: number;
  workerToken: string;
  databaseUrl: string;
  /** The local worker's pid, when one runs. */
  localWorkerPid(): number | null;
  close(): Promise<void>;
}

/** The given token (QRAG_WORKER_TOKEN), else the one stored under the data folder (created on first start). */
function workerTokenFor(dataDir: string, given?: string): string {
  if (given) return given;
  const file = path.join(dataDir, "worker-token");
  try {
    const t = fs.readFileSync(file, "utf8").trim();
    if (t) return t;
  } catch {
    // first start
  }
  const t = crypto.randomBytes(24).toString("base64url");
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(file, t + "\n", { mode: 0o600 });
  return t;
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
}

export async function startServer(opts: ServerOptions = {}): Promise<RunningServer> {
  const log = opts.log ?? ((m: string) => console.log(m));
  const e = env();
  const dataDir = opts.dataDir ? path.resolve(opts.dataDir) : e.dataDir;
  const databaseUrl = opts.databaseUrl ?? e.databaseUrlFor(dataDir);
  const host = opts.host ?? e.host;
  const port = opts.port ?? e.port;
  const dev = opts.dev ?? !e.production;
  const leaseMs = opts.leaseMs ?? e.leaseMs;
  fs.mkdirSync(path.join(dataDir, "runs"), { recursive: true });
  // telemetry off for Next and Prisma (this process and the worker it spawns)
  process.env.NEXT_TELEMETRY_DISABLED ??= "1";
  process.env.CHECKPOINT_DISABLE ??= "1";

  const applied = await migrate(databaseUrl, { log });
  const h = await getDb(databaseUrl);
  log(`database: ${providerOf(databaseUrl)} ${redact(databaseUrl)}${applied.length ? ` (applied ${applied.join(", ")})` : ""}`);
  // workers could not heartbeat while this server was down: give them time to reconnect (their
  // socket.io clients back off for a few seconds between attempts) before leases can expire
  const clustered = providerOf(databaseUrl) === "postgresql" && (opts.socketAdapter ?? e.socketAdapter) !== "none";
  await schedulerStartup(h, leaseMs + RESTART_GRACE_MS, clustered);
  const workerToken = workerTokenFor(dataDir, opts.workerToken ?? e.workerToken);

  let nextHandle: ((req: IncomingMessage, res: ServerResponse) => Promise<void>) | null = null;
  let nextApp: { close?: () => Promise<void> } | null = null;
  if (opts.next !== false) {
    const { default: next } = await import("next");
    const app = next({ dev, dir: ROOT, hostname: host, port: port || undefined });
    await app.prepare();
    const handle = app.getRequestHandler();
    nextHandle = (req, res) => handle(req, res);
    nextApp = app as unknown as { close?: () => Promise<void> };
  }

  // the socket namespaces and the API share one scheduler and one notifier
  let apiDeps: Parameters<typeof serveApi>[2] | null = null;
  const guard = sameOrigin({ host, allowedOrigins: opts.allowedOrigins ?? e.allowedOrigins });
  const http = createServer((req, res) => {
    const refused = guard.check(req);
    if (refused) {
      res.writeHead(refused.status, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify({ error: refused.error }));
      return;
    }
    if (apiDeps && /^\/api(\/|$|\?)/.test(req.url ?? "")) {
      serveApi(req, res, apiDeps).catch((err: Error) => {
        log(`request ${req.url} failed: ${err.message}`);
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    } else if (nextHandle) {
      nextHandle(req, res).catch((e: Error) => {
        log(`request ${req.url} failed: ${e.message}`);
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    } else {
      res.writeHead(404).end();
    }
  });
  // destroyUpgrade:false leaves Next's own upgrade requests (dev HMR) alone
  const io = new Server(http, {
    destroyUpgrade: false,
    maxHttpBufferSize: 64 * 1024 * 1024,
    pingInterval: 10_000,
    pingTimeout: 20_000,
    allowRequest: (req, done) => done(null, guard.allowSocket(req)),
  });
  // ---- scale-out: several nodes on one PostgreSQL (server/realtime/cluster.ts) ----
  const cluster: Cluster | null = clustered ? await attachPostgresAdapter(io, databaseUrl, log) : null;
  const ui = attachUi(io.of(UI_NAMESPACE) as UiNamespace, h);
  // every run change this node hears of (its own, or relayed from another node) clears cached
  // lists; progress alone (each batch) may lag up to the cache's 1 s, as "runs:state" does
  const runsList = createListCache();
  const localNotifier = {
    batch: ui.batch,
    changed: (ids: readonly string[], kind?: "status" | "progress") => {
      if (kind !== "progress") runsList.invalidate();
      ui.changed(ids, kind);
    },
    changedElsewhere: () => runsList.invalidate(),
  };
  const notifier = cluster ? cluster.notifier(localNotifier) : localNotifier;
  const scheduler = createScheduler(h, { leaseMs, runsDir: path.join(dataDir, "runs"), notifier, log: (m) => log(`[scheduler] ${m}`) });
  attachWorkers(io.of(WORKER_NAMESPACE) as WorkersNamespace, scheduler, { token: workerToken, log: (m) => log(`[workers] ${m}`) });
  apiDeps = {
    db: h,
    notifier,
    scheduler: cluster ? cluster.scheduler(scheduler) : scheduler,
    // with other nodes, a worker may be connected to any of them: the Worker rows tell
    connectedWorkers: () => (cluster ? null : scheduler.connectedWorkers()),
    leaseMs,
    runsList,
    ...(cluster ? { nodes: cluster.nodes } : {}),
  };

  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, host, () => {
      http.off("error", reject);
      resolve();
    });
  });
  const actualPort = (http.address() as AddressInfo).port;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  const url = `http://${shownHost}:${actualPort}`;

  const timers = [setInterval(() => void scheduler.sweep(), Math.min(1000, leaseMs / 4)), setInterval(() => scheduler.kick(), HEARTBEAT_MS)];

  // ---- the local worker -----------------------------------------------------------------------
  let child: ChildProcess | null = null;
  let stopping = false;
  let restartDelay = 1000;
  let restartTimer: NodeJS.Timeout | null = null;
  const spawnLocal = () => {
    const started = Date.now();
    const entry = path.join(ROOT, "server", "worker", "main.ts");
    // the token travels in the environment, not on a command line other users can read
    child = spawn(process.execPath, ["--import", "tsx", entry, "--url", url, "--name", "local", "--data-dir", dataDir], {
      cwd: ROOT,
      // One core stays with the dashboard (live charts), unless QRAG_WASM_THREADS says otherwise.
      env: {
        ...process.env,
        QRAG_DATA_DIR: dataDir,
        QRAG_WORKER_TOKEN: workerToken,
        QRAG_WASM_THREADS: e.engine.wasmThreads ?? String(wasmThreadsAuto(1)),
      },
      stdio: ["ignore", "inherit", "inherit"],
    });
    const me = child;
    log(`local worker started (pid ${me.pid})`);
    me.on("exit", (code, signal) => {
      if (child === me) child = null;
      if (stopping) return;
      if (Date.now() - started > 60_000) restartDelay = 1000;
      log(`local worker exited (${signal ?? `code ${code}`}); restarting in ${restartDelay / 1000}s`);
      restartTimer = setTimeout(() => {
        restartTimer = null;
        if (!stopping) spawnLocal();
      }, restartDelay);
      restartDelay = Math.min(30_000, restartDelay * 2);
    });
  };
  if (opts.spawnWorker ?? true) spawnLocal();

  log(`Q-RAG Studio on ${url} (${dev ? "dev" : "production"}${opts.next === false ? ", no Next" : ""}${cluster ? ", nodes share events through PostgreSQL" : ""})`);
  log(`more workers: npm run worker -- --url ${url} --token ${e.workerToken ? "$QRAG_WORKER_TOKEN" : `"$(cat ${path.join(dataDir, "worker-token")})"`}`);

  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      stopping = true;
      if (restartTimer) clearTimeout(restartTimer);
      for (const t of timers) clearInterval(t);
      const c = child;
      if (c && c.exitCode === null && c.signalCode === null) {
        const gone = new Promise<void>((r) => c.once("exit", () => r()));
        c.kill("SIGTERM");
        const t = setTimeout(() => c.kill("SIGKILL"), 5000);
        await gone;
        clearTimeout(t);
      }
      apiDeps = null;
      scheduler.close();
      ui.close();
      const closed = new Promise<void>((r) => io.close(() => r()));
      http.closeAllConnections?.();
      await closed;
      await cluster?.close();
      await nextApp?.close?.().catch(() => undefined);
      await closeDb();
    })());

  return { url, port: actualPort, workerToken, databaseUrl, localWorkerPid: () => child?.pid ?? null, close };
}

function flag(args: string[], name: string): string | undefined {
  const i = args.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (i < 0) return undefined;
  return args[i].includes("=") ? args[i].slice(name.length + 1) : args[i + 1];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const port = flag(args, "--port");
  startServer({
    port: port !== undefined ? Number(port) : undefined,
    host: flag(args, "--host"),
    dataDir: flag(args, "--data-dir"),
    spawnWorker: !args.includes("--no-worker"),
    next: !args.includes("--no-next"),
    ...(args.includes("--dev") ? { dev: true } : {}),
  }).then(
    (s) => {
      let n = 0;
      const stop = (sig: string) => {
        if (n++) process.exit(1);
        console.log(`${sig}: shutting down`);
        s.close().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.on("SIGINT", () => stop("SIGINT"));
      process.on("SIGTERM", () => stop("SIGTERM"));
    },
    (e: Error) => {
      console.error(e.stack ?? e.message);
      process.exit(1);
    },
  );
}
