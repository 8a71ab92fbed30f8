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
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Server } from "socket.io";
import { HEARTBEAT_MS, UI_NAMESPACE, WORKER_NAMESPACE } from "../lib/contracts/index.ts";
import { isLoopback, sameOrigin } from "./http/same-origin.ts";
import { checkWorkerToken } from "./auth/accounts.ts";
import { createAuthGate, uiRoomsOf } from "./auth/gate.ts";
import { serveApi } from "./api/router.ts";
import { clientAddressOf } from "./http/client-address.ts";
import { closeDb, getDb, providerOf } from "./db/client.ts";
import { migrate } from "./db/migrate.ts";
import { settings, ROOT } from "./settings.ts";
import { configureEngine, wasmThreadsAuto } from "./qrag/index.ts";
import { createScheduler, schedulerStartup } from "./runs/scheduler.ts";
import { attachPostgresAdapter, type Cluster } from "./realtime/cluster.ts";
import { createListCache } from "./runs/list-cache.ts";
import { attachUi, type UiNamespace } from "./realtime/ui.ts";
import { attachWorkers, workerTokenRoom, type WorkersNamespace } from "./realtime/workers.ts";
import { startLocalWorker } from "./local/local-worker.ts";

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

export async function startServer(opts: ServerOptions = {}): Promise<RunningServer> {
  const log = opts.log ?? ((m: string) => console.log(m));
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

  const applied = await migrate(databaseUrl, { log });
  const h = await getDb(databaseUrl);
  log(`database: ${providerOf(databaseUrl)} ${redact(databaseUrl)}${applied.length ? ` (applied ${applied.join(", ")})` : ""}`);
  // workers could not heartbeat while this server was down: give them time to reconnect (their
  // socket.io clients back off for a few seconds between attempts) before leases can expire
  const clustered = providerOf(databaseUrl) === "postgresql" && (opts.socketAdapter ?? e.socketAdapter) !== "none";
  await schedulerStartup(h, leaseMs + RESTART_GRACE_MS, clustered);
  const workerToken = workerTokenFor(dataDir, opts.workerToken ?? e.workerToken);

  // ---- accounts: nothing in the way on loopback; a sign-in everywhere else ----
  const authRequired = !isLoopback(host.toLowerCase()) || (opts.auth ?? e.auth.forced);
  const auth = createAuthGate(h, { required: authRequired, cookieSecure: e.auth.cookieSecure });
  // pages anyone may load: the login page and the static assets it needs
  const publicPage = (url: string) => /^\/(login(\/|\?|$)|_next\/static\/|icon\.svg|favicon\.ico)/.test(url) || (dev && url.startsWith("/_next/"));

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
      const handle = nextHandle;
      (authRequired && !publicPage(req.url ?? "/") ? auth.identify(req.headers) : Promise.resolve(true))
        .then((who) => {
          if (who) return handle(req, res);
          res.writeHead(302, { location: `/login?next=${encodeURIComponent(req.url ?? "/")}`, "cache-control": "no-store" }).end();
        })
        .catch((e: Error) => {
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
  // the /ui socket carries run data: a session cookie (or Bearer token in extraHeaders) when accounts are required
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
  attachWorkers(io.of(WORKER_NAMESPACE) as WorkersNamespace, scheduler, { token: workerToken, checkWorkerToken: (t) => checkWorkerToken(h, t), log: (m) => log(`[workers] ${m}`) });
  apiDeps = {
    db: h,
    notifier,
    scheduler: cluster ? cluster.scheduler(scheduler) : scheduler,
    // with other nodes, a worker may be connected to any of them: the Worker rows tell
    connectedWorkers: () => (cluster ? null : scheduler.connectedWorkers()),
    leaseMs,
    runsList,
    ...(cluster ? { nodes: cluster.nodes } : {}),
    auth,
    revokeWorkerToken: (id) => io.of(WORKER_NAMESPACE).in(workerTokenRoom(id)).disconnectSockets(true),
    endUiSockets: (rooms) => rooms.length > 0 && io.of(UI_NAMESPACE).in(rooms).disconnectSockets(true),
    dataRoot, // config paths resolve inside it
    clientAddress: clientAddressOf(opts.trustedProxies ?? e.trustedProxies),
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

  const timers = [setInterval(() => void scheduler.reapLeases(), Math.min(1000, leaseMs / 4)), setInterval(() => scheduler.kick(), HEARTBEAT_MS)];

  // ---- the local worker -----------------------------------------------------------------------
  const local = (opts.spawnWorker ?? true)
    ? await startLocalWorker({
        url,
        dataDir,
        entry: path.join(ROOT, "server", "worker", "main.ts"),
        cwd: ROOT,
        // One core stays with the dashboard (live charts), unless QRAG_WASM_THREADS says otherwise.
        env: { ...process.env, QRAG_DATA_DIR: dataDir, QRAG_DATA_ROOT: dataRoot, QRAG_WORKER_TOKEN: workerToken, QRAG_WASM_THREADS: e.engine.wasmThreads ?? String(wasmThreadsAuto(1)) },
        log,
      })
    : null;

  log(`Q-RAG Studio on ${url} (${dev ? "dev" : "production"}${opts.next === false ? ", no Next" : ""}${authRequired ? ", sign-in required" : ""}${cluster ? ", nodes share events through PostgreSQL" : ""})`);
  if (authRequired && (await h.prisma.user.count()) === 0) log("no accounts yet: add the first admin with `npm run user -- add NAME --role admin`");
  log(`more workers: npm run worker -- --url ${url} --token ${e.workerToken ? "$QRAG_WORKER_TOKEN" : `"$(cat ${path.join(dataDir, "worker-token")})"`}`);

  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      for (const t of timers) clearInterval(t);
      await local?.stop();
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

  return { url, port: actualPort, workerToken, databaseUrl, authRequired, localWorkerPid: () => local?.pid() ?? null, close };
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
