/** The encoder and batches the recorded-encoder and recorded-update cases compare on. */
import type { EncoderConfig, TokenBatch } from "../server/qrag/model/encoder.ts";
import { Rng } from "../server/qrag/util/rng.ts";

export const CONFIG: EncoderConfig = { type: "transformer", dim: 32, vocab_size: 300, hidden: 64, layers: 2, heads: 4, max_len: 256, dropout: 0.1, init_std: 0.3 };

/** B rows of length T, row b holding 1 + (b·37 + 5) mod T real tokens (the rest PAD, id 0); ids from 1 … `vocab`−1. */
export function batchOf(B: number, T: number, seed: number, vocab = CONFIG.vocab_size): TokenBatch {
  const rng = new Rng(seed);
  const ids = new Int32Array(B * T);
  const mask = new Float32Array(B * T);
  for (let b = 0; b < B; b++) {
    const n = 1 + ((b * 37 + 5) % T);
    for (let t = 0; t < n; t++) {
      ids[b * T + t] = 1 + Math.floor(rng.next() * (vocab - 1));
      mask[b * T + t] = 1;
    }
  }
  return { ids, mask, batch: B, len: T };
}
