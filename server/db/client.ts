/**
 * One Prisma client per process, with the provider picked at runtime from the database URL:
 * postgres:// or postgresql:// → the PostgreSQL client (generated/postgres, driver adapter pg),
 * anything else → SQLite (generated/sqlite, better-sqlite3, WAL mode).
 *
 * Both generated clients come from the same models, so they expose the same API; the SQLite
 * client's type stands for both (shared/specs/offline-stack.md §2, the cast trick).
 *
 * The handle lives on globalThis so that the custom server (server/main.ts, loaded by tsx) and
 * Next's bundled route handlers share one client, one SQLite connection and one write lock.
 */
import fs from "node:fs";
import path from "node:path";
import type { PrismaClient } from "../../generated/sqlite/client.ts";

export type Db = PrismaClient;
export type Provider = "sqlite" | "postgresql";

export interface DbHandle {
  prisma: Db;
  provider: Provider;
  url: string;
  /**
   * Runs `fn` alone among this process's writers. better-sqlite3 has one connection, and any
   * statement issued while an interactive transaction is open would join that transaction, so
   * every write goes through this queue (on PostgreSQL it only orders writes).
   */
  write<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export function providerOf(url: string): Provider {
  return /^postgres(ql)?:\/\//i.test(url) ? "postgresql" : "sqlite";
}

export function defaultDatabaseUrl(dataDir = path.resolve("data")): string {
  return `file:${path.join(dataDir, "qrag.db")}`;
}

/** The SQLite file of a file: URL (relative paths resolve against the working directory). */
export function sqlitePath(url: string): string {
  return path.resolve(url.replace(/^file:/, "").replace(/\?.*$/, ""));
}

function makeLock(): <T>(fn: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>) => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
}

async function load<T>(what: string, schema: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    const msg = (e as Error).message;
    if (/Cannot find module|ERR_MODULE_NOT_FOUND|Failed to load/i.test(msg) && /generated/.test(msg)) {
      throw new Error(`the ${what} Prisma client is not generated: run \`npx prisma generate --schema ${schema}\` (npm install does it)`, { cause: e });
    }
    throw e;
  }
}

/** Opens a new client for `url` (tests open several; the app uses getDb()). */
export async function openDb(url: string): Promise<DbHandle> {
  const provider = providerOf(url);
  let prisma: Db;
  if (provider === "postgresql") {
    const { PrismaClient: PgClient } = await load("PostgreSQL", "prisma/postgres", () => import("../../generated/postgres/client.ts"));
    const { PrismaPg } = await import("@prisma/adapter-pg");
    prisma = new PgClient({ adapter: new PrismaPg({ connectionString: url, max: 8 }) }) as unknown as Db;
  } else {
    const file = sqlitePath(url);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const { PrismaClient: LiteClient } = await load("SQLite", "prisma/sqlite", () => import("../../generated/sqlite/client.ts"));
    const { PrismaBetterSQLite3 } = await import("@prisma/adapter-better-sqlite3");
    prisma = new LiteClient({ adapter: new PrismaBetterSQLite3({ url: `file:${file}`, timeout: 10_000 }) });
    // WAL lets readers run beside the writer; NORMAL sync is durable against process crashes.
    await prisma.$queryRawUnsafe("PRAGMA journal_mode = WAL");
    await prisma.$executeRawUnsafe("PRAGMA synchronous = NORMAL");
    await prisma.$executeRawUnsafe("PRAGMA foreign_keys = ON");
  }
  const lock = makeLock();
  return {
    prisma,
    provider,
    url,
    write: (fn) => lock(() => fn(prisma)),
    close: () => prisma.$disconnect(),
  };
}

const g = globalThis as unknown as { __qragDb?: { url: string; handle: Promise<DbHandle> } };

/** The process's database, opened on first use from DATABASE_URL (or data/qrag.db). */
export function getDb(url?: string): Promise<DbHandle> {
  const want = url ?? process.env.DATABASE_URL ?? defaultDatabaseUrl(process.env.QRAG_DATA_DIR);
  if (g.__qragDb && (url === undefined || g.__qragDb.url === want)) return g.__qragDb.handle;
  if (g.__qragDb) throw new Error(`database already open at ${g.__qragDb.url}`);
  const handle = openDb(want);
  g.__qragDb = { url: want, handle };
  handle.catch(() => {
    if (g.__qragDb?.handle === handle) g.__qragDb = undefined;
  });
  return handle;
}

/** Closes the process's database (server shutdown). */
export async function closeDb(): Promise<void> {
  const cur = g.__qragDb;
  g.__qragDb = undefined;
  if (cur) await (await cur.handle).close();
}
