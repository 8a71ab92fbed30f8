/**
 * Applies the SQL migrations of prisma/<provider>/migrations/NNNN_name/migration.sql that the
 * database has not seen yet, each in one transaction, recording them in "_app_migrations".
 * Idempotent: a second run applies nothing. On PostgreSQL an advisory lock keeps two dashboard
 * nodes starting at once from racing. (Prisma 6's `migrate deploy` cannot talk to PostgreSQL
 * through the JS engine here; docs/offline-stack.md §1.1.)
 *
 * The command line is server/cli/migrate.ts (`npm run db:migrate`): this module only exports, so a
 * bundle that includes it (the device pack's server) does not also run it.
 */
import fs from "node:fs";
import path from "node:path";
import { ROOT } from "../settings.ts";
import { providerOf, sqlitePath } from "./client.ts";

const TABLE = `"_app_migrations"`;
const PG_LOCK_KEY = 727_140_001;

export function migrationsDir(url: string, root = ROOT): string {
  return path.join(root, "prisma", providerOf(url) === "postgresql" ? "postgres" : "sqlite", "migrations");
}

/** Returns the names of the migrations it applied. */
export async function migrate(url: string, opts: { root?: string; log?: (msg: string) => void } = {}): Promise<string[]> {
  const dir = migrationsDir(url, opts.root);
  const names = fs.readdirSync(dir).filter((d) => fs.existsSync(path.join(dir, d, "migration.sql"))).sort();
  const sqlOf = (n: string) => fs.readFileSync(path.join(dir, n, "migration.sql"), "utf8");
  const applied: string[] = [];

  if (providerOf(url) === "postgresql") {
    const { default: pg } = await import("pg");
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query("SELECT pg_advisory_lock($1)", [PG_LOCK_KEY]);
      await c.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
      const done = new Set((await c.query<{ name: string }>(`SELECT name FROM ${TABLE}`)).rows.map((r) => r.name));
      for (const n of names) {
        if (done.has(n)) continue;
        await c.query("BEGIN");
        try {
          await c.query(sqlOf(n));
          await c.query(`INSERT INTO ${TABLE}(name) VALUES ($1)`, [n]);
          await c.query("COMMIT");
        } catch (e) {
          await c.query("ROLLBACK");
          throw new Error(`migration ${n} failed: ${(e as Error).message}`, { cause: e });
        }
        applied.push(n);
        opts.log?.(`applied postgresql migration ${n}`);
      }
    } finally {
      await c.query("SELECT pg_advisory_unlock($1)", [PG_LOCK_KEY]).catch(() => undefined);
      await c.end();
    }
    return applied;
  }

  const { default: Database } = await import("better-sqlite3");
  const file = sqlitePath(url);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file, { timeout: 10_000 });
  try {
    db.pragma("journal_mode = WAL");
    db.exec(`CREATE TABLE IF NOT EXISTS ${TABLE} (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)`);
    const done = new Set(db.prepare(`SELECT name FROM ${TABLE}`).all().map((r) => (r as { name: string }).name));
    for (const n of names) {
      if (done.has(n)) continue;
      const apply = db.transaction(() => {
        db.exec(sqlOf(n));
        db.prepare(`INSERT INTO ${TABLE}(name) VALUES (?)`).run(n);
      });
      try {
        apply.immediate();
      } catch (e) {
        throw new Error(`migration ${n} failed: ${(e as Error).message}`, { cause: e });
      }
      applied.push(n);
      opts.log?.(`applied sqlite migration ${n}`);
    }
  } finally {
    db.close();
  }
  return applied;
}
