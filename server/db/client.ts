/**
 * One Prisma client per process, with the provider picked at runtime from the database URL:
 * postgres:// or postgresql:// → the PostgreSQL client (generated/postgres, driver adapter pg),
 * anything else → SQLite (generated/sqlite, better-sqlite3, WAL mode).
 *
 * Both generated clients come from the same models, so they expose the same API; the SQLite
 * client's type stands for both (prisma/README.md: one models file, two datasources).
 */
import fs from "node:fs";
import path from "node:path";
import type { PrismaClient } from "../../generated/sqlite/client.ts";
import { settings } from "../settings.ts";

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

let current: { url: string; handle: Promise<DbHandle> } | undefined;

/** The process's database, opened on first use from DATABASE_URL (or <data>/qrag.db). */
export function getDb(url?: string): Promise<DbHandle> {
  const want = url ?? settings().databaseUrlFor(settings().dataDir);
  if (current && (url === undefined || current.url === want)) return current.handle;
  if (current) throw new Error(`database already open at ${current.url}`);
  const handle = openDb(want);
  current = { url: want, handle };
  handle.catch(() => {
    if (current?.handle === handle) current = undefined;
  });
  return handle;
}

/** Closes the process's database (server shutdown). */
export async function closeDb(): Promise<void> {
  const cur = current;
  current = undefined;
  if (cur) await (await cur.handle).close();
}
