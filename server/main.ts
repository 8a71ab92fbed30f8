/**
 * The dashboard server: Next.js (pages) and socket.io on one HTTP server and one port, with the
 * REST API (/api/*) answered by server/api/router.ts in this process. At start it applies the
 * database migrations, opens the one Prisma client, creates the scheduler and the /ui notifier,
 * attaches the /workers and /ui namespaces, and (by default) spawns one local trainer worker so
 * that a new user has a working product with one command.
 *
 *   tsx server/main.ts [--port 3000] [--host 127.0.0.1] [--data-dir data] [--no-worker] [--dev] [--no-next]
 *   Environment: see server/settings.ts (PORT, HOST, DATABASE_URL, QRAG_DATA_DIR, QRAG_WORKER_TOKEN, …).
 */
import crypto from "node:crypto";
import fs from "node:fs";
import type { IncomingMessage } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Server } from "socket.io";
import { HEARTBEAT_MS, UI_NAMESPACE, WORKER_NAMESPACE } from "../lib/contracts/index.ts";
import { isLoopback, sameOrigin } from "./http/same-origin.ts";
import { checkWorkerToken } from "./auth/accounts.ts";
import { createAuthGate, uiRoomsOf, type AuthGate } from "./auth/gate.ts";
import type { ApiDeps } from "./api/http.ts";
import { serveApi } from "./api/router.ts";
import { dashboardHttp, dashboardSockets, listen, startNext } from "./http/dashboard-http.ts";
import { clientAddressOf } from "./http/client-address.ts";
import { closeDb, getDb, providerOf, type DbHandle } from "./db/client.ts";
import { migrate } from "./db/migrate.ts";
import { settings, ROOT } from "./settings.ts";
import { configureEngine, wasmThreadsAuto } from "./qrag/index.ts";
import { createScheduler, schedulerStartup } from "./runs/scheduler.ts";
import { attachPostgresAdapter, type Cluster } from "./realtime/cluster.ts";
import { createListCache, type ListCache } from "./runs/list-cache.ts";
import { attachUi, type UiChannel, type UiNamespace } from "./realtime/ui.ts";
import { attachWorkers, workerTokenRoom, type WorkersNamespace } from "./realtime/workers.ts";
import { startLocalWorker } from "./local/local-worker.ts";
import { WORKER_ENTRY, nodeFlagsFor } from "./worker-entry.ts";
import { startExecutors } from "./executors/start.ts";
import type { SlurmExecutor } from "./executors/slurm/executor.ts";
import { createPlaygroundPool } from "./playground/pool.ts";

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
  /** The only folder run configs may name files in (default QRAG_DATA_ROOT, else the data folder). */
  dataRoot?: string;
  /** Serve the Next app (default true); false leaves socket.io and /api only. */
  next?: boolean;
  leaseMs?: number;
  /** socket.io across dashboard nodes (default QRAG_SOCKET_ADAPTER; the PostgreSQL adapter on PostgreSQL). */
  socketAdapter?: "postgres" | "none";
  /** Origins besides the server's own that may call it (default QRAG_ALLOWED_ORIGINS). */
  allowedOrigins?: string[];
  /** Require sign-in even on loopback (default QRAG_AUTH=on); beyond loopback it is always required. */
  auth?: boolean;
  /** Reverse proxies whose X-Forwarded-For names the client (default QRAG_TRUSTED_PROXIES). */
  trustedProxies?: string[];
  log?: (msg: string) => void;
}

export interface RunningServer {
  url: string;
  port: number;
  workerToken: string;
  databaseUrl: string;
  /** Whether REST calls, pages and the /ui socket need a signed-in user. */
  authRequired: boolean;
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

/** The server's folders, address and lease time: options first, then settings (server/settings.ts); the folders are created. */
function resolveServer(opts: ServerOptions) {
  const e = settings();
  const dataDir = opts.dataDir ? path.resolve(opts.dataDir) : e.dataDir;
  const databaseUrl = opts.databaseUrl ?? e.databaseUrlFor(dataDir);
  const host = opts.host ?? e.host;
  const port = opts.port ?? e.port;
  const dev = opts.dev ?? !e.production;
  const leaseMs = opts.leaseMs ?? e.leaseMs;
  fs.mkdirSync(path.join(dataDir, "runs"), { recursive: true });
  const dataRoot = path.resolve(opts.dataRoot ?? e.dataRootFor(dataDir));
  fs.mkdirSync(dataRoot, { recursive: true });
  // telemetry off for Next and Prisma (this process and the worker it spawns)
  process.env.NEXT_TELEMETRY_DISABLED ??= "1";
  process.env.CHECKPOINT_DISABLE ??= "1";
  const clustered = providerOf(databaseUrl) === "postgresql" && (opts.socketAdapter ?? e.socketAdapter) !== "none";
  return { e, dataDir, databaseUrl, host, port, dev, leaseMs, dataRoot, clustered };
}

/** Migrations applied, the one Prisma client, and the scheduler's start-up (leases extended by the restart grace). */
async function openDatabase(databaseUrl: string, leaseMs: number, restartGraceMs: number, clustered: boolean, log: (msg: string) => void): Promise<DbHandle> {
  const applied = await migrate(databaseUrl, { log });
  const h = await getDb(databaseUrl);
  log(`database: ${providerOf(databaseUrl)} ${redact(databaseUrl)}${applied.length ? ` (applied ${applied.join(", ")})` : ""}`);
  // workers could not heartbeat while this server was down: give them time to reconnect (their
  // socket.io clients back off for a few seconds between attempts) before leases can expire
  await schedulerStartup(h, leaseMs + restartGraceMs, clustered);
  return h;
}

/** Accounts: nothing in the way on loopback; a sign-in everywhere else (or with QRAG_AUTH=on). */
function accountsGate(h: DbHandle, o: { host: string; dev: boolean; forced: boolean; cookieSecure: boolean }) {
  const required = !isLoopback(o.host.toLowerCase()) || o.forced;
  const auth = createAuthGate(h, { required, cookieSecure: o.cookieSecure });
  // pages anyone may load: the login page and the static assets it needs
  const publicPage = (url: string) => /^\/(login(\/|\?|$)|_next\/static\/|icon\.svg|favicon\.ico)/.test(url) || (o.dev && url.startsWith("/_next/"));
  const pageAllowed = (req: IncomingMessage): Promise<unknown> => (required && !publicPage(req.url ?? "/") ? auth.identify(req.headers) : Promise.resolve(true));
  return { required, auth, pageAllowed };
}

/** The /ui socket carries run data: a session cookie (or Bearer token in extraHeaders) when accounts are required. */
function guardUiSockets(io: Server, auth: AuthGate): void {
  io.of(UI_NAMESPACE).use((socket, next) => {
    auth.identify(socket.handshake.headers).then(
      (who) => {
        if (!who) return next(new Error("unauthorized: sign in first"));
        void socket.join(uiRoomsOf(who));
        next();
      },
      () => next(new Error("unauthorized: sign-in check failed")),
    );
  });
}

/**
 * Run changes go to this node's /ui sockets and clear its cached run lists; with other nodes they
 * are relayed through PostgreSQL. Every run change this node hears of (its own, or relayed from
 * another node) clears cached lists; progress alone (each batch) may lag up to the cache's 1 s, as
 * "runs:state" does.
 */
function runsNotifier(ui: UiChannel, cluster: Cluster | null, runsList: ListCache) {
  const localNotifier = {
    batch: ui.batch,
    changed: (ids: readonly string[], kind?: "status" | "progress") => {
      if (kind !== "progress") runsList.invalidate();
      ui.changed(ids, kind);
    },
    changedElsewhere: () => runsList.invalidate(),
  };
  return cluster ? cluster.notifier(localNotifier) : localNotifier;
}

export async function startServer(opts: ServerOptions = {}): Promise<RunningServer> {
  const log = opts.log ?? ((m: string) => console.log(m));
  const { e, dataDir, databaseUrl, host, port, dev, leaseMs, dataRoot, clustered } = resolveServer(opts);
  const h = await openDatabase(databaseUrl, leaseMs, e.restartGraceMs, clustered, log);
  const workerToken = workerTokenFor(dataDir, opts.workerToken ?? e.workerToken);
  const gate = accountsGate(h, { host, dev, forced: opts.auth ?? e.auth.forced, cookieSecure: e.auth.cookieSecure });
  const nextApp = await startNext({ enabled: opts.next !== false, dev, dir: ROOT, host, port });

  // the socket namespaces and the API share one scheduler and one notifier
  let apiDeps: ApiDeps | null = null;
  const guard = sameOrigin({ host, allowedOrigins: opts.allowedOrigins ?? e.allowedOrigins });
  const http = dashboardHttp({ guard, api: (req, res) => (apiDeps ? serveApi(req, res, apiDeps) : null), next: nextApp?.handle ?? null, pageAllowed: gate.pageAllowed, log });
  const io = dashboardSockets(http, guard);
  // ---- scale-out: several nodes on one PostgreSQL (server/realtime/cluster.ts) ----
  const cluster: Cluster | null = clustered ? await attachPostgresAdapter(io, databaseUrl, log) : null;
  const ui = attachUi(io.of(UI_NAMESPACE) as UiNamespace, h);
  guardUiSockets(io, gate.auth);
  const runsList = createListCache();
  const notifier = runsNotifier(ui, cluster, runsList);
  const scheduler = createScheduler(h, { leaseMs, runsDir: path.join(dataDir, "runs"), notifier, log: (m) => log(`[scheduler] ${m}`) });
  attachWorkers(io.of(WORKER_NAMESPACE) as WorkersNamespace, scheduler, { token: workerToken, checkWorkerToken: (t) => checkWorkerToken(h, t), log: (m) => log(`[workers] ${m}`) });
  // REST's kick and cancel reach the executor too (a new Slurm run, a cancel to scancel)
  let executor: SlurmExecutor | null = null;
  // the playground's engine processes (tfjs stays out of this process), started on demand
  const playground = createPlaygroundPool({ dataRoot, log });
  const toWorkers = cluster ? cluster.scheduler(scheduler) : scheduler;
  apiDeps = {
    db: h,
    notifier,
    scheduler: {
      kick: () => (toWorkers.kick(), executor?.kick()),
      cancel: (runId, workerId) => (toWorkers.cancel(runId, workerId), executor?.kick()),
    },
    // with other nodes, a worker may be connected to any of them: the Worker rows tell
    connectedWorkers: () => (cluster ? null : scheduler.connectedWorkers()),
    leaseMs,
    runsList,
    ...(cluster ? { nodes: cluster.nodes } : {}),
    auth: gate.auth,
    revokeWorkerToken: (id) => io.of(WORKER_NAMESPACE).in(workerTokenRoom(id)).disconnectSockets(true),
    endUiSockets: (rooms) => rooms.length > 0 && io.of(UI_NAMESPACE).in(rooms).disconnectSockets(true),
    dataRoot, // config paths resolve inside it
    playground: { pool: playground, runsDir: path.join(dataDir, "runs") },
    clientAddress: clientAddressOf(opts.trustedProxies ?? e.trustedProxies),
  };

  const { port: actualPort, url } = await listen(http, port, host);
  const timers = [setInterval(() => void scheduler.reapLeases(), Math.min(1000, leaseMs / 4)), setInterval(() => scheduler.kick(), HEARTBEAT_MS)];
  executor = startExecutors(h, {
    settings: e,
    url,
    notifier,
    reapLeases: () => scheduler.reapLeases(),
    endTokenSockets: (id) => void io.of(WORKER_NAMESPACE).in(workerTokenRoom(id)).disconnectSockets(true),
    log,
  });
  executor?.kick();

  // ---- the local worker -----------------------------------------------------------------------
  const local = (opts.spawnWorker ?? true)
    ? await startLocalWorker({
        url,
        dataDir,
        entry: WORKER_ENTRY,
        nodeFlags: nodeFlagsFor(WORKER_ENTRY),
        cwd: ROOT,
        // One core stays with the dashboard (live charts), unless QRAG_WASM_THREADS says otherwise.
        env: { ...process.env, QRAG_DATA_DIR: dataDir, QRAG_DATA_ROOT: dataRoot, QRAG_WORKER_TOKEN: workerToken, QRAG_WASM_THREADS: e.engine.wasmThreads ?? String(wasmThreadsAuto(1)) },
        log,
      })
    : null;

  log(`Q-RAG Studio on ${url} (${dev ? "dev" : "production"}${opts.next === false ? ", no Next" : ""}${gate.required ? ", sign-in required" : ""}${cluster ? ", nodes share events through PostgreSQL" : ""})`);
  if (gate.required && (await h.prisma.user.count()) === 0) log("no accounts yet: add the first admin with `npm run user -- add NAME --role admin`");
  log(`more workers: npm run worker -- --url ${url} --token ${e.workerToken ? "$QRAG_WORKER_TOKEN" : `"$(cat ${path.join(dataDir, "worker-token")})"`}`);

  // ---- shutdown: timers, the local worker, the API, the scheduler, sockets, Next, the database ----
  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      for (const t of timers) clearInterval(t);
      executor?.close();
      await local?.stop();
      apiDeps = null;
      await playground.close();
      scheduler.close();
      ui.close();
      const closed = new Promise<void>((r) => io.close(() => r()));
      http.closeAllConnections?.();
      await closed;
      await cluster?.close();
      await nextApp?.app.close?.().catch(() => undefined);
      await closeDb();
    })());

  return { url, port: actualPort, workerToken, databaseUrl, authRequired: gate.required, localWorkerPid: () => local?.pid() ?? null, close };
}

function flag(args: string[], name: string): string | undefined {
  const i = args.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (i < 0) return undefined;
  return args[i].includes("=") ? args[i].slice(name.length + 1) : args[i + 1];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  configureEngine(settings().engine); // the engine's settings come from this process's validated environment
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
