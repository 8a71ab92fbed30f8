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

/** Tensor names and shapes of a BertModel checkpoint (no pooler). */
export function bertTensorShapes(s: Pick<EncodeSize, "hidden" | "layers" | "intermediate">, vocab: number, positions: number): [string, number[]][] {
  const H = s.hidden, I = s.intermediate;
  const out: [string, number[]][] = [
    ["embeddings.word_embeddings.weight", [vocab, H]],
    ["embeddings.position_embeddings.weight", [positions, H]],
    ["embeddings.token_type_embeddings.weight", [2, H]],
    ["embeddings.LayerNorm.weight", [H]],
    ["embeddings.LayerNorm.bias", [H]],
  ];
  for (let l = 0; l < s.layers; l++) {
    const p = `encoder.layer.${l}.`;
    for (const m of ["query", "key", "value"]) out.push([`${p}attention.self.${m}.weight`, [H, H]], [`${p}attention.self.${m}.bias`, [H]]);
    out.push(
      [`${p}attention.output.dense.weight`, [H, H]], [`${p}attention.output.dense.bias`, [H]],
      [`${p}attention.output.LayerNorm.weight`, [H]], [`${p}attention.output.LayerNorm.bias`, [H]],
      [`${p}intermediate.dense.weight`, [I, H]], [`${p}intermediate.dense.bias`, [I]],
      [`${p}output.dense.weight`, [H, I]], [`${p}output.dense.bias`, [H]],
      [`${p}output.LayerNorm.weight`, [H]], [`${p}output.LayerNorm.bias`, [H]],
    );
  }
  return out;
}

/** A BERT folder with random weights (N(0, 0.02); LayerNorm weight 1, biases 0) and a small vocabulary. */
function randomBertFolder(dir: string, s: EncodeSize, rng: Rng): void {
  fs.mkdirSync(dir, { recursive: true });
  const positions = 64;
  fs.writeFileSync(path.join(dir, "config.json"), JSON.stringify({
    model_type: "bert", architectures: ["BertModel"], hidden_size: s.hidden, num_hidden_layers: s.layers, num_attention_heads: s.heads,
    intermediate_size: s.intermediate, vocab_size: VOCAB, max_position_embeddings: positions, type_vocab_size: 2, hidden_act: "gelu",
    layer_norm_eps: 1e-12, hidden_dropout_prob: 0.1, attention_probs_dropout_prob: 0.1, initializer_range: 0.02, pad_token_id: 0,
  }));
  const words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ...Array.from({ length: VOCAB - 5 }, (_, i) => `w${i}`)];
  fs.writeFileSync(path.join(dir, "vocab.txt"), words.join("\n") + "\n");
  const shapes = bertTensorShapes(s, VOCAB, positions);
  const header: Record<string, unknown> = {};
  const blobs: Buffer[] = [];
  let off = 0;
  for (const [name, shape] of shapes) {
    const n = shape.reduce((a, b) => a * b, 1);
    const v = new Float32Array(n);
    if (name.endsWith("LayerNorm.weight")) v.fill(1);
    else if (!name.endsWith("bias")) for (let i = 0; i < n; i++) v[i] = (rng.next() * 2 - 1) * 0.0346; // uniform, sd 0.02
    header[name] = { dtype: "F32", shape, data_offsets: [off, off + 4 * n] };
    blobs.push(Buffer.from(v.buffer));
    off += 4 * n;
  }
  let hb = Buffer.from(JSON.stringify(header));
  hb = Buffer.concat([hb, Buffer.alloc((8 - (hb.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(hb.length));
  fs.writeFileSync(path.join(dir, "model.safetensors"), Buffer.concat([len, hb, ...blobs]));
}

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
      randomBertFolder(path.join(root, rel), s, rng);
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
