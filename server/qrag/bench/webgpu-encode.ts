/**
 * Bench part `encode-hf`: eval-mode encoding throughput of the hf encoder (model/hf) on the
 * active backend, with reads by `await data()` (so it runs on webgpu, where the engine's own
 * embedding path cannot yet). Random BERT weights are written to a temporary folder at two sizes:
 * the reference workload's stand-in (2 layers, D 128, FFN 512) and BERT-base (contriever: 12
 * layers, D 768, FFN 3072). Chunks are 32 tokens (the workload's padded length), batch 1024,
 * masked mean pooling on the device, the [batch, D] embeddings read back.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as tf from "@tensorflow/tfjs";
import { HfBertEncoder } from "../model/hf/encoder.ts";
import type { EncoderConfig } from "../model/encoder.ts";
import { Rng } from "../util/rng.ts";
import { writeRandomBert } from "../model/hf/random-bert.ts";

export interface EncodeSize {
  name: string;
  hidden: number;
  layers: number;
  heads: number;
  intermediate: number;
  chunks: number;
}
export const ENCODE_SIZES: EncodeSize[] = [
  { name: "stand-in (2L, D 128, FFN 512)", hidden: 128, layers: 2, heads: 4, intermediate: 512, chunks: 40_960 },
  { name: "BERT-base (12L, D 768, FFN 3072)", hidden: 768, layers: 12, heads: 12, intermediate: 3072, chunks: 8_192 },
];
const LEN = 32;
const VOCAB = 1000;
/** [PAD] [UNK] [CLS] [SEP] [MASK], then w0, w1, …: ids stand for word pieces here. */
const placeholderWords = (n: number) => ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ...Array.from({ length: n - 5 }, (_, i) => `w${i}`)];

async function encodeOnce(enc: HfBertEncoder, ids: Int32Array, mask: Float32Array, rows: number): Promise<Float32Array> {
  const h = enc.lastHiddenState({ ids, mask, batch: rows, len: LEN });
  const pooled = tf.tidy(() => {
    const m = tf.tensor3d(mask, [rows, LEN, 1]);
    return tf.div(tf.sum(tf.mul(h, m), 1), tf.sum(m, 1));
  });
  const v = (await pooled.data()) as Float32Array;
  tf.dispose([h, pooled]);
  return v;
}

export async function benchEncodeHf(log: (m: string) => void, sizes = ENCODE_SIZES, BATCH = 1024): Promise<Record<string, unknown>[]> {
  const rng = new Rng(3);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-encode-hf-"));
  const out: Record<string, unknown>[] = [];
  try {
    for (const s of sizes) {
      const rel = `bert-${s.hidden}x${s.layers}`;
      writeRandomBert(path.join(root, rel), s, { words: placeholderWords(VOCAB), positions: 64, seed: rng.int(2 ** 30) });
      const cfg: EncoderConfig = { type: "hf", path: rel, dim: s.hidden, vocab_size: VOCAB, hidden: s.intermediate, layers: s.layers, heads: s.heads, max_len: 64, dropout: 0.1, init_std: 0.02 };
      const enc = HfBertEncoder.load(cfg, rng.fork(rel), root);
      // [CLS] 22–30 word pieces [SEP], then padding to 32 (the workload's chunks)
      const ids = new Int32Array(BATCH * LEN);
      const mask = new Float32Array(BATCH * LEN);
      for (let r = 0; r < BATCH; r++) {
        const n = 24 + rng.int(9);
        for (let t = 0; t < n; t++) {
          ids[r * LEN + t] = t === 0 ? 2 : t === n - 1 ? 3 : 5 + rng.int(VOCAB - 5);
          mask[r * LEN + t] = 1;
        }
      }
      try {
        const first = await encodeOnce(enc, ids, mask, BATCH); // warm-up: shaders, buffer pool
        if (!first.every(Number.isFinite)) throw new Error("non-finite embeddings");
        const batches = Math.ceil(s.chunks / BATCH);
        const t0 = performance.now();
        for (let b = 0; b < batches; b++) await encodeOnce(enc, ids, mask, BATCH);
        const secs = (performance.now() - t0) / 1000;
        const r = { model: s.name, backend: tf.getBackend(), chunks: batches * BATCH, tokensPerChunk: LEN, batch: BATCH, seconds: secs, chunksPerS: (batches * BATCH) / secs };
        log(`encode-hf: ${s.name}: ${Math.round(r.chunksPerS)} chunks/s`);
        out.push(r);
      } catch (e) {
        out.push({ model: s.name, error: (e as Error).message.split("\n")[0].slice(0, 300) });
      } finally {
        enc.dispose();
      }
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
  return out;
}
