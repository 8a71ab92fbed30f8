/**
 * Differentiable building blocks tuned for the tfjs wasm backend (SIMD; XNNPACK threads matMul only).
 *
 * - `mm`: matMul whose gradient uses explicit `tf.transpose` + plain matMul. tfjs's stock matMul
 *   gradient calls matMul with transpose flags, which is 10–20× slower on wasm (the device path
 *   keeps the stock gradient: a transpose there is one more dispatch). `linear`: x·W + b.
 * - `embedScatter` / `embedBag`: embedding lookups whose table gradient is a plain-JS scatter-add.
 *   The stock `tf.gather` gradient needs UnsortedSegmentSum, which wasm does not register (and which
 *   is very slow on the cpu backend).
 * - `gelu`: tfjs-core has no gelu; exact (erf) and tanh forms with a fused analytic gradient.
 * - `layerNorm`: last-axis LayerNorm with a fused analytic gradient (fewer kernels than autodiff).
 *   On the device path (`onDevice()`), erf `gelu` and `layerNorm` run as fused WebGPU programs
 *   instead (model/webgpu/gelu-layernorm.ts, same functions).
 * - `dropout`: identity unless training; masks drawn from a seeded `Rng` so runs are reproducible.
 *
 * Avoid in model code: `tf.where(tf.greater(..))` (no gradient for Greater), rank-5 slices (slow on
 * wasm), `tf.pow(x, 3)` (use x*x*x). Measurements behind these choices: docs/offline-stack.md §2.
 */
import * as tf from "@tensorflow/tfjs";
import type { Rng } from "../util/rng.ts";
import { dropoutKeepScale, dropThreshold, maskBits, maskKey } from "../util/mask-hash.ts";
import { dropoutMaskDevice } from "./webgpu/dropout.ts";
import { isAligned, matmulTiled, tileFor } from "./webgpu/matmul.ts";
import { onDevice } from "../backend/device.ts";
import { gatherRows, segmentMeanDevice } from "./device-gather.ts";
import { geluDevice, layerNormDevice } from "./webgpu/gelu-layernorm.ts";
import { residualDropoutDevice, residualLayerNormDevice, type MaskParams } from "./webgpu/residual-layernorm.ts";

/** tfjs does not export CustomGradientFunc; take it from customGrad's parameter type. */
type CustomGradFn = Parameters<typeof tf.customGrad>[0];

function swapLast(t: tf.Tensor): tf.Tensor {
  return t.rank === 3 ? tf.transpose(t, [0, 2, 1]) : tf.transpose(t);
}

const mmGrad = tf.customGrad(((x: tf.Tensor, y: tf.Tensor, save: tf.GradSaveFunc) => {
  save([x, y]);
  return {
    value: tf.matMul(x as tf.Tensor3D, y as tf.Tensor3D),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [xs, ys] = saved;
      const dx = tf.matMul(dy as tf.Tensor3D, swapLast(ys) as tf.Tensor3D);
      // dY = Xᵀ·dY_out. wasm's fast path packs the right operand on every call; for a 2-D weight
      // gradient with a wide dY_out ([m, n], n > k) packing X [m, k] instead, via (dY_outᵀ·X)ᵀ, is cheaper.
      const dyw =
        xs.rank === 2 && (dy.shape[1] as number) > (xs.shape[1] as number)
          ? tf.transpose(tf.matMul(tf.transpose(dy) as tf.Tensor2D, xs as tf.Tensor2D))
          : tf.matMul(swapLast(xs) as tf.Tensor3D, dy as tf.Tensor3D);
      return [dx, dyw];
    },
  };
}) as CustomGradFn);

/**
 * Matrix product with an explicit-transpose gradient. Shapes: [m,k]·[k,n] → [m,n];
 * [b,m,k]·[b,k,n] → [b,m,n]; [b,m,k]·[k,n] → [b,m,n] (flattened to one 2-D product).
 */
export function mm(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D;
export function mm(a: tf.Tensor3D, b: tf.Tensor3D | tf.Tensor2D): tf.Tensor3D;
export function mm(a: tf.Tensor, b: tf.Tensor): tf.Tensor;
export function mm(a: tf.Tensor, b: tf.Tensor): tf.Tensor {
  // the device path keeps tfjs's own gradient: matMuls with transpose flags, no transpose kernels
  const product = onDevice() ? (x: tf.Tensor, y: tf.Tensor) => tf.matMul(x as tf.Tensor3D, y as tf.Tensor3D) : mmGrad;
  if (a.rank === 3 && b.rank === 2) {
    const [bs, m, k] = a.shape;
    const out = product(tf.reshape(a, [bs * m, k]), b);
    return tf.reshape(out, [bs, m, b.shape[1] as number]);
  }
  if (a.rank !== b.rank || (a.rank !== 2 && a.rank !== 3)) {
    throw new Error(`mm: unsupported ranks ${a.rank} and ${b.rank} (need 2·2, 3·3 or 3·2)`);
  }
  return product(a, b);
}

/**
 * x·W + b; on the device path one fused matMul-and-bias kernel: our tiled program when no
 * gradient is being recorded and the sizes fit its tile (encoding for rollouts and evaluation),
 * else tf.fused.matMul (its own gradient).
 */
export function linear(x: tf.Tensor2D, w: tf.Tensor2D, b: tf.Tensor1D): tf.Tensor2D {
  if (onDevice()) {
    const tapeOn = (tf.engine() as unknown as { isTapeOn(): boolean }).isTapeOn();
    const tile = tileFor(x.shape[0], w.shape[1]);
    if (!tapeOn && isAligned(tile, x.shape[0], w.shape[1], x.shape[1])) return matmulTiled(x, w, tile, b) as tf.Tensor2D;
    return tf.fused.matMul({ a: x, b: w, bias: b }) as tf.Tensor2D;
  }
  return tf.add(mm(x, w), b) as tf.Tensor2D;
}

function idsToArray(ids: tf.Tensor1D | Int32Array): Int32Array {
  // Copy: the ids may be disposed or overwritten before backprop runs.
  return ids instanceof Int32Array ? ids.slice() : Int32Array.from(ids.dataSync());
}

/**
 * Rows `table[ids[i]]` → [n, D], with a plain-JS scatter-add gradient for the table.
 * `flatIds` may be a tensor (int32) or an Int32Array.
 */
export function embedScatter(table: tf.Tensor2D, flatIds: tf.Tensor1D | Int32Array): tf.Tensor2D {
  const [V, D] = table.shape;
  const idv = idsToArray(flatIds);
  for (let i = 0; i < idv.length; i++) {
    if (idv[i] < 0 || idv[i] >= V) throw new RangeError(`embedScatter: id ${idv[i]} outside [0, ${V})`);
  }
  if (idv.length === 0) return tf.zeros([0, D]);
  if (onDevice()) return gatherRows(table, idv);
  const f = tf.customGrad(((t: tf.Tensor) => ({
    // A SparseSegmentSum with one segment per id is a row gather, ~10× faster than GatherV2 on wasm.
    value: tf.sparse.sparseSegmentSum(t, tf.tensor1d(idv, "int32"), tf.range(0, idv.length, 1, "int32")),
    gradFunc: (dy: tf.Tensor) => {
      const g = new Float32Array(V * D);
      const d = dy.dataSync() as Float32Array;
      for (let i = 0; i < idv.length; i++) {
        const r = idv[i] * D;
        const s = i * D;
        for (let j = 0; j < D; j++) g[r + j] += d[s + j];
      }
      return tf.tensor2d(g, [V, D]);
    },
  })) as CustomGradFn);
  return f(table) as tf.Tensor2D;
}

/**
 * Masked mean of embeddings per row ("embedding bag"): out[b] = Σ_t mask[b,t]·table[ids[b,t]] /
 * max(1, Σ_t mask[b,t]) → [batch, D]. Rows with no tokens give 0. The forward runs as one
 * SparseSegmentSum over the table (no [batch·len, D] intermediate); the table gradient is a
 * plain-JS scatter-add.
 */
export function embedBag(
  table: tf.Tensor2D,
  ids: Int32Array,
  mask: Float32Array,
  batch: number,
  len: number,
): tf.Tensor2D {
  const [V, D] = table.shape;
  const bag = bagIndex(ids, mask, batch, len, V);
  if (batch === 0) return tf.zeros([0, D]);
  if (onDevice()) return segmentMeanDevice(gatherRows(table, bag.idx), bag.seg, bag.scale);
  const f = tf.customGrad(((t: tf.Tensor) => ({
    value: tf.tidy(() => {
      const sums = tf.sparse.sparseSegmentSum(
        t,
        tf.tensor1d(bag.idx, "int32"),
        tf.tensor1d(bag.seg, "int32"),
      ) as tf.Tensor2D;
      return tf.mul(sums, tf.tensor2d(bag.scale, [batch, 1]));
    }),
    gradFunc: (dy: tf.Tensor) => {
      const g = new Float32Array(V * D);
      const d = dy.dataSync() as Float32Array;
      const { idx, seg, scale } = bag;
      for (let i = 0; i < idx.length; i++) {
        const b = seg[i];
        const w = scale[b];
        if (w === 0) continue;
        const r = idx[i] * D;
        const s = b * D;
        for (let j = 0; j < D; j++) g[r + j] += w * d[s + j];
      }
      return tf.tensor2d(g, [V, D]);
    },
  })) as CustomGradFn);
  return f(table) as tf.Tensor2D;
}

interface BagIndex {
  /** Table row of every kept (mask > 0) token, row-major. */
  idx: Int32Array;
  /** Output row (segment) of every kept token; non-decreasing, and ends at batch − 1. */
  seg: Int32Array;
  /** Per-row 1/count (0 for rows without tokens). */
  scale: Float32Array;
}

/**
 * The SparseSegmentSum layout of a masked batch. Segments must cover 0..batch−1 so the output
 * has `batch` rows: when the last row is empty a dummy PAD token is added to it (its scale is 0).
 */
export function bagIndex(ids: Int32Array, mask: Float32Array, batch: number, len: number, vocab: number): BagIndex {
  if (ids.length !== batch * len || mask.length !== batch * len) {
    throw new Error(`embedBag: ids/mask length ${ids.length}/${mask.length} != ${batch}×${len}`);
  }
  let n = 0;
  for (let i = 0; i < mask.length; i++) if (mask[i] > 0) n++;
  const scale = new Float32Array(batch);
  let lastEmpty = batch > 0;
  for (let b = 0; b < batch; b++) {
    let c = 0;
    for (let t = 0; t < len; t++) if (mask[b * len + t] > 0) c++;
    scale[b] = c > 0 ? 1 / c : 0;
    if (b === batch - 1) lastEmpty = c === 0;
  }
  const total = n + (lastEmpty ? 1 : 0);
  const idx = new Int32Array(total);
  const seg = new Int32Array(total);
  let k = 0;
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < len; t++) {
      const p = b * len + t;
      if (mask[p] > 0) {
        const id = ids[p];
        if (id < 0 || id >= vocab) throw new RangeError(`embedBag: id ${id} outside [0, ${vocab})`);
        idx[k] = id;
        seg[k] = b;
        k++;
      }
    }
  }
  if (lastEmpty) {
    idx[k] = 0;
    seg[k] = batch - 1;
  }
  return { idx, seg, scale };
}

/**
 * Mean of consecutive row groups: x [Σ lengths, D] → [groups, D], out[g] = mul·mean of group g's
 * rows (0 for an empty group). Forward is one SparseSegmentSum; the gradient is a plain-JS spread.
 */
export function segmentMean(x: tf.Tensor2D, lengths: ArrayLike<number>, mul = 1): tf.Tensor2D {
  const G = lengths.length;
  const [R, D] = x.shape;
  let total = 0;
  for (let g = 0; g < G; g++) total += lengths[g];
  if (total !== R) throw new Error(`segmentMean: lengths sum to ${total}, x has ${R} rows`);
  if (R === 0) return tf.zeros([G, D]);
  const w = new Float32Array(G);
  const seg: number[] = [];
  const idx: number[] = [];
  let r = 0;
  for (let g = 0; g < G; g++) {
    const L = lengths[g];
    w[g] = L > 0 ? mul / L : 0;
    for (let t = 0; t < L; t++, r++) {
      idx.push(r);
      seg.push(g);
    }
  }
  // SparseSegmentSum outputs (last segment id + 1) rows: make the last group present.
  if (onDevice()) {
    // every row belongs to its group once (no dummy): UnsortedSegmentSum takes the group count
    return segmentMeanDevice(x, Int32Array.from(seg.slice(0, R)), w);
  }
  if (lengths[G - 1] === 0) {
    idx.push(0);
    seg.push(G - 1);
  }
  const f = tf.customGrad(((xi: tf.Tensor) => ({
    value: tf.mul(
      tf.sparse.sparseSegmentSum(xi, tf.tensor1d(idx, "int32"), tf.tensor1d(seg, "int32")),
      tf.tensor2d(w, [G, 1]),
    ),
    gradFunc: (dy: tf.Tensor) => {
      const g = dy.dataSync() as Float32Array;
      const dx = new Float32Array(R * D);
      let row = 0;
      for (let s = 0; s < G; s++) {
        const L = lengths[s];
        const ws = w[s];
        for (let t = 0; t < L; t++, row++) {
          const o = row * D;
          for (let j = 0; j < D; j++) dx[o + j] = g[s * D + j] * ws;
        }
      }
      return tf.tensor2d(dx, [R, D]);
    },
  })) as CustomGradFn);
  return f(x) as tf.Tensor2D;
}

const SQRT1_2 = Math.SQRT1_2;
const INV_SQRT_2PI = 1 / Math.sqrt(2 * Math.PI);
const TANH_C = Math.sqrt(2 / Math.PI);

type GeluKind = "erf" | "tanh";

const geluErf = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
  // Φ(x) = ½(1 + erf(x/√2)); tfjs's erf is the Abramowitz–Stegun 7.1.26 approximation
  // (|error| ≤ 1.5e-7), so this is "exact" GELU to float32 precision.
  const cdf = tf.mul(tf.add(tf.erf(tf.mul(x, SQRT1_2)), 1), 0.5);
  save([x, cdf]);
  return {
    value: tf.mul(x, cdf),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [xs, c] = saved;
      // d/dx x·Φ(x) = Φ(x) + x·φ(x)
      const pdf = tf.mul(tf.exp(tf.mul(tf.mul(xs, xs), -0.5)), INV_SQRT_2PI);
      return [tf.mul(dy, tf.add(c, tf.mul(xs, pdf)))];
    },
  };
}) as CustomGradFn);

const geluTanh = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
  const x2 = tf.mul(x, x);
  const th = tf.tanh(tf.mul(tf.mul(x, tf.add(tf.mul(x2, 0.044715), 1)), TANH_C));
  save([x, th]);
  return {
    value: tf.mul(tf.mul(x, 0.5), tf.add(th, 1)),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [xs, t] = saved;
      // y = ½x(1+t), t = tanh(u), u = c(x + 0.044715x³): y' = ½(1+t) + ½x(1−t²)·c(1 + 3·0.044715x²)
      const sech2 = tf.sub(1, tf.mul(t, t));
      const du = tf.mul(tf.add(tf.mul(tf.mul(xs, xs), 3 * 0.044715), 1), TANH_C);
      const g = tf.add(tf.mul(tf.add(t, 1), 0.5), tf.mul(tf.mul(tf.mul(xs, 0.5), sech2), du));
      return [tf.mul(dy, g)];
    },
  };
}) as CustomGradFn);

/** GELU: "erf" = x·Φ(x) (exact up to tfjs's erf approximation, ≤ 1.5e-7); "tanh" = GPT-2 form. */
export function gelu<T extends tf.Tensor>(x: T, kind: GeluKind = "erf"): T {
  // the device path runs it as one fused WebGPU program each way (model/webgpu/gelu-layernorm.ts)
  if (kind === "erf" && onDevice() && x.dtype === "float32") return geluDevice(x);
  return (kind === "erf" ? geluErf(x) : geluTanh(x)) as T;
}

const LN_EPS = 1e-5;

const makeLayerNormGrad = (eps: number) => tf.customGrad(((x: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor, save: tf.GradSaveFunc) => {
  const axis = x.rank - 1;
  const mean = tf.mean(x, axis, true);
  const xc = tf.sub(x, mean);
  const variance = tf.mean(tf.mul(xc, xc), axis, true);
  const inv = tf.rsqrt(tf.add(variance, eps));
  const xhat = tf.mul(xc, inv);
  save([xhat, inv, gamma]);
  return {
    value: tf.add(tf.mul(xhat, gamma), beta),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [xh, iv, g] = saved;
      const ax = xh.rank - 1;
      const n = xh.shape[ax];
      const dy2 = tf.reshape(dy, [-1, n]);
      const xh2 = tf.reshape(xh, [-1, n]);
      const dgamma = tf.sum(tf.mul(dy2, xh2), 0);
      const dbeta = tf.sum(dy2, 0);
      // dx = inv·(gy − mean(gy) − x̂·mean(gy·x̂)), gy = dy·γ
      const gy = tf.mul(dy, g);
      const m1 = tf.mean(gy, ax, true);
      const m2 = tf.mean(tf.mul(gy, xh), ax, true);
      const dx = tf.mul(tf.sub(tf.sub(gy, m1), tf.mul(xh, m2)), iv);
      return [dx, dgamma, dbeta];
    },
  };
}) as CustomGradFn);

const layerNormGrads = new Map<number, ReturnType<typeof makeLayerNormGrad>>();

/**
 * LayerNorm over the last axis (eps 1e-5 by default, like torch.nn.LayerNorm; BERT configs give
 * their own, e.g. 1e-12), with a fused gradient.
 */
export function layerNorm<T extends tf.Tensor>(x: T, gamma: tf.Tensor1D, beta: tf.Tensor1D, eps = LN_EPS): T {
  // the device path: one fused WebGPU program forward, two backward (model/webgpu/gelu-layernorm.ts)
  if (onDevice() && x.dtype === "float32") return layerNormDevice(x, gamma, beta, eps);
  let f = layerNormGrads.get(eps);
  if (!f) layerNormGrads.set(eps, (f = makeLayerNormGrad(eps)));
  return f(x, gamma, beta) as T;
}

/**
 * A 0 / (1/(1−p)) dropout mask of `size` values from `rng`: two draws seed a counter-based hash
 * (`util/mask-hash.ts`), and pair j of values takes the two 16-bit halves of hash(seed, j), so the
 * drop probability is p rounded to a multiple of 1/65536 (the keep scale uses the rounded p, so
 * the expectation is exact). Why a hash and not the Rng's stream: the GPU draws the same mask
 * in parallel (`model/webgpu/dropout.ts`), with nothing computed or uploaded by the host.
 */
export function dropoutMask(size: number, rate: number, rng: Rng): Float32Array {
  const thr = dropThreshold(rate);
  const keepScale = dropoutKeepScale(rate);
  const key = maskKey(rng);
  const m = new Float32Array(size);
  for (let i = 0; i < size; i += 2) {
    const u = maskBits(key, i >>> 1);
    m[i] = (u & 0xffff) < thr ? 0 : keepScale;
    if (i + 1 < size) m[i + 1] = u >>> 16 < thr ? 0 : keepScale;
  }
  return m;
}

/**
 * Inverted dropout: identity when `!training` or `rate` = 0. With an `rng` the mask is drawn from
 * it (reproducible); without, tf.dropout's own generator is used.
 */
export function dropout<T extends tf.Tensor>(x: T, rate: number, training: boolean, rng?: Rng): T {
  if (!training || rate <= 0) return x;
  if (!rng) return tf.dropout(x, rate) as T;
  // on the device path the mask is drawn there (same values, nothing uploaded)
  const mask = onDevice() ? tf.reshape(dropoutMaskDevice(x.size, rate, rng), x.shape) : tf.tensor(dropoutMask(x.size, rate, rng), x.shape);
  return tf.mul(x, mask) as T;
}

/**
 * `layerNorm(x + dropout(h))`, a post-LN sub-layer's end (BERT). The device path runs it as one
 * program (model/webgpu/residual-layernorm.ts) with the mask `dropout` would draw: the same Rng
 * draws at the same point, so both paths give the same values.
 */
export function residualLayerNorm<T extends tf.Tensor>(x: T, h: T, drop: DropSpec, gamma: tf.Tensor1D, beta: tf.Tensor1D, eps = LN_EPS): T {
  const mask = deviceMask(x, drop);
  if (mask) return residualLayerNormDevice(x, h, gamma, beta, eps, mask);
  return layerNorm(tf.add(x, dropout(h, drop.rate, drop.training, drop.rng)) as T, gamma, beta, eps);
}

/** `x + dropout(h)`, a pre-LN sub-layer's residual; one program on the device path (as above). */
export function residualDropout<T extends tf.Tensor>(x: T, h: T, drop: DropSpec): T {
  const mask = deviceMask(x, drop);
  if (mask) return residualDropoutDevice(x, h, mask);
  return tf.add(x, dropout(h, drop.rate, drop.training, drop.rng)) as T;
}

interface DropSpec {
  rate: number;
  training: boolean;
  rng?: Rng;
}

/**
 * The fused programs' mask, drawing the key from the Rng exactly when `dropout` would; null where
 * the tfjs ops run instead (not on the device, or dropout without an Rng: tf.dropout's own mask).
 */
function deviceMask(x: tf.Tensor, drop: DropSpec): MaskParams | null {
  const dropping = drop.training && drop.rate > 0;
  if (!onDevice() || x.dtype !== "float32" || (dropping && !drop.rng)) return null;
  if (!dropping) return { thr: 0, keep: 1, k0: 0, k1: 0 };
  const [k0, k1] = maskKey(drop.rng!);
  return { thr: dropThreshold(drop.rate), keep: dropoutKeepScale(drop.rate), k0, k1 };
}

/** Smallest power of two ≥ n (and ≥ 1). */
export function nextPow2(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}
