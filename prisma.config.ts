/**
 * Prisma 6.19.3 CLI configuration for the offline stack (docs/offline-stack.md §1):
 * the JS/Wasm engine with driver adapters, one schema folder per provider (both symlink the
 * shared models), picked by DATABASE_URL: postgres:// or postgresql:// → PostgreSQL, anything
 * else → SQLite (default file:./data/qrag.db).
 *
 *   prisma generate --schema prisma/sqlite      # → generated/sqlite
 *   prisma generate --schema prisma/postgres    # → generated/postgres
 *
 * Migrations are SQL files written with `prisma migrate diff` (see prisma/README.md) and applied
 * by server/db/migrate.ts at server start.
 */
import { defineConfig } from "prisma/config";
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import { PrismaPg } from "@prisma/adapter-pg";

const isPg = (u: string | undefined) => !!u && /^postgres(ql)?:\/\//i.test(u);
// `--schema prisma/postgres` (generate) picks PostgreSQL even while DATABASE_URL names SQLite.
const schemaArg = process.argv.findIndex((a) => a === "--schema" || a.startsWith("--schema="));
const schemaPath = schemaArg < 0 ? "" : process.argv[schemaArg].includes("=") ? process.argv[schemaArg].split("=")[1] : (process.argv[schemaArg + 1] ?? "");
const pg = /postgres/.test(schemaPath) || (!schemaPath && isPg(process.env.DATABASE_URL));
// Without a URL the 6.x CLI cannot read the schema and tries to download an engine; generate
// never connects, so a placeholder of the right kind is enough there.
if (pg && !isPg(process.env.DATABASE_URL)) process.env.DATABASE_URL = "postgresql://localhost:5432/qrag";
process.env.DATABASE_URL ??= "file:./data/qrag.db";
process.env.CHECKPOINT_DISABLE ??= "1";
const url = process.env.DATABASE_URL;

export default defineConfig({
  experimental: { adapter: true },
  engine: "js",
  schema: pg ? "prisma/postgres" : "prisma/sqlite",
  migrations: { path: pg ? "prisma/postgres/migrations" : "prisma/sqlite/migrations" },
  async adapter() {
    return pg ? new PrismaPg({ connectionString: url }) : new PrismaBetterSQLite3({ url });
  },
});
