/**
 * The platform's settings: its process environment, validated once: every variable the server, the worker and the
 * platform's benchmarks read, with its default. Nothing else of the platform reads `process.env`;
 * a bad value stops the process at start with a message naming the variable.
 *
 * The engine (server/qrag) never imports this module: its settings (data root, config folder,
 * backend, wasm threads) are its own (server/qrag/settings.ts), which read QRAG_DATA_ROOT,
 * QRAG_DATA_DIR, QRAG_CONFIG_DIR, QRAG_BACKEND and QRAG_WASM_THREADS with the same defaults as
 * here when the engine runs alone (its CLI `qrag`, `npm run bench`, tests). Every platform process
 * that uses the engine maps `settings().engine` onto it with `configureEngine` at start (server/main.ts,
 * server/worker/main.ts and engine-process.ts, server/bench/*).
 *
 *   PORT, HOST                   dashboard listen address (3000, 127.0.0.1)
 *   NODE_ENV                     "production" serves the `next build` output, else Next dev mode
 *   QRAG_DATA_DIR                database file, worker token, run folders (<repo>/data)
 *   QRAG_DATA_ROOT               the only folder a run config's files may come from (QRAG_DATA_DIR)
 *   DATABASE_URL                 postgres://… or file:… (file:<QRAG_DATA_DIR>/qrag.db)
 *   QRAG_CONFIG_DIR              YAML presets and groups (<repo>/configs)
 *   QRAG_WORKER_TOKEN            the token workers present (else generated into <data>/worker-token)
 *   QRAG_LEASE_MS                a run without heartbeats for this long loses its lease (10 s)
 *   QRAG_RESTART_GRACE_MS        extra lease time running runs get when the server starts, for their
 *                                workers to reconnect (10 s; the crash tests shorten it)
 *   QRAG_DASHBOARD_URL, QRAG_WORKER_NAME, QRAG_WORKER_DATA_DIR, QRAG_WORKER_SHUTDOWN_MS   worker
 *   QRAG_ALLOWED_ORIGINS         extra origins (a reverse proxy's https://studio.example.org), comma-separated
 *   QRAG_AUTH                    "on": require sign-in even on loopback (beyond loopback it always is)
 *   QRAG_COOKIE_SECURE           "1": the session cookie is Secure (serve behind https)
 *   QRAG_TRUSTED_PROXIES         reverse proxies whose X-Forwarded-For names the client: addresses, CIDRs,
 *                                or loopback / linklocal / uniquelocal, comma-separated (none: the peer is the client)
 *   QRAG_TOKEN                   a personal API token the CLI (npm run import) sends
 *   QRAG_BACKEND                 force a tfjs backend (auto)
 *   QRAG_WASM_THREADS            wasm threads, 1…8 or auto (one per core)
 *   QRAG_SOCKET_ADAPTER          "none" keeps socket.io to this process (default: the PostgreSQL adapter on PostgreSQL)
 *   QRAG_WORKER_ONE_RUN          "1": the worker exits after its first run (a Slurm job's worker)
 *   QRAG_WORKER_SPARE_ENGINE_MS  how long a worker keeps the engine process that probed its backend
 *                                for its first run (60 s; 0: not at all; a one-run worker keeps it)
 *   QRAG_EXECUTOR                "slurm": runs of the "slurm" queue become sbatch jobs (default: connected workers only)
 *   QRAG_SLURM_PARTITION         the slurm queue's partition (required with QRAG_EXECUTOR=slurm)
 *   QRAG_SLURM_CPUS, QRAG_SLURM_MEM_MB, QRAG_SLURM_TIME_LIMIT_MIN, QRAG_SLURM_GPUS, QRAG_SLURM_GPU_TYPE,
 *   QRAG_SLURM_ACCOUNT, QRAG_SLURM_QOS   the queue's default request (1 CPU, 4096 MB, 60 min, no GPU)
 *   QRAG_SLURM_POLL_MS           how often job states are read (5 s; below slurmctld's MinJobAge)
 *   QRAG_SLURM_MAX_JOBS          jobs per run before it fails (a job that keeps dying; 10)
 *   QRAG_SLURM_STALE_SUBMIT_MS   a submission left unanswered this long (the dashboard died inside
 *                                sbatch) is looked for by name and adopted, or made again (60 s)
 *   QRAG_SLURM_COMMAND_TIMEOUT_MS  how long sbatch/squeue/sacct/scancel may take (20 s)
 *   QRAG_SLURM_SUBMIT_TRIES      sbatch calls in a row without an answer (timed out, controller
 *                                unreachable) before the run fails; each is retried later (5)
 *   QRAG_SLURM_JOBS_DIR          job scripts and output, on a file system the nodes share (<data>/slurm-jobs)
 *   QRAG_SLURM_DASHBOARD_URL     the URL jobs' workers connect back to (the dashboard's own)
 *   QRAG_SLURM_BIN               folder of sbatch/squeue/sacct/scancel (PATH)
 */
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";

/** The repository root (configs/, data/, the Next app). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const optionalText = z
  .string()
  .optional()
  .transform((s) => (s?.trim() ? s.trim() : undefined));
/** Slurm's spelling of partition, account, QoS and GPU type names (as lib/contracts/rest.ts; this module imports none of the project). */
const slurmName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$/, "letters, digits and _ . + - (at most 64)");
const ms = (fallback: number) => z.coerce.number().int().min(100).max(3_600_000).default(fallback);

const schema = z
  .object({
    PORT: z.coerce.number().int().min(0).max(65_535).default(3000),
    HOST: optionalText.transform((s) => s ?? "127.0.0.1"),
    NODE_ENV: optionalText,
    QRAG_DATA_DIR: optionalText,
    QRAG_DATA_ROOT: optionalText,
    DATABASE_URL: optionalText,
    QRAG_CONFIG_DIR: optionalText,
    QRAG_WORKER_TOKEN: optionalText,
    QRAG_LEASE_MS: ms(10_000),
    QRAG_RESTART_GRACE_MS: ms(10_000),
    QRAG_DASHBOARD_URL: optionalText,
    QRAG_WORKER_NAME: optionalText,
    QRAG_WORKER_DATA_DIR: optionalText,
    // SIGTERM must end a worker within 5 s (service managers then SIGKILL): the wait for the last
    // acknowledgements stays below that
    QRAG_WORKER_SHUTDOWN_MS: z.coerce.number().int().min(100).max(4_500).default(4_000),
    QRAG_WORKER_SPARE_ENGINE_MS: z.coerce.number().int().min(0).max(600_000).default(60_000),
    QRAG_ALLOWED_ORIGINS: optionalText.pipe(
      z
        .string()
        .optional()
        .transform((s) => (s ?? "").split(",").map((o) => o.trim()).filter(Boolean))
        .refine((list) => list.every((o) => URL.canParse(o) && new URL(o).origin === o.replace(/\/$/, "")), "expected origins like https://studio.example.org, comma-separated"),
    ),
    QRAG_AUTH: optionalText.refine((s) => s === undefined || s === "on" || s === "auto", 'expected "on" or "auto"'),
    QRAG_COOKIE_SECURE: optionalText.refine((s) => s === undefined || s === "0" || s === "1", 'expected "0" or "1"'),
    QRAG_TOKEN: optionalText,
    QRAG_TRUSTED_PROXIES: optionalText.pipe(
      z
        .string()
        .optional()
        .transform((s) => (s ?? "").split(",").map((o) => o.trim()).filter(Boolean))
        .refine((list) => list.length <= 64, "at most 64 entries"), // each entry is checked by server/http/client-address.ts at start
    ),
    QRAG_BACKEND: optionalText,
    QRAG_WASM_THREADS: optionalText.refine((s) => s === undefined || s === "auto" || /^[1-8]$/.test(s), 'expected an integer 1…8 or "auto"'),
    QRAG_SOCKET_ADAPTER: optionalText.refine((s) => s === undefined || s === "none" || s === "postgres", 'expected "none" or "postgres"'),
    QRAG_WORKER_ONE_RUN: optionalText.refine((s) => s === undefined || s === "0" || s === "1", 'expected "0" or "1"'),
    QRAG_EXECUTOR: optionalText.refine((s) => s === undefined || s === "workers" || s === "slurm", 'expected "workers" or "slurm"'),
    QRAG_SLURM_PARTITION: optionalText.pipe(slurmName.optional()),
    QRAG_SLURM_CPUS: z.coerce.number().int().min(1).max(1024).default(1),
    QRAG_SLURM_MEM_MB: z.coerce.number().int().min(1).max(64 << 20).default(4096),
    QRAG_SLURM_TIME_LIMIT_MIN: z.coerce.number().int().min(1).max(366 * 24 * 60).default(60),
    QRAG_SLURM_GPUS: z.coerce.number().int().min(0).max(64).default(0),
    QRAG_SLURM_GPU_TYPE: optionalText.pipe(slurmName.optional()),
    QRAG_SLURM_ACCOUNT: optionalText.pipe(slurmName.optional()),
    QRAG_SLURM_QOS: optionalText.pipe(slurmName.optional()),
    QRAG_SLURM_POLL_MS: ms(5_000),
    QRAG_SLURM_MAX_JOBS: z.coerce.number().int().min(1).max(1000).default(10),
    QRAG_SLURM_STALE_SUBMIT_MS: ms(60_000),
    QRAG_SLURM_COMMAND_TIMEOUT_MS: ms(20_000),
    QRAG_SLURM_SUBMIT_TRIES: z.coerce.number().int().min(1).max(100).default(5),
    QRAG_SLURM_JOBS_DIR: optionalText,
    QRAG_SLURM_DASHBOARD_URL: optionalText.refine((s) => s === undefined || URL.canParse(s), "expected a URL"),
    QRAG_SLURM_BIN: optionalText,
  })
  .refine((e) => e.QRAG_EXECUTOR !== "slurm" || e.QRAG_SLURM_PARTITION, { path: ["QRAG_SLURM_PARTITION"], message: "required with QRAG_EXECUTOR=slurm" })
  .transform((e) => {
    const dataDir = path.resolve(e.QRAG_DATA_DIR ?? path.join(ROOT, "data"));
    const dataRoot = path.resolve(e.QRAG_DATA_ROOT ?? dataDir);
    const configDir = path.resolve(e.QRAG_CONFIG_DIR ?? path.join(ROOT, "configs"));
    return {
      port: e.PORT,
      host: e.HOST,
      allowedOrigins: e.QRAG_ALLOWED_ORIGINS.map((o) => o.replace(/\/$/, "")),
      production: e.NODE_ENV === "production",
      dataDir,
      /** Where config paths resolve (data-root.ts): QRAG_DATA_ROOT, else the data folder. */
      dataRoot,
      /** The data root of a process whose data folder is `dir`: QRAG_DATA_ROOT when set, else `dir`. */
      dataRootFor: (dir: string) => (e.QRAG_DATA_ROOT ? path.resolve(e.QRAG_DATA_ROOT) : dir),
      /** The database of the data folder `dir`: DATABASE_URL when set, else file:<dir>/qrag.db. */
      databaseUrlFor: (dir: string) => e.DATABASE_URL ?? `file:${path.join(dir, "qrag.db")}`,
      configDir,
      workerToken: e.QRAG_WORKER_TOKEN,
      /** Accounts: forced on (else required only beyond loopback), Secure cookies, the CLI's API token. */
      auth: { forced: e.QRAG_AUTH === "on", cookieSecure: e.QRAG_COOKIE_SECURE === "1", apiToken: e.QRAG_TOKEN },
      /** Proxies whose X-Forwarded-For is believed (server/http/client-address.ts). */
      trustedProxies: e.QRAG_TRUSTED_PROXIES,
      leaseMs: e.QRAG_LEASE_MS,
      /** Added to the lease of every running run at start (workers reconnect after a restart). */
      restartGraceMs: e.QRAG_RESTART_GRACE_MS,
      worker: {
        dashboardUrl: e.QRAG_DASHBOARD_URL,
        name: e.QRAG_WORKER_NAME ?? os.hostname(),
        dataDir: path.resolve(e.QRAG_WORKER_DATA_DIR ?? dataDir),
        shutdownMs: e.QRAG_WORKER_SHUTDOWN_MS,
        spareEngineMs: e.QRAG_WORKER_SPARE_ENGINE_MS,
        oneRun: e.QRAG_WORKER_ONE_RUN === "1",
      },
      /** socket.io across dashboard nodes: "none", or undefined for the PostgreSQL adapter on PostgreSQL. */
      socketAdapter: e.QRAG_SOCKET_ADAPTER as "none" | "postgres" | undefined,
      /** The Slurm queue (QRAG_EXECUTOR=slurm): its partition, default request, polling and where jobs' files go; null: none. */
      slurm:
        e.QRAG_EXECUTOR === "slurm" && e.QRAG_SLURM_PARTITION
          ? {
              partition: e.QRAG_SLURM_PARTITION,
              defaults: {
                cpus: e.QRAG_SLURM_CPUS,
                mem_mb: e.QRAG_SLURM_MEM_MB,
                time_limit_min: e.QRAG_SLURM_TIME_LIMIT_MIN,
                gpus: e.QRAG_SLURM_GPUS,
                ...(e.QRAG_SLURM_GPU_TYPE ? { gpu_type: e.QRAG_SLURM_GPU_TYPE } : {}),
                ...(e.QRAG_SLURM_ACCOUNT ? { account: e.QRAG_SLURM_ACCOUNT } : {}),
                ...(e.QRAG_SLURM_QOS ? { qos: e.QRAG_SLURM_QOS } : {}),
              },
              pollMs: e.QRAG_SLURM_POLL_MS,
              maxJobs: e.QRAG_SLURM_MAX_JOBS,
              staleSubmitMs: e.QRAG_SLURM_STALE_SUBMIT_MS,
              commandTimeoutMs: e.QRAG_SLURM_COMMAND_TIMEOUT_MS,
              submitTries: e.QRAG_SLURM_SUBMIT_TRIES,
              jobsDir: path.resolve(e.QRAG_SLURM_JOBS_DIR ?? path.join(dataDir, "slurm-jobs")),
              dashboardUrl: e.QRAG_SLURM_DASHBOARD_URL,
              binDir: e.QRAG_SLURM_BIN,
            }
          : null,
      /** The engine's settings (server/qrag/settings.ts), handed to it with `configureEngine` at start. */
      engine: { backend: e.QRAG_BACKEND, wasmThreads: e.QRAG_WASM_THREADS, dataRoot, configDir },
    };
  });
export type Settings = z.output<typeof schema>;

/** Parses a process environment (tests pass their own); throws one line per bad variable. */
export function parseSettings(source: Record<string, string | undefined>): Settings {
  const r = schema.safeParse(source);
  if (!r.success) throw new Error(`bad environment: ${r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return r.data;
}

let current: Settings | undefined;
/** This process's settings, read from its environment on first use. */
export function settings(): Settings {
  return (current ??= parseSettings(process.env));
}
