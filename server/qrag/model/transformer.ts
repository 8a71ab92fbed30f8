/**
 * `transformer`: the small pre-LN transformer of docs/workload.md §1.2 (stand-in for BERT).
 *
 *   x = drop(tok[ids] + pos[0..T))
 *   per layer: x += drop(proj(attn(LN1(x))));  x += drop(fc2(gelu(fc1(LN2(x)))))
 *   attn: fused QKV [d, 3d]; softmax(QKᵀ/√d_head + keymask) with −1e9 at PAD keys; dropout on the
 *         probabilities
 *   y = masked mean over non-PAD tokens of LN_f(x), ÷ 10
 *
 * GELU is x·Φ(x) with tfjs's erf (Abramowitz–Stegun approximation, |error| ≤ 1.5e-7). Init:
 * N(0, init_std) for all weights and embeddings, zero biases, LayerNorm (1, 0). With vocab 8192,
 * d 128, 2 layers, FFN 512, max_len 256 that is 1,478,144 weights.
 *
 * Packing (docs/method.md §1.2): states `[CLS] q [SEP] c1 [SEP] c2 [SEP]`, each piece cut to
 * `maxTokensPerPiece` words; actions `[CLS] w.. [SEP]`; right-padded to the next power of two of
 * the longest row, capped at `max_len` (longer rows are cut at max_len).
 *
 * Implementation (same function, organised for wasm):
 * - Real tokens are packed one after another ([Σ real tokens, d] instead of [B·T, d]): PAD rows
 *   never influence real rows (PAD keys are masked, pooling skips them), so they are not computed.
 *   On the workload state batch (rows of 14–139 tokens padded to 256) that removes most of the work.
 * - Attention is `attentionPerHead`: each sequence attends over its own tokens only, which is
 *   exactly the −1e9 PAD-key mask; per-(sequence, head) 2-D matmuls instead of wasm's slow batched
 *   matmul (see attention.ts). `attentionBatched` (dense, −1e9 mask) is the tested reference.
 * - Every weight matmul goes through `mm` (explicit-transpose gradient). The fused QKV weight
 *   [d, 3d] is one variable; its three [d, d] column blocks are sliced (tiny) rather than the
 *   [rows, 3d] activation, because wasm's Slice copies its whole input for every slice. The device
 *   path does the opposite: one [rows, 3d] projection that its fused attention reads in place.
 * - Token and position lookups use `embedScatter` (SparseSegmentSum gather, JS scatter-add grad);
 *   pooling is `segmentMean`.
 */
import * as tf from "@tensorflow/tfjs";
import { POOL_SCALE, type DeviceStates, type EncoderConfig, type TapedForward, type TokenBatch } from "./encoder.ts";
import { BaseEncoder, checkBatch, type ParamSpec, type WeightSource } from "./base.ts";
import { dropout, embedScatter, gelu, layerNorm, linear, residualDropout, segmentMean } from "./ops.ts";
import { attentionPerHead, packedLayout, type PerHeadArgs } from "./attention.ts";
import { attentionQkvDevice, maskedMeanDevice } from "./device-ops.ts";
import { gatherRows } from "./device-gather.ts";
import { forwardRows, noGradPlan, recordedEncoderForward, recordedRowsOfTokens } from "./webgpu/recorded-encoder.ts";
import { recordedEncoderTrain, recordedTaped } from "./webgpu/recorded-train.ts";
import { onDevice } from "../backend/device.ts";
import { CLS, SEP, writeTextIds } from "./tokenizer.ts";
import { RowPacker } from "./row-packer.ts";
import { Rng } from "../util/rng.ts";

/** Per-layer variables, in order. */
const LAYER_PARAMS = ["ln1.gamma", "ln1.beta", "qkv.w", "qkv.b", "proj.w", "proj.b", "ln2.gamma", "ln2.beta", "fc1.w", "fc1.b", "fc2.w", "fc2.b"] as const;

function transformerSpecs(c: EncoderConfig): ParamSpec[] {
  const d = c.dim, F = c.hidden, std = c.init_std;
  const normal = { kind: "normal", std } as const;
  const zeros = { kind: "zeros" } as const;
  const ones = { kind: "ones" } as const;
  const specs: ParamSpec[] = [
    { name: "tok", shape: [c.vocab_size, d], init: normal },
    { name: "pos", shape: [c.max_len, d], init: normal },
  ];
  for (let l = 0; l < c.layers; l++) {
    const shapes: Record<(typeof LAYER_PARAMS)[number], [number[], ParamSpec["init"]]> = {
      "ln1.gamma": [[d], ones],
      "ln1.beta": [[d], zeros],
      "qkv.w": [[d, 3 * d], normal],
      "qkv.b": [[3 * d], zeros],
      "proj.w": [[d, d], normal],
      "proj.b": [[d], zeros],
      "ln2.gamma": [[d], ones],
      "ln2.beta": [[d], zeros],
      "fc1.w": [[d, F], normal],
      "fc1.b": [[F], zeros],
      "fc2.w": [[F, d], normal],
      "fc2.b": [[d], zeros],
    };
    for (const p of LAYER_PARAMS) specs.push({ name: `layer${l}.${p}`, shape: shapes[p][0], init: shapes[p][1] });
  }
  specs.push({ name: "lnf.gamma", shape: [d], init: ones }, { name: "lnf.beta", shape: [d], init: zeros });
  return specs;
}

type V1 = tf.Variable<tf.Rank.R1>;
type V2 = tf.Variable<tf.Rank.R2>;

/** q, k, v of the normalised input by the [d, 3d] QKV weight's column blocks. */
function qkvSlices(hN: tf.Tensor2D, wqkv: tf.Tensor2D, bqkv: tf.Tensor1D): [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D] {
  const d = hN.shape[1];
  const proj = (i: number): tf.Tensor2D => linear(hN, tf.slice(wqkv, [0, i * d], [d, d]), tf.slice(bqkv, [i * d], [d]));
  return [proj(0), proj(1), proj(2)];
}

export class TransformerEncoder extends BaseEncoder {
  constructor(config: EncoderConfig, source: Rng | WeightSource) {
    super(config, transformerSpecs(config), source instanceof Rng ? { rng: source } : source);
    if (config.type !== "transformer") throw new Error(`TransformerEncoder: config.type is "${config.type}"`);
  }

  protected cloneFrom(trainable: boolean): TransformerEncoder {
    return new TransformerEncoder(this.config, { from: this, trainable });
  }

  packActions(texts: readonly string[], maxTokens: number): TokenBatch {
    const V = this.config.vocab_size;
    const p = new RowPacker(texts.length, this.config.max_len, Math.max(0, maxTokens) + 2);
    for (const t of texts) {
      p.row();
      p.token(CLS);
      p.text(t, V, maxTokens);
      p.token(SEP);
    }
    return p.finish();
  }

  packStates(states: readonly (readonly string[])[], maxTokensPerPiece: number): TokenBatch {
    const V = this.config.vocab_size;
    let bound = 2;
    for (const pieces of states) bound = Math.max(bound, 1 + pieces.length * (Math.max(0, maxTokensPerPiece) + 1));
    const p = new RowPacker(states.length, this.config.max_len, bound);
    for (const pieces of states) {
      p.row();
      p.token(CLS);
      for (const piece of pieces) {
        p.text(piece, V, maxTokensPerPiece);
        p.token(SEP);
      }
      if (pieces.length === 0) p.token(SEP);
    }
    return p.finish();
  }

  protected override planRows(len: number): number {
    return forwardRows(this.config, len);
  }

  /** Trims each sub-batch of embedNoGrad to its own padded length. */
  protected override noGradRows(len: number): number {
    return Math.max(1, Math.floor(8192 / Math.max(1, len)));
  }

  forward(batch: TokenBatch, training: boolean): tf.Tensor2D {
    checkBatch(batch);
    const c = this.config;
    const B = batch.batch, T = batch.len, d = c.dim;
    if (T > c.max_len) throw new Error(`transformer: sequence length ${T} > max_len ${c.max_len}`);
    if (onDevice()) return this.forwardDense(batch, training);
    const p = c.dropout;
    const rng = this.dropoutRng;
    const vars = this.variables;

    // Pack the real tokens of every row one after another: PAD rows never influence real rows
    // (PAD keys are masked out and pooling ignores them), so they are not computed at all.
    const lengths = new Int32Array(B);
    let nnz = 0;
    for (let i = 0; i < B * T; i++) if (batch.mask[i] > 0) nnz++;
    if (nnz === 0) return tf.zeros([B, d]);
    const ids = new Int32Array(nnz);
    const posIds = new Int32Array(nnz);
    let r = 0;
    for (let b = 0; b < B; b++) {
      for (let t = 0; t < T; t++) {
        if (batch.mask[b * T + t] > 0) {
          ids[r] = batch.ids[b * T + t];
          posIds[r] = t;
          r++;
          lengths[b]++;
        }
      }
    }
    const layout = packedLayout(lengths);
    const att: PerHeadArgs = { heads: c.heads, layout, dropout: p, training, rng };
    let x = tf.add(embedScatter(vars[0] as V2, ids), embedScatter(vars[1] as V2, posIds)) as tf.Tensor2D; // [nnz, d]
    // The fused [d, 3d] QKV weight is sliced (small) instead of its [rows, 3d] output: wasm's
    // Slice copies its whole input for every slice.
    x = this.layers(x, (hN, wqkv, bqkv) => attentionPerHead(...qkvSlices(hN, wqkv, bqkv), att), training);
    return segmentMean(x, lengths, POOL_SCALE); // masked mean pooling, ÷10
  }

  /** packStates's framing on the device (webgpu only: its recorded forward reads the device-written rows). */
  override deviceStates(): DeviceStates | null {
    if (!onDevice()) return null;
    const c = this.config;
    return {
      cls: CLS,
      sep: SEP,
      maxLen: c.max_len,
      pieceIds: (text, maxTokens, out, at) => writeTextIds(text, c.vocab_size, maxTokens, out, at),
      fits: (B, T, training) => noGradPlan(c, B, T, training) !== null,
      rowsOfTokens: (tokens, B, T, training) => {
        const plan = noGradPlan(c, B, T, training);
        return plan && { rows: recordedRowsOfTokens(plan, this.variables, tokens, this.dropoutRng), T, half: plan.half };
      },
    };
  }

  override tapedForward(batch: TokenBatch, training: boolean): TapedForward | null {
    checkBatch(batch);
    if (!onDevice() || batch.len > this.config.max_len) return null;
    return recordedTaped(this.variables, this.config, batch.ids, batch.mask, batch.batch, batch.len, training, this.dropoutRng);
  }

  /**
   * The device path: the dense [B·T, d] batch, PAD rows included (a GPU computes them for free
   * and keeps every kernel batched), attention over all sequences and heads at once, PAD keys
   * masked with −1e9, then the masked mean. Same function as the packed path. On webgpu it is
   * recorded as our own programs: one submit without a gradient (webgpu/recorded-encoder.ts), one
   * op with a recorded backward under a tape (webgpu/recorded-train.ts).
   */
  private forwardDense(batch: TokenBatch, training: boolean): tf.Tensor2D {
    const c = this.config;
    const B = batch.batch, T = batch.len, d = c.dim;
    const vars = this.variables;
    // recorded as our own programs (same function, same masks): without a gradient one command
    // buffer; with one (a trainable variable under a tape) one tfjs op whose backward is recorded too
    const taped = (tf.engine() as unknown as { isTapeOn(): boolean }).isTapeOn() && vars.some((v) => v.trainable);
    const y = (taped ? recordedEncoderTrain : recordedEncoderForward)(vars, c, batch.ids, batch.mask, B, T, training, this.dropoutRng);
    if (y) return y;
    const tok = tf.reshape(gatherRows(vars[0] as V2, batch.ids), [B, T, d]);
    const pos = tf.reshape(tf.slice(vars[1] as V2, [0, 0], [T, d]), [1, T, d]);
    let x = tf.reshape(tf.add(tok, pos), [B * T, d]) as tf.Tensor2D;
    const args = { batch: B, len: T, heads: c.heads, mask: batch.mask, dropout: c.dropout, training, rng: this.dropoutRng };
    x = this.layers(x, (hN, wqkv, bqkv) => attentionQkvDevice(linear(hN, wqkv, bqkv), args), training);
    return maskedMeanDevice(x, batch.mask, B, T, POOL_SCALE);
  }

  /**
   * Embedding dropout, the pre-LN layers with attention `attend` (of the normalised input and the
   * fused QKV weight and bias), and the final LayerNorm.
   */
  private layers(x0: tf.Tensor2D, attend: (hN: tf.Tensor2D, wqkv: tf.Tensor2D, bqkv: tf.Tensor1D) => tf.Tensor2D, training: boolean): tf.Tensor2D {
    const c = this.config;
    const p = c.dropout;
    const rng = this.dropoutRng;
    const vars = this.variables;
    let x = dropout(x0, p, training, rng);
    for (let l = 0; l < c.layers; l++) {
      const o = 2 + l * LAYER_PARAMS.length;
      const [ln1g, ln1b, wqkv, bqkv, wo, bo, ln2g, ln2b, w1, b1, w2, b2] = vars.slice(o, o + LAYER_PARAMS.length);

      const hN = layerNorm(x, ln1g as V1, ln1b as V1);
      const merged = attend(hN, wqkv as V2, bqkv as V1); // [rows, d]
      const attnOut = linear(merged, wo as V2, bo as V1);
      x = residualDropout(x, attnOut, { rate: p, training, rng });

      const h2 = layerNorm(x, ln2g as V1, ln2b as V1);
      const f = gelu(linear(h2, w1 as V2, b1 as V1));
      const ffOut = linear(f, w2 as V2, b2 as V1);
      x = residualDropout(x, ffOut, { rate: p, training, rng });
    }
    const nf = vars.length - 2;
    return layerNorm(x, vars[nf] as V1, vars[nf + 1] as V1);
  }
}
