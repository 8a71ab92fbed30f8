/**
 * Raw SQL shared by the writers that bypass Prisma's per-row mapping: positional placeholders in
 * each provider's syntax, and multi-row INSERTs (Prisma's createMany costs ≈ 130 µs a row on
 * SQLite; statements of many rows each are an order of magnitude faster).
 */
import type { Db, Provider } from "./client.ts";

/** The i-th (1-based) positional parameter: "$i" on PostgreSQL, "?" on SQLite (bound in order). */
export const placeholder = (provider: Provider, i: number) => (provider === "postgresql" ? `$${i}` : "?");

export interface InsertOptions {
  /** Parameters per statement (rows per statement = this / columns). */
  paramsPerStatement: number;
  /** "ignore": ON CONFLICT DO NOTHING (same syntax on SQLite ≥ 3.24 and PostgreSQL); else a conflict throws. */
  onConflict?: "ignore" | "fail";
}

/** Inserts `rows` (values in `cols` order); returns the rows inserted. */
export async function insertRows(db: Db, provider: Provider, table: string, cols: readonly string[], rows: readonly unknown[][], o: InsertOptions): Promise<number> {
  let inserted = 0;
  const per = Math.max(1, Math.floor(o.paramsPerStatement / cols.length));
  const conflict = o.onConflict === "ignore" ? " ON CONFLICT DO NOTHING" : "";
  for (let i = 0; i < rows.length; i += per) {
    const chunk = rows.slice(i, i + per);
    let k = 0;
    const row = () => `(${cols.map(() => placeholder(provider, ++k)).join(",")})`;
    const sql = `INSERT INTO "${table}" (${cols.map((c) => `"${c}"`).join(",")}) VALUES ${chunk.map(row).join(",")}${conflict}`;
    inserted += await db.$executeRawUnsafe(sql, ...chunk.flat());
  }
  return inserted;
}
