/**
 * `npm run fixture:tiny-gguf -- --out FILE [--seed N]`: writes the reader's tiny test model
 * (server/qrag/reader/tiny-gguf.ts), random weights, nothing downloaded.
 */
import { parseArgs } from "node:util";
import { writeTinyGguf } from "../server/qrag/index.ts";

const { values } = parseArgs({ options: { out: { type: "string" }, seed: { type: "string" } } });
if (!values.out) {
  process.stderr.write("usage: npm run fixture:tiny-gguf -- --out FILE [--seed N]\n");
  process.exit(2);
}
const t0 = performance.now();
const bytes = writeTinyGguf(values.out, values.seed === undefined ? {} : { seed: Number(values.seed) });
process.stdout.write(`${values.out}: ${(bytes / 1e6).toFixed(2)} MB in ${(performance.now() - t0).toFixed(0)} ms\n`);
