/**
 * Encode throughput of an `hf` encoder (a Hugging Face folder) next to the built-in transformer,
 * on the picked backend (~20 s):
 *   QRAG_WASM_THREADS=1 npx tsx server/qrag/bench/hf-encode.ts [folder] [backend]
 * default folder: test/fixtures/bert-tiny. Not a benchmark harness: one process, medians of a few
 * repetitions, the same chunk texts (18–22 words of the folder's vocabulary) for every encoder.
 */
import fs from "node:fs";
import path from "node:path";
import { pickBackend } from "../backend/pick.ts";
import { createEncoder, defaultEncoderConfig } from "../model/factory.ts";
import type { QEncoder } from "../model/base.ts";
import { Rng } from "../util/rng.ts";
import { time } from "./quick-timing.ts";


async function main(): Promise<void> {
  const folder = path.resolve(process.argv[2] ?? "test/fixtures/bert-tiny");
  const info = await pickBackend(process.argv[3] ?? "wasm");
  console.log(`backend: ${info.backend} — ${info.device}`);
  const rng = new Rng(1);
  const words = fs
    .readFileSync(path.join(folder, "vocab.txt"), "utf8")
    .split("\n")
    .filter((w) => /^[a-z]+$/.test(w));
  const sent = () => Array.from({ length: 18 + rng.int(5) }, () => rng.choice(words)).join(" ") + ".";
  const N = 4000;
  const chunks = Array.from({ length: N }, sent);

  const encoders: [string, QEncoder][] = [
    [`hf ${path.basename(folder)}`, createEncoder({ ...defaultEncoderConfig("transformer"), type: "hf", path: path.basename(folder) }, rng.fork("hf"), { dataRoot: path.dirname(folder) })],
    ["transformer (d 128, 2 layers, FFN 512)", createEncoder(defaultEncoderConfig("transformer"), rng.fork("tr"))],
  ];
  for (const [name, enc] of encoders) {
    let packed = enc.packActions(chunks, 32);
    const tPack = time(3, () => {
      packed = enc.packActions(chunks, 32);
    });
    const tEmb = time(3, () => {
      enc.embedNoGrad(packed);
    });
    const c = enc.config;
    console.log(
      `${name} [d ${c.dim}, ${c.layers} layers, ${enc.paramCount} weights], ${N} chunks of 18–22 words, rows of ${packed.len}: ` +
        `pack ${tPack.toFixed(0)} ms, embed ${tEmb.toFixed(0)} ms → ${Math.round(N / (tEmb / 1000))} chunks/s ` +
        `(${Math.round(N / ((tEmb + tPack) / 1000))} incl. tokenising)`,
    );
    enc.dispose();
  }
}

await main();
