/**
 * The across-lengths view's logic: a sample's outcome at each length (all gold facts found or
 * not), whether it changes with length, and the first length where a sample that succeeded at
 * every shorter length fails — where a longer haystack first breaks the trajectory.
 */
import type { AcrossSampleDto } from "../contracts/index.ts";

export const solved = (c: { found: number; gold: number }) => c.gold > 0 && c.found >= c.gold;

export interface AcrossRow {
  sample: AcrossSampleDto;
  /** Some length where it ran left a gold fact unfound. */
  failed: boolean;
  /** Solved at some lengths and not at others. */
  changes: boolean;
  /** The first length (ascending) that fails after only successes; null if none. */
  firstBreak: number | null;
}

export function acrossRow(sample: AcrossSampleDto, lengths: readonly number[]): AcrossRow {
  const ran = lengths.filter((n) => sample.cells[n]);
  const outcomes = ran.map((n) => solved(sample.cells[n]));
  const firstFail = outcomes.indexOf(false);
  return {
    sample,
    failed: firstFail >= 0,
    changes: outcomes.includes(true) && outcomes.includes(false),
    firstBreak: firstFail > 0 && outcomes.slice(0, firstFail).every(Boolean) ? ran[firstFail] : null,
  };
}

export type AcrossFilter = "all" | "failures" | "changes";

export function filterAcross(samples: readonly AcrossSampleDto[], lengths: readonly number[], filter: AcrossFilter): AcrossRow[] {
  const rows = samples.map((s) => acrossRow(s, lengths));
  return filter === "failures" ? rows.filter((r) => r.failed) : filter === "changes" ? rows.filter((r) => r.changes) : rows;
}
