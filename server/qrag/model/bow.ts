/**
 * `bow`: the fast CPU encoder (docs/method.md §11: why, and what it learns).
 *
 *   e = masked mean of hashed-word embeddings        (table [vocab, D], init N(0, init_std))
 *   h = e + W2·drop(gelu(W1·e + b1)) + b2             (D → hidden → D, exact erf GELU)
 *   y = LayerNorm(h) · 0.1·√(128/max(D, 128))        (no projection, no normalisation: docs/method.md §2.1)
 *
 * Tokens are words only (no CLS/SEP), plus with `word_bigrams` the hashed ordered pairs of
 * consecutive content words (tokenizer.ts: word order inside a sentence, e.g. qa4's "A is north of
 * B" vs "B is north of A"); actions are a chunk's words truncated to `maxTokens`;
 * states are the words of each piece truncated separately, concatenated. Rows are right-padded to
 * the next power of two (capped at `max_len`). Dropout (rate `dropout`) acts on the hidden layer
 * when training. MLP weights start like torch.nn.Linear (U(±1/√fan_in)), biases at 0, LN (1, 0).
 */
import * as tf from "@tensorflow/tfjs";
import { POOL_SCALE, type EncoderConfig, type TokenBatch } from "./encoder.ts";
import { BaseEncoder, checkBatch, padRows, type ParamSpec, type WeightSource } from "./base.ts";
import { bagIndex, dropout, embedBag, gelu, layerNorm, linear, mm } from "./ops.ts";
import { textIdsFast, textIdsWithBigrams } from "./tokenizer.ts";
import { Rng } from "../util/rng.ts";

function bowSpecs(c: EncoderConfig): ParamSpec[] {
  const D = c.dim, H = c.hidden;
  return [
    { name: "embed", shape: [c.vocab_size, D], init: { kind: "normal", std: c.init_std } },
    { name: "mlp.w1", shape: [D, H], init: { kind: "uniform", bound: 1 / Math.sqrt(D) } },
    { name: "mlp.b1", shape: [H], init: { kind: "zeros" } },
    { name: "mlp.w2", shape: [H, D], init: { kind: "uniform", bound: 1 / Math.sqrt(H) } },
    { name: "mlp.b2", shape: [D], init: { kind: "zeros" } },
    { name: "ln.gamma", shape: [D], init: { kind: "ones" } },
    { name: "ln.beta", shape: [D], init: { kind: "zeros" } },
  ];
}

/**
 * The reference divides pooled outputs by 10; LayerNorm's output has norm ≈ √D, so Q = ⟨s, a⟩ grows
 * with the width. Our recipe was tuned at D = 128 (÷10 exactly); wider encoders keep that output
 * norm, since at D = 512 plain ÷10 collapsed training (held-out NIAH coverage 0.86 → 0.15 within 50
 * updates at lr 1e-3 and at 2e-4) while this scale learned (1.00 at update 50). Narrower encoders
 * keep ÷10: the tiny test preset (D = 32) was tuned with it, and its loss stops falling without it.
 */
export function bowOutputScale(dim: number): number {
  return POOL_SCALE * Math.sqrt(128 / Math.max(dim, 128));
}

/** Rows per sub-batch of embedNoGrad (bounded memory for 400k-chunk calls). */
const NO_GRAD_ROWS = 4096;

export class BowEncoder extends BaseEncoder {
  constructor(config: EncoderConfig, source: Rng | WeightSource) {
    super(config, bowSpecs(config), source instanceof Rng ? { rng: source } : source);
    if (config.type !== "bow") throw new Error(`BowEncoder: config.type is "${config.type}"`);
  }

  private textIds(text: string, maxTokens: number): number[] {
    const V = this.config.vocab_size;
    return this.config.word_bigrams ? textIdsWithBigrams(text, V, maxTokens) : textIdsFast(text, V, maxTokens);
  }

  protected cloneFrom(trainable: boolean): BowEncoder {
    return new BowEncoder(this.config, { from: this, trainable });
  }

  packActions(texts: readonly string[], maxTokens: number): TokenBatch {
    return padRows(
      texts.map((t) => this.textIds(t, maxTokens)),
      this.config.max_len,
    );
  }

  packStates(states: readonly (readonly string[])[], maxTokensPerPiece: number): TokenBatch {
    const rows = states.map((pieces) => {
      const row: number[] = [];
      for (const p of pieces) {
        const ids = this.textIds(p, maxTokensPerPiece);
        for (let i = 0; i < ids.length; i++) row.push(ids[i]);
      }
      return row;
    });
    return padRows(rows, this.config.max_len);
  }

  /** The layers after pooling: e [B, D] → LN(e + MLP(e)) · bowOutputScale(D). */
  private head(e: tf.Tensor2D, training: boolean): tf.Tensor2D {
    const [, w1, b1, w2, b2, g, beta] = this.variables;
    let z = gelu(linear(e, w1 as tf.Variable<tf.Rank.R2>, b1 as tf.Variable<tf.Rank.R1>));
    z = dropout(z, this.config.dropout, training, this.dropoutRng);
    const h = tf.add(tf.add(e, mm(z, w2 as tf.Variable<tf.Rank.R2>)), b2) as tf.Tensor2D;
    return tf.mul(layerNorm(h, g as tf.Variable<tf.Rank.R1>, beta as tf.Variable<tf.Rank.R1>), bowOutputScale(this.dim));
  }

  forward(batch: TokenBatch, training: boolean): tf.Tensor2D {
    checkBatch(batch);
    const table = this.variables[0] as tf.Variable<tf.Rank.R2>;
    const e = embedBag(table, batch.ids, batch.mask, batch.batch, batch.len);
    return this.head(e, training);
  }

  /** No-grad path: one SparseSegmentSum bag per sub-batch, then the MLP head; no tape. */
  protected override embedRows(batch: TokenBatch): Float32Array {
    const D = this.dim, V = this.config.vocab_size, L = batch.len;
    const out = new Float32Array(batch.batch * D);
    const table = this.variables[0];
    for (let r0 = 0; r0 < batch.batch; r0 += NO_GRAD_ROWS) {
      const r1 = Math.min(batch.batch, r0 + NO_GRAD_ROWS);
      const n = r1 - r0;
      const bag = bagIndex(batch.ids.subarray(r0 * L, r1 * L), batch.mask.subarray(r0 * L, r1 * L), n, L, V);
      const y = tf.tidy(() => {
        const sums = tf.sparse.sparseSegmentSum(
          table,
          tf.tensor1d(bag.idx, "int32"),
          tf.tensor1d(bag.seg, "int32"),
        ) as tf.Tensor2D;
        const e = tf.mul(sums, tf.tensor2d(bag.scale, [n, 1])) as tf.Tensor2D;
        return this.head(e, false);
      });
      out.set(y.dataSync() as Float32Array, r0 * D);
      y.dispose();
    }
    return out;
  }
}
