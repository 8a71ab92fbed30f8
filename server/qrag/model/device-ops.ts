/**
 * Building blocks of the device path (device.ts `onDevice()`): plain tfjs ops with tfjs autograd,
 * no host reads, few kernels. Their CPU twins in ops.ts / attention.ts use JS kernels and
 * `dataSync`, which wasm likes and a GPU backend cannot afford (webgpu in Node has no synchronous
 * read at all).
 *
 * - `attentionDense`: softmax(QKᵀ/√d_head − 1e9·PAD_key)·V as batched matmuls over [B·H, T, d_head]
 *   (on webgpu as fused programs, model/webgpu/attention.ts; these ops are their reference).
 * - `gatherRows`, `segmentMeanDevice` live in device-gather.ts (ops.ts uses them too).
 * - `rotateDevice`: rotary rotation with cos/sin tables kept on the device (only positions go up).
 */
import * as tf from "@tensorflow/tfjs";
import { dropout } from "./ops.ts";
import { defaultRotary } from "./rotary.ts";
import type { BatchedArgs } from "./attention-args.ts";
import { onDevice } from "../backend/device.ts";
import { attentionFused, attentionFusedPacked } from "./webgpu/attention.ts";

/** The host path's arguments (attention.ts), so both paths take one call shape. */
type DenseArgs = BatchedArgs;

/**
 * Multi-head attention over a dense [B·T, d] batch (heads contiguous along the columns), all
 * sequences and heads in one batched product each way: 2 matmuls, 1 softmax, 4 layout kernels.
 */
export function attentionDense(q: tf.Tensor2D, k: tf.Tensor2D, v: tf.Tensor2D, a: DenseArgs): tf.Tensor2D {
  const B = a.batch, T = a.len, H = a.heads, N = B * T;
  const d = q.shape[1];
  if (q.shape[0] !== N) throw new Error(`attentionDense: input [${q.shape}] != [${N}, ${d}]`);
  if (d % H !== 0) throw new Error(`attentionDense: width ${d} not divisible by ${H} heads`);
  // on webgpu: one fused program forward, two backward (model/webgpu/attention.ts); the ops below
  // are its reference (and the path of tfjs's own dropout, without an Rng)
  if (onDevice() && (a.rng || !(a.training && a.dropout > 0))) return attentionFused(q, k, v, a);
  const dh = d / H;
  const split = (t: tf.Tensor2D): tf.Tensor3D => tf.reshape(tf.transpose(tf.reshape(t, [B, T, H, dh]), [0, 2, 1, 3]), [B * H, T, dh]);
  const qh = split(tf.mul(q, 1 / Math.sqrt(dh)) as tf.Tensor2D);
  const scores = tf.reshape(tf.matMul(qh, split(k), false, true), [B, H, T, T]);
  const bias = keyBias(a.mask, B, T);
  const att = dropout(tf.softmax(tf.add(scores, bias)), a.dropout, a.training, a.rng);
  const ctx = tf.matMul(tf.reshape(att, [B * H, T, T]) as tf.Tensor3D, split(v));
  return tf.reshape(tf.transpose(tf.reshape(ctx, [B, H, T, dh]), [0, 2, 1, 3]), [N, d]);
}

/**
 * Attention on the fused QKV projection's output qkv [B·T, 3d] (q | k | v along the columns): on
 * webgpu one fused program each way reading the columns in place, else attentionDense on slices.
 */
export function attentionQkvDevice(qkv: tf.Tensor2D, a: DenseArgs): tf.Tensor2D {
  if (onDevice() && (a.rng || !(a.training && a.dropout > 0))) return attentionFusedPacked(qkv, a);
  const [N, d3] = qkv.shape;
  const d = d3 / 3;
  const col = (i: number) => tf.slice(qkv, [0, i * d], [N, d]) as tf.Tensor2D;
  return attentionDense(col(0), col(1), col(2), a);
}

/** [B, 1, 1, T]: 0 at tokens, −1e9 at PAD keys (built on the host: the mask is host data anyway). */
function keyBias(mask: Float32Array, B: number, T: number): tf.Tensor4D {
  const b = new Float32Array(B * T);
  for (let i = 0; i < b.length; i++) b[i] = mask[i] > 0 ? 0 : -1e9;
  return tf.tensor4d(b, [B, 1, 1, T]);
}

/** The masked mean's weights per (row, position): mul / (the row's non-PAD count) at its non-PAD positions, else 0. */
export function maskedMeanWeights(mask: Float32Array, B: number, T: number, mul: number): Float32Array {
  const w = new Float32Array(B * T);
  for (let b = 0; b < B; b++) {
    let n = 0;
    for (let t = 0; t < T; t++) n += mask[b * T + t] > 0 ? 1 : 0;
    const s = n > 0 ? mul / n : 0;
    for (let t = 0; t < T; t++) w[b * T + t] = mask[b * T + t] > 0 ? s : 0;
  }
  return w;
}

/** Masked mean over T of x [B·T, d] with a [B·T] 0/1 mask, times `mul` → [B, d] (0 for empty rows). */
export function maskedMeanDevice(x: tf.Tensor2D, mask: Float32Array, B: number, T: number, mul: number): tf.Tensor2D {
  const d = x.shape[1];
  const xw = tf.mul(tf.reshape(x, [B, T, d]), tf.tensor3d(maskedMeanWeights(mask, B, T, mul), [B, T, 1]));
  return tf.sum(xw, 1) as tf.Tensor2D;
}

/** Device-resident [maxPositions, D] cos/sin tables of the default rotary, per width D. */
const tables = new Map<string, { c: tf.Tensor2D; s: tf.Tensor2D; sign: tf.Tensor3D }>();

function deviceTables(D: number): { c: tf.Tensor2D; s: tf.Tensor2D; sign: tf.Tensor3D } {
  const key = `${tf.getBackend()}:${D}`;
  let t = tables.get(key);
  if (!t || t.c.isDisposed) {
    const r = defaultRotary(D);
    const { c, s } = r.tables();
    t = {
      c: tf.keep(tf.tensor2d(c, [r.maxPositions, D])),
      s: tf.keep(tf.tensor2d(s, [r.maxPositions, D])),
      sign: tf.keep(tf.tensor3d([-1, 1], [1, 1, 2])),
    };
    tables.set(key, t);
  }
  return t;
}

/**
 * The default rotary's device tables of width D and the table row of each position (null when
 * rotary is off or there are no positions).
 */
export function rotaryRows(D: number, positions: Int32Array | null): { rows: Int32Array; c: tf.Tensor2D; s: tf.Tensor2D; sign: tf.Tensor3D } | null {
  const r = defaultRotary(D);
  if (!r.enabled || positions === null) return null;
  const rows = new Int32Array(positions.length);
  for (let i = 0; i < rows.length; i++) rows[i] = r.row(positions[i]);
  return { rows, ...deviceTables(D) };
}

/**
 * The default rotary rotation of x [n, D] by `positions` (rotary.ts rotateTf, same values), with
 * the tables on the device: one int32 upload and two gathers instead of two [n, D] uploads.
 */
export function rotateDevice(x: tf.Tensor2D, positions: Int32Array | null): tf.Tensor2D {
  const [n, D] = x.shape;
  const t = rotaryRows(D, positions);
  if (!t) return x;
  if (t.rows.length !== n) throw new Error(`rotateDevice: ${t.rows.length} positions for ${n} rows`);
  const idx = tf.tensor1d(t.rows, "int32");
  const swapped = tf.reshape(tf.mul(tf.reverse(tf.reshape(x, [n, D / 2, 2]), 2), t.sign), [n, D]);
  return tf.add(tf.mul(x, tf.gather(t.c, idx)), tf.mul(swapped, tf.gather(t.s, idx))) as tf.Tensor2D;
}
