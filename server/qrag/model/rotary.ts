/**
 * Rotary position encoding of action (candidate) embeddings: docs/method.md §2.3,
 * docs/workload.md §1.3.
 *
 * An action embedding of size D is split into two halves of h = D/2 (one per Q head). Each half is
 * rotated with the *same* angles in interleaved pairs:
 *   (x₂ₖ, x₂ₖ₊₁) → (x₂ₖ·cosθₖ − x₂ₖ₊₁·sinθₖ, x₂ₖ₊₁·cosθₖ + x₂ₖ·sinθₖ),  θₖ = p·theta^(−2k/h),
 * k = 0..h/2−1 (rotary dim = h per half). Positions are floored to integers and clamped to
 * [0, maxPositions − 1] (a cos/sin table of 1000 positions by default). Only actions are rotated.
 *
 * With rotary disabled (mode "none", or `positions === null`), rotation is the identity and the
 * twin-head Q is the plain split dot product.
 */
import * as tf from "@tensorflow/tfjs";

interface RotaryOptions {
  /** "relative" (rotate by position) or "none" (identity). Default "relative". */
  mode?: "relative" | "none";
  /** Default 10000. */
  theta?: number;
  /** Size of the cos/sin table; larger positions are clamped. Default 1000. */
  maxPositions?: number;
}

/** Marker for "no positions" (rotary disabled): pass `positionsNone` instead of a position array. */
export const positionsNone = null;
type Positions = Int32Array | ArrayLike<number> | null;

export class Rotary {
  readonly dim: number;
  readonly half: number;
  /** Number of rotated pairs per half (= half / 2). */
  readonly pairs: number;
  readonly theta: number;
  readonly maxPositions: number;
  readonly enabled: boolean;
  /** cos/sin of p·freq_k, [maxPositions, pairs] row-major (float64 for accuracy in JS paths). */
  readonly cos: Float64Array;
  readonly sin: Float64Array;
  /** Float32 copies expanded to the full width D: [maxPositions, D] (pairs repeated, halves repeated). */
  private cosFull?: Float32Array;
  private sinFull?: Float32Array;

  constructor(dim: number, opts: RotaryOptions = {}) {
    if (!Number.isInteger(dim) || dim <= 0 || dim % 4 !== 0) {
      throw new Error(`rotary: dim must be a positive multiple of 4, got ${dim}`);
    }
    this.dim = dim;
    this.half = dim / 2;
    this.pairs = dim / 4;
    this.theta = opts.theta ?? 10000;
    this.maxPositions = opts.maxPositions ?? 1000;
    this.enabled = (opts.mode ?? "relative") !== "none";
    const P = this.maxPositions;
    const K = this.pairs;
    this.cos = new Float64Array(P * K);
    this.sin = new Float64Array(P * K);
    for (let k = 0; k < K; k++) {
      // freqs_k = 1 / theta^(2k / h), float32 as in torch
      const f = Math.fround(1 / Math.pow(this.theta, (2 * k) / this.half));
      for (let p = 0; p < P; p++) {
        const a = Math.fround(p * f);
        this.cos[p * K + k] = Math.cos(a);
        this.sin[p * K + k] = Math.sin(a);
      }
    }
  }

  /** Table row of a (possibly fractional or out-of-range) position: floor, clamp to [0, P−1]. */
  row(pos: number): number {
    const p = Math.floor(pos);
    if (!(p > 0)) return 0; // also NaN → 0
    return p >= this.maxPositions ? this.maxPositions - 1 : p;
  }

  /** cos/sin expanded to [maxPositions, D] (float32), as rotateTf multiplies them (built once). */
  tables(): { c: Float32Array; s: Float32Array } {
    if (!this.cosFull || !this.sinFull) {
      const P = this.maxPositions, D = this.dim, K = this.pairs, h = this.half;
      const c = new Float32Array(P * D);
      const s = new Float32Array(P * D);
      for (let p = 0; p < P; p++) {
        for (let k = 0; k < K; k++) {
          const cv = this.cos[p * K + k], sv = this.sin[p * K + k];
          for (const off of [0, h]) {
            c[p * D + off + 2 * k] = cv;
            c[p * D + off + 2 * k + 1] = cv;
            s[p * D + off + 2 * k] = sv;
            s[p * D + off + 2 * k + 1] = sv;
          }
        }
      }
      this.cosFull = c;
      this.sinFull = s;
    }
    return { c: this.cosFull, s: this.sinFull };
  }

  /**
   * Differentiable rotation of x [B, D] (row b by positions[b]). Identity when disabled or
   * `positions` is null. Call inside tf.tidy.
   */
  rotateTf(x: tf.Tensor2D, positions: Positions): tf.Tensor2D {
    const [B, D] = x.shape;
    if (D !== this.dim) throw new Error(`rotateTf: width ${D} != rotary dim ${this.dim}`);
    if (!this.enabled || positions === null) return x;
    if (positions.length !== B) throw new Error(`rotateTf: ${positions.length} positions for ${B} rows`);
    const { c, s } = this.tables();
    const C = new Float32Array(B * D);
    const S = new Float32Array(B * D);
    for (let b = 0; b < B; b++) {
      const r = this.row(positions[b]) * D;
      C.set(c.subarray(r, r + D), b * D);
      S.set(s.subarray(r, r + D), b * D);
    }
    const cT = tf.tensor2d(C, [B, D]);
    const sT = tf.tensor2d(S, [B, D]);
    // Plain differentiable ops: a customGrad closure over cT/sT would see them disposed by the
    // enclosing tidy before backprop runs (variableGrads keeps only saved tensors).
    return tf.add(tf.mul(x, cT), tf.mul(rotateHalfPairs(x), sT)) as tf.Tensor2D;
  }

  /**
   * Plain-JS rotation of n rows of width D from `raw` into `out` (may alias `raw`). Identity copy
   * when disabled or `positions` is null.
   */
  rotateJs(raw: Float32Array, n: number, D: number, positions: Positions, out: Float32Array): void {
    if (D !== this.dim) throw new Error(`rotateJs: width ${D} != rotary dim ${this.dim}`);
    if (raw.length < n * D || out.length < n * D) throw new Error("rotateJs: buffer smaller than n·D");
    if (!this.enabled || positions === null) {
      if (out !== raw) out.set(raw.subarray(0, n * D));
      return;
    }
    if (positions.length < n) throw new Error(`rotateJs: ${positions.length} positions for ${n} rows`);
    const K = this.pairs, h = this.half;
    for (let j = 0; j < n; j++) {
      const r = this.row(positions[j]) * K;
      const base = j * D;
      for (let k = 0; k < K; k++) {
        const cv = this.cos[r + k], sv = this.sin[r + k];
        let i = base + 2 * k;
        let x0 = raw[i], x1 = raw[i + 1];
        out[i] = x0 * cv - x1 * sv;
        out[i + 1] = x1 * cv + x0 * sv;
        i += h;
        x0 = raw[i];
        x1 = raw[i + 1];
        out[i] = x0 * cv - x1 * sv;
        out[i + 1] = x1 * cv + x0 * sv;
      }
    }
  }

  /**
   * Twin-head scores of one state against N raw (unrotated) candidates:
   *   q1[j] = ⟨s[:h], (R(p_j)a_j)[:h]⟩,  q2[j] = ⟨s[h:], (R(p_j)a_j)[h:]⟩.
   * Uses ⟨s, R(p)a⟩ = ⟨R(p)ᵀs, a⟩: Rᵀs is computed once per distinct position, so the cost is one
   * pass over `raw`. `raw` is N·D row-major; q1/q2 must hold N values.
   */
  scoreCandidates(s: Float32Array, raw: Float32Array, positions: Positions, q1: Float32Array, q2: Float32Array): void {
    const D = this.dim, h = this.half;
    if (s.length < D) throw new Error(`scoreCandidates: state has ${s.length} values, need ${D}`);
    const N = q1.length;
    if (q2.length < N || raw.length < N * D) {
      throw new Error(`scoreCandidates: buffers too small for N=${N} (raw ${raw.length}, q2 ${q2.length})`);
    }
    if (!this.enabled || positions === null) {
      scoreWith(s, 0, raw, 0, N, D, h, q1, q2);
      return;
    }
    if (positions.length < N) throw new Error(`scoreCandidates: ${positions.length} positions for N=${N}`);
    // Rᵀ(p)s per distinct table row, computed lazily; rows are few (≤ a few hundred).
    const P = this.maxPositions;
    const slot = new Int32Array(P).fill(-1);
    let us = new Float32Array(16 * D);
    let nu = 0;
    let start = 0;
    while (start < N) {
      const r = this.row(positions[start]);
      let end = start + 1;
      while (end < N && this.row(positions[end]) === r) end++;
      let u = slot[r];
      if (u < 0) {
        if ((nu + 1) * D > us.length) {
          const bigger = new Float32Array(us.length * 2);
          bigger.set(us);
          us = bigger;
        }
        u = nu++;
        slot[r] = u;
        this.rotateBackInto(s, r, us, u * D);
      }
      scoreWith(us, u * D, raw, start, end, D, h, q1, q2);
      start = end;
    }
  }

  /** out[off..off+D) = R(row)ᵀ·s (rotation by −θ). */
  private rotateBackInto(s: Float32Array, row: number, out: Float32Array, off: number): void {
    const K = this.pairs, h = this.half, r = row * K;
    for (let k = 0; k < K; k++) {
      const cv = this.cos[r + k], sv = this.sin[r + k];
      for (let i = 2 * k; i < this.dim; i += h) {
        const s0 = s[i], s1 = s[i + 1];
        out[off + i] = s0 * cv + s1 * sv;
        out[off + i + 1] = s1 * cv - s0 * sv;
      }
    }
  }
}

/** q1[j] = ⟨u[:h], a_j[:h]⟩, q2[j] = ⟨u[h:], a_j[h:]⟩ for j in [from, to). */
function scoreWith(
  u: Float32Array,
  uOff: number,
  raw: Float32Array,
  from: number,
  to: number,
  D: number,
  h: number,
  q1: Float32Array,
  q2: Float32Array,
): void {
  for (let j = from; j < to; j++) {
    const base = j * D;
    let a0 = 0, a1 = 0, b0 = 0, b1 = 0;
    let i = 0;
    for (; i + 1 < h; i += 2) {
      a0 += u[uOff + i] * raw[base + i];
      a1 += u[uOff + i + 1] * raw[base + i + 1];
      b0 += u[uOff + h + i] * raw[base + h + i];
      b1 += u[uOff + h + i + 1] * raw[base + h + i + 1];
    }
    for (; i < h; i++) {
      a0 += u[uOff + i] * raw[base + i];
      b0 += u[uOff + h + i] * raw[base + h + i];
    }
    q1[j] = a0 + a1;
    q2[j] = b0 + b1;
  }
}

/** Pairwise (x₂ₖ, x₂ₖ₊₁) → (−x₂ₖ₊₁, x₂ₖ) over the whole width (halves have even size). */
function rotateHalfPairs(x: tf.Tensor2D): tf.Tensor2D {
  const [B, D] = x.shape;
  const pairs = tf.reshape(x, [B, D / 2, 2]);
  const swapped = tf.reverse(pairs, 2);
  const sign = tf.tensor3d([-1, 1], [1, 1, 2]);
  return tf.reshape(tf.mul(swapped, sign), [B, D]);
}

const defaults = new Map<number, Rotary>();

/** The default rotary (theta 10000, 1000 positions, enabled) for width D; cached per D. */
export function defaultRotary(D: number): Rotary {
  let r = defaults.get(D);
  if (!r) {
    r = new Rotary(D);
    defaults.set(D, r);
  }
  return r;
}

/** Differentiable rotation with the default table (see Rotary.rotateTf). */
export function rotateTf(x: tf.Tensor2D, positions: Positions): tf.Tensor2D {
  return defaultRotary(x.shape[1]).rotateTf(x, positions);
}

/** Plain-JS rotation with the default table (see Rotary.rotateJs). */
export function rotateJs(raw: Float32Array, n: number, D: number, positions: Positions, out: Float32Array): void {
  defaultRotary(D).rotateJs(raw, n, D, positions, out);
}

/** Fused twin-head scorer with the default table (see Rotary.scoreCandidates); D = s.length. */
export function scoreCandidates(
  s: Float32Array,
  raw: Float32Array,
  positions: Positions,
  q1: Float32Array,
  q2: Float32Array,
): void {
  defaultRotary(s.length).scoreCandidates(s, raw, positions, q1, q2);
}
