/**
 * Multi-head self-attention over variable-length sequences, in two implementations:
 *
 * - `attentionPerHead` (used by the transformer): one custom op that splits heads in JS and runs
 *   the (sequence, head) products as 2-D matmuls — wasm's fast XNNPACK path (~15–20 GFLOP/s) —
 *   with a hand-written backward. Only each sequence's real tokens take part, so it works on
 *   packed batches (PAD rows removed). Small blocks are stacked into groups that share one set of
 *   kernels (block-diagonal −1e9 bias). This avoids wasm's slow spots: batched matmuls with batch
 *   > 1 run on a scalar path (~1.5 GFLOP/s), and Slice copies its whole input for every slice.
 * - `attentionBatched`: the textbook dense version with tf ops on [B·H, T, d_head] tensors and an
 *   additive −1e9 key mask (autodiff through `mm`); kept as the reference the tests compare with.
 *
 * Inputs q, k, v are [rows, d] with heads contiguous along the columns (head h = columns
 * h·d_head…(h+1)·d_head); the output is the merged context [rows, d]. q is scaled by 1/√d_head
 * inside. Dropout on the attention probabilities when training.
 */
import * as tf from "@tensorflow/tfjs";
import { dropout, dropoutMask, mm } from "./ops.ts";
import { dropoutKeepScale } from "../util/mask-hash.ts";
import type { Rng } from "../util/rng.ts";
import type { BatchedArgs } from "./attention-args.ts";

/**
 * Which rows of the [rows, d] inputs form each sequence (absolute row indices, in order). A dense
 * [B, T] batch with a mask gives `denseLayout`; packed sequences give `packedLayout`.
 */
interface SeqLayout {
  rows: number;
  seqs: Int32Array[];
}

export interface PerHeadArgs {
  heads: number;
  layout: SeqLayout;
  dropout: number;
  training: boolean;
  rng?: Rng;
}

/** Layout of a dense masked batch: sequence b = rows b·T + t with mask > 0. */
export function denseLayout(mask: Float32Array, batch: number, len: number): SeqLayout {
  const seqs: Int32Array[] = [];
  for (let b = 0; b < batch; b++) {
    const idx: number[] = [];
    for (let t = 0; t < len; t++) if (mask[b * len + t] > 0) idx.push(b * len + t);
    seqs.push(Int32Array.from(idx));
  }
  return { rows: batch * len, seqs };
}

/** Layout of sequences of the given lengths stored one after another. */
export function packedLayout(lengths: ArrayLike<number>): SeqLayout {
  const seqs: Int32Array[] = [];
  let r = 0;
  for (let b = 0; b < lengths.length; b++) {
    const L = lengths[b];
    const idx = new Int32Array(L);
    for (let t = 0; t < L; t++) idx[t] = r + t;
    seqs.push(idx);
    r += L;
  }
  return { rows: r, seqs };
}

/** Dense reference: softmax(QKᵀ/√d_head − 1e9·PAD_key) V with batched [B·H, T, T] products. */
export function attentionBatched(q: tf.Tensor2D, k: tf.Tensor2D, v: tf.Tensor2D, a: BatchedArgs): tf.Tensor2D {
  const B = a.batch, T = a.len, H = a.heads, N = B * T;
  const d = q.shape[1];
  for (const t of [q, k, v]) {
    if (t.shape[0] !== N || t.shape[1] !== d) throw new Error(`attention: input [${t.shape}] != [${N}, ${d}]`);
  }
  if (d % H !== 0) throw new Error(`attention: width ${d} not divisible by ${H} heads`);
  if (a.mask.length !== N) throw new Error(`attention: mask has ${a.mask.length} values, need ${N}`);
  const dh = d / H;
  const split = (t: tf.Tensor2D): tf.Tensor3D =>
    tf.reshape(tf.transpose(tf.reshape(t, [B, T, H, dh]), [0, 2, 1, 3]), [B * H, T, dh]);
  const qh = split(tf.mul(q, 1 / Math.sqrt(dh)) as tf.Tensor2D);
  const kh = split(k);
  const vh = split(v);
  const keyBias = tf.reshape(tf.mul(tf.sub(tf.tensor2d(a.mask, [B, T]), 1), 1e9), [B, 1, 1, T]);
  const scores = tf.add(tf.reshape(mm(qh, tf.transpose(kh, [0, 2, 1]) as tf.Tensor3D), [B, H, T, T]), keyBias);
  const att = dropout(tf.softmax(scores), a.dropout, a.training, a.rng);
  const ctx = mm(tf.reshape(att, [B * H, T, T]) as tf.Tensor3D, vh);
  return tf.reshape(tf.transpose(tf.reshape(ctx, [B, H, T, dh]), [0, 2, 1, 3]), [N, d]) as tf.Tensor2D;
}

const EMPTY: Float32Array = new Float32Array(0);

/** True while a gradient tape is recording (so the backward pass may need saved activations). */
function tapeActive(): boolean {
  const st = (tf.engine() as unknown as { state?: { gradientDepth?: number } }).state;
  return st?.gradientDepth === undefined ? true : st.gradientDepth > 0;
}

/** Default row budget of a group of (sequence, head) blocks computed by one set of 2-D matmuls. */
const GROUP_ROWS = 96;

interface Block {
  seq: number;
  head: number;
  /** First row of the block inside its group. */
  off: number;
}

interface Group {
  blocks: Block[];
  rows: number;
  /** Offset of this group's R×R probabilities in the saved buffer. */
  pOff: number;
}

/**
 * Multi-head attention over the sequences of `layout`, as 2-D matmuls with a hand-written
 * gradient. Each sequence attends over its own rows only (what a −1e9 key bias does for PAD
 * keys); rows not in any sequence get 0.
 *
 * Every (sequence, head) pair is a block of L rows. Small blocks are stacked into groups of at most
 * `groupRows` rows (a block longer than that is a group of its own) and a group is computed with one
 * [R, d_head]·[d_head, R] product, a block-diagonal 0 / −1e9 bias, one softmax and one
 * [R, R]·[R, d_head] product: the off-block probabilities are exactly 0, so this equals per-block
 * attention while paying the per-kernel overhead once per group instead of once per block.
 * Dropout masks are drawn per block, so results do not depend on the grouping. Probabilities are
 * kept (in JS) for the backward only while a gradient tape records.
 */
export function attentionPerHead(
  q: tf.Tensor2D,
  k: tf.Tensor2D,
  v: tf.Tensor2D,
  a: PerHeadArgs & { groupRows?: number },
): tf.Tensor2D {
  const { rows: N, seqs } = a.layout;
  const d = q.shape[1];
  for (const t of [q, k, v]) {
    if (t.shape[0] !== N || t.shape[1] !== d) throw new Error(`attention: input [${t.shape}] != [${N}, ${d}]`);
  }
  if (d % a.heads !== 0) throw new Error(`attention: width ${d} not divisible by ${a.heads} heads`);
  const H = a.heads, dh = d / H;
  const scale = 1 / Math.sqrt(dh);
  const useDrop = a.training && a.dropout > 0;
  if (useDrop && !a.rng) throw new Error("attentionPerHead: dropout needs an rng");
  const keepScale = useDrop ? dropoutKeepScale(a.dropout) : 1;
  const budget = a.groupRows ?? GROUP_ROWS;

  const groups: Group[] = [];
  let cur: Group | undefined;
  let pTotal = 0;
  let maxR = 0;
  for (let b = 0; b < seqs.length; b++) {
    const L = seqs[b].length;
    if (L === 0) continue;
    for (let h = 0; h < H; h++) {
      if (!cur || cur.rows + L > budget) {
        if (cur) groups.push(cur);
        cur = { blocks: [], rows: 0, pOff: 0 };
      }
      cur.blocks.push({ seq: b, head: h, off: cur.rows });
      cur.rows += L;
    }
  }
  if (cur) groups.push(cur);
  for (const g of groups) {
    g.pOff = pTotal;
    pTotal += g.rows * g.rows;
    maxR = Math.max(maxR, g.rows);
  }

  /** Block-diagonal bias of a group (0 inside blocks, −1e9 elsewhere); null for a single block. */
  const biasData = (g: Group): Float32Array | null => {
    if (g.blocks.length === 1) return null;
    const R = g.rows;
    const m = new Float32Array(R * R).fill(-1e9);
    for (const bl of g.blocks) {
      const L = seqs[bl.seq].length;
      for (let r = 0; r < L; r++) m.fill(0, (bl.off + r) * R + bl.off, (bl.off + r) * R + bl.off + L);
    }
    return m;
  };

  const f = tf.customGrad(((qT: tf.Tensor, kT: tf.Tensor, vT: tf.Tensor) => {
    const Q = qT.dataSync() as Float32Array;
    const K = kT.dataSync() as Float32Array;
    const V = vT.dataSync() as Float32Array;
    const save = tapeActive();
    const Psave = save ? new Float32Array(pTotal) : undefined;
    const Msave = save && useDrop ? new Uint8Array(pTotal) : undefined;
    const ctx = new Float32Array(N * d);
    const qg = new Float32Array(maxR * dh);
    const kgT = new Float32Array(dh * maxR);
    const vg = new Float32Array(maxR * dh);
    const mg = useDrop ? new Float32Array(maxR * maxR) : undefined;
    // Groups of identical block structure (e.g. equal-length actions) share one bias tensor.
    const biasCache = new Map<string, tf.Tensor2D>();
    try {
      for (const g of groups) {
        const R = g.rows, Rd = R * dh;
        for (const bl of g.blocks) {
          const idx = seqs[bl.seq];
          gatherHead(Q, bl.head, idx, d, dh, scale, qg, bl.off, 0);
          gatherHead(K, bl.head, idx, d, dh, 1, kgT, bl.off, R);
          gatherHead(V, bl.head, idx, d, dh, 1, vg, bl.off, 0);
        }
        if (mg) {
          mg.fill(0, 0, R * R);
          for (const bl of g.blocks) {
            const L = seqs[bl.seq].length;
            const m = dropoutMask(L * L, a.dropout, a.rng as Rng);
            for (let r = 0; r < L; r++) mg.set(m.subarray(r * L, (r + 1) * L), (bl.off + r) * R + bl.off);
          }
          if (Msave) for (let i = 0; i < R * R; i++) Msave[g.pOff + i] = mg[i] > 0 ? 1 : 0;
        }
        let bias: tf.Tensor2D | undefined;
        if (g.blocks.length > 1) {
          const key = g.blocks.map((bl) => seqs[bl.seq].length).join(",");
          bias = biasCache.get(key);
          if (!bias) {
            bias = tf.keep(tf.tensor2d(biasData(g) as Float32Array, [R, R]));
            biasCache.set(key, bias);
          }
        }
        // (tf.tidy must not return typed arrays: it walks every element looking for tensors.)
        let o: Float32Array = EMPTY;
        tf.tidy(() => {
          let s = tf.matMul(tf.tensor2d(qg.subarray(0, Rd), [R, dh]), tf.tensor2d(kgT.subarray(0, Rd), [dh, R]));
          if (bias) s = tf.add(s, bias);
          const p = tf.softmax(s) as tf.Tensor2D;
          if (Psave) Psave.set(p.dataSync() as Float32Array, g.pOff);
          const pd = mg ? (tf.mul(p, tf.tensor2d(mg.subarray(0, R * R), [R, R])) as tf.Tensor2D) : p;
          o = tf.matMul(pd, tf.tensor2d(vg.subarray(0, Rd), [R, dh])).dataSync() as Float32Array;
        });
        for (const bl of g.blocks) scatterHead(o, bl.head, seqs[bl.seq], d, dh, ctx, bl.off, 0);
      }
    } finally {
      for (const t of biasCache.values()) t.dispose();
    }
    return {
      value: tf.tensor2d(ctx, [N, d]),
      gradFunc: (dy: tf.Tensor) => {
        if (!Psave) throw new Error("attentionPerHead: backward without saved activations");
        const G = dy.dataSync() as Float32Array;
        const dQ = new Float32Array(N * d);
        const dK = new Float32Array(N * d);
        const dV = new Float32Array(N * d);
        const gO = new Float32Array(maxR * dh);
        const gOT = new Float32Array(dh * maxR);
        const qsT = new Float32Array(dh * maxR);
        const kn = new Float32Array(maxR * dh);
        const vT = new Float32Array(dh * maxR);
        const mf = useDrop ? new Float32Array(maxR * maxR) : undefined;
        for (const g of groups) {
          const R = g.rows, RR = R * R, Rd = R * dh;
          for (const bl of g.blocks) {
            const idx = seqs[bl.seq];
            gatherHead(G, bl.head, idx, d, dh, 1, gO, bl.off, 0);
            gatherHead(G, bl.head, idx, d, dh, 1, gOT, bl.off, R);
            gatherHead(Q, bl.head, idx, d, dh, scale, qsT, bl.off, R);
            gatherHead(K, bl.head, idx, d, dh, 1, kn, bl.off, 0);
            gatherHead(V, bl.head, idx, d, dh, 1, vT, bl.off, R);
          }
          if (mf && Msave) for (let i = 0; i < RR; i++) mf[i] = Msave[g.pOff + i] * keepScale;
          let dq: Float32Array = EMPTY, dkT: Float32Array = EMPTY, dvT: Float32Array = EMPTY;
          tf.tidy(() => {
            const p = tf.tensor2d(Psave.subarray(g.pOff, g.pOff + RR), [R, R]);
            const mt = mf ? tf.tensor2d(mf.subarray(0, RR), [R, R]) : undefined;
            const pd = mt ? (tf.mul(p, mt) as tf.Tensor2D) : p;
            // dVᵀ = gOᵀ·Pd, dPd = gO·Vᵀ, dS = P ⊙ (dP − rowsum(dP ⊙ P)), dQ = dS·K·scale,
            // dKᵀ = (Q·scale)ᵀ·dS. P (hence dS) is 0 off the diagonal blocks.
            const dvT_ = tf.matMul(tf.tensor2d(gOT.subarray(0, Rd), [dh, R]), pd);
            let dP = tf.matMul(tf.tensor2d(gO.subarray(0, Rd), [R, dh]), tf.tensor2d(vT.subarray(0, Rd), [dh, R]));
            if (mt) dP = tf.mul(dP, mt);
            const dS = tf.mul(p, tf.sub(dP, tf.sum(tf.mul(dP, p), 1, true))) as tf.Tensor2D;
            const dq_ = tf.mul(tf.matMul(dS, tf.tensor2d(kn.subarray(0, Rd), [R, dh])), scale);
            const dkT_ = tf.matMul(tf.tensor2d(qsT.subarray(0, Rd), [dh, R]), dS);
            dq = dq_.dataSync() as Float32Array;
            dkT = dkT_.dataSync() as Float32Array;
            dvT = dvT_.dataSync() as Float32Array;
          });
          for (const bl of g.blocks) {
            const idx = seqs[bl.seq];
            scatterHead(dq, bl.head, idx, d, dh, dQ, bl.off, 0);
            scatterHead(dkT, bl.head, idx, d, dh, dK, bl.off, R);
            scatterHead(dvT, bl.head, idx, d, dh, dV, bl.off, R);
          }
        }
        return [tf.tensor2d(dQ, [N, d]), tf.tensor2d(dK, [N, d]), tf.tensor2d(dV, [N, d])];
      },
    };
  }) as Parameters<typeof tf.customGrad>[0]);
  return f(q, k, v) as tf.Tensor2D;
}

/**
 * Rows `idx` of head h of X [rows, d], times `mul`, into a group buffer at row offset `off`:
 * row-major [R, dh] when `stride` is 0, else transposed [dh, stride].
 */
function gatherHead(
  X: Float32Array,
  h: number,
  idx: Int32Array,
  d: number,
  dh: number,
  mul: number,
  out: Float32Array,
  off: number,
  stride: number,
): void {
  const col = h * dh;
  const L = idx.length;
  for (let r = 0; r < L; r++) {
    const src = idx[r] * d + col;
    if (stride > 0) {
      for (let j = 0; j < dh; j++) out[j * stride + off + r] = X[src + j] * mul;
    } else if (mul === 1) {
      out.set(X.subarray(src, src + dh), (off + r) * dh);
    } else {
      const dst = (off + r) * dh;
      for (let j = 0; j < dh; j++) out[dst + j] = X[src + j] * mul;
    }
  }
}

/** Inverse of gatherHead (mul 1): out[idx[r], h·dh + j] = group row off + r (same layouts). */
function scatterHead(
  head: Float32Array,
  h: number,
  idx: Int32Array,
  d: number,
  dh: number,
  out: Float32Array,
  off: number,
  stride: number,
): void {
  const col = h * dh;
  const L = idx.length;
  for (let r = 0; r < L; r++) {
    const dst = idx[r] * d + col;
    if (stride > 0) {
      for (let j = 0; j < dh; j++) out[dst + j] = head[j * stride + off + r];
    } else {
      out.set(head.subarray((off + r) * dh, (off + r + 1) * dh), dst);
    }
  }
}
