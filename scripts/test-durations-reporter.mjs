/**
 * A node:test reporter that writes one JSON object, test file → seconds its process took, from the
 * file-level `test:complete` events (their name is the file's path). scripts/test-tier.ts adds it
 * beside the usual reporter to print each tier's slowest files: with two files at a time, the
 * slowest decide the tier's wall time (see SLOW_FIRST there). Plain JavaScript: node loads
 * reporters before the tsx hook is in place.
 */
import path from "node:path";
import process from "node:process";

/** @param {AsyncIterable<{ type: string, data?: { name?: string, file?: string, nesting?: number, details?: { duration_ms?: number } } }>} source */
export default async function* durations(source) {
  /** @type {Record<string, number>} */
  const seconds = {};
  for await (const e of source) {
    const d = e.data;
    if (e.type !== "test:complete" || !d?.file || d.nesting !== 0 || d.name !== d.file) continue;
    seconds[path.relative(process.cwd(), d.file)] = Math.round((d.details?.duration_ms ?? 0) / 100) / 10;
  }
  yield `${JSON.stringify(seconds, null, 1)}\n`;
}
