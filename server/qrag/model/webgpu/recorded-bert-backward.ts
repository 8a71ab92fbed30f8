/**
 * The recorded hf BERT backward (recorded-bert-train.ts): the gradient of the pooled output with
 * respect to every variable, recorded into the taped forward's plan, which kept each layer's
 * activations. The programs are the transformer backward's (recorded-backward.ts) and the fused
 * ops' backward programs, in BERT's post-LN order:
 *
 * masked-mean backward; per layer in reverse: LN₂(mid + h·m)'s dx (dx to the residual, dx·m to
 * the branch; residual-layernorm.ts) and dγ, dβ → fc2 (dX = dY·Wᵀ, dW = Xᵀ·dY: matmul.ts with a
 * transposed operand; db = column sums) → the activation's backward → fc1, whose dX adds the
 * residual's (matmul.ts's `res` operand) → LN₁ the same way → output projection → attention dQ,
 * then dK and dV (attention.ts, separate q, k, v; the probabilities' dropout mask drawn inline
 * from the forward's key, as the forward drew it) → Q, K, V: dX = dQ·Wqᵀ + dK·Wkᵀ + dV·Wvᵀ + the
 * residual's as three chained products, the three bias sums in one program. Then the embedding's mask, its LayerNorm's dx and dγ, dβ; positions summed over the
 * batch, the type table's row 0 summed over all rows, token rows per distinct id (a CSR built
 * on the host, as the transformer's).
 */
import { WG } from "./raw-program.ts";
import type { MatmulTrans } from "./matmul.ts";
import { attentionGrid, attentionTile, backwardKVCode, backwardQCode } from "./attention.ts";
import { lnDx } from "./gelu-layernorm.ts";
import { halfKey } from "./half-storage.ts";
import { rowLanes, rowWorkgroups } from "./row-reduce.ts";
import { ADD_DH, resLnDx } from "./residual-layernorm.ts";
import { COL_SUM, csrBuffers, gradientParts, tokenAndPositionSteps } from "./recorded-backward.ts";
import { dropoutKeepScale, dropThreshold } from "../../util/mask-hash.ts";
import { productStep, type BackPlan, type BufferLike, type Ref, type UniformValues } from "./recorded-encoder.ts";
import { bertGradSizes, N_EMB, PER_LAYER, type BertBuilder } from "./recorded-bert.ts";
import { weightGradients, type GradShape } from "./split-k.ts";

/** A BERT layer's weight gradients in the order its backward takes them: fc2, fc1, the attention's output, Q, K and V (one program). */
export function bertGrads(d: number, F: number): GradShape[] {
  return [{ m: F, n: d }, { m: d, n: F }, { m: d, n: d }, { m: d, n: d, parts: 3 }];
}

/** Builds the backward's buffers and programs into a BERT keep plan. */
export function buildBertBackward(b: BertBuilder): BackPlan {
  const { c, B, T, acts, sites, hp, ap, half } = b;
  const hk = halfKey(half);
  const d = c.hidden, F = c.intermediate, H = c.heads, L = c.layers, N = B * T;
  // the variables' gradients in bertSpecs order, parts of one buffer
  const gp = gradientParts(b, bertGradSizes(c));
  const grads = gp.grads;
  const dy = b.buf(B * d);
  // dH, dH2: the masked gradients of a layer's two LayerNorms, apart, so the weight gradients
  // that read them can wait for the layer's end (split-k.ts weightGradients' flush)
  const gA = b.buf(N * d), gB = b.buf(N * d), gC = b.buf(N * d), dH = b.buf(N * d), dH2 = b.buf(N * d), dCtx = b.buf(N * d);
  const dq = b.buf(N * d), dk = b.buf(N * d), dv = b.buf(N * d), dsum = b.buf(B * H * T);
  const dF1 = b.buf(N * F);
  const csr = csrBuffers(b, N, d);
  const wg = weightGradients(b, bertGrads(d, F), N, { rows: N, d });

  const maskOf = (p: number): UniformValues => [["u", dropThreshold(p)], ["f", p > 0 ? dropoutKeepScale(p) : 1], ["u", 0], ["u", 0]];
  /** A product (plus `res`); `hA`: A is an f16 activation (a weight's gradient Xᵀ·dY). */
  const matmul = (a: Ref, w: Ref, out: BufferLike, m: number, n: number, k: number, trans: MatmulTrans, res?: BufferLike, hA = false): void => {
    b.step(productStep({ a, b: [w], out: [out], m, n, k, trans, res, hA }));
  };
  /**
   * The gradients of x·W + b (W variable w, [n, k]) given dY = g [N, k]: dX (+ res; or times the
   * activation's gradient at `actIn`, the forward's value before the activation that gave x), then
   * dW and db in one product.
   */
  const linearBack = (g: BufferLike, x: BufferLike, w: number, dx: BufferLike, n: number, k: number, res?: BufferLike, actIn?: BufferLike): void => {
    b.step(productStep({ a: g, b: [{ weight: w }], out: [dx], m: N, n, k, trans: { b: true }, res, actGrad: actIn && { act: c.act, p: actIn, half } }));
    wg.gradient({ a: x, b: [g], out: [grads[w]], m: n, n: k, k: N, trans: { a: true }, hA: half, sums: [grads[w + 1]] });
  };
  const rowDims: UniformValues = [["u", N], ["u", d]];
  const lanes = rowLanes(d);
  const rows = rowWorkgroups(N, d);
  /** y = LN(x + h·m)'s backward given g = dL/dy (`pooled`: the pooling's gradient, gelu-layernorm.ts pooledDy): dx into `dx`, dx·m into `masked`; dγ, dβ as partial sums (added up at the next flush). */
  const resLnBack = (v: BufferLike, stats: BufferLike, gamma: number, g: BufferLike, dx: BufferLike, masked: BufferLike, draw: number | undefined, pooled = false): void => {
    const uniforms: UniformValues = [...rowDims, ["f", c.eps], ...(pooled ? [["u", T] as ["u", number]] : []), ...maskOf(draw === undefined ? 0 : hp)];
    b.step({ key: `qrag_res_ln_dx${pooled ? "_pool" : ""}_part_${lanes}${hk}`, code: () => resLnDx(d, half, pooled, true), refs: [v, { weight: gamma }, stats, g, ...(pooled ? [b.poolW] : []), dx, masked, wg.lnSums(grads[gamma], grads[gamma + 1])], uniforms, grid: rows, stride: 0, draw });
  };

  const dh = d / H;
  const tile = attentionTile(dh, b.device.limits.maxComputeWorkgroupStorageSize ?? 16384);
  // the probabilities' mask drawn where it is used from the forward's key (no mask buffer)
  const attDrop = ap > 0 ? "inline" : false;
  const attKey = `separate_${dh}_${tile}_${ap > 0 ? "inline" : "nodrop"}${hk}`;
  const attUniforms: UniformValues = [["u", B], ["u", T], ["u", H], ["u", d], ["f", 1 / Math.sqrt(dh)]];
  // the residual stream's gradient is in gA at each layer's end; at the last, the pooling's, read spread over the rows (pooledDy)
  for (let l = L - 1; l >= 0; l--) {
    const o = N_EMB + l * PER_LAYER;
    // x_out = LN₂(mid + drop(fc2(act(fc1(mid)))))
    resLnBack(acts.v2[l], acts.st2[l], o + 14, l === L - 1 ? dy : gA, gC, dH, sites.res2[l], l === L - 1);
    linearBack(dH, acts.f2[l], o + 12, dF1, F, d, undefined, acts.f1[l]);
    linearBack(dF1, acts.mid[l], o + 10, gB, d, F, gC);
    // mid = LN₁(x + drop(O(attn(Q(x), K(x), V(x)))))
    resLnBack(acts.v1[l], acts.st1[l], o + 8, gB, gC, dH2, sites.res1[l]);
    linearBack(dH2, acts.ctx[l], o + 6, dCtx, d, d);
    const qkv = [acts.q[l], acts.k[l], acts.v[l]];
    const grid = attentionGrid(B, H, T);
    const uniforms: UniformValues = ap > 0 ? [...attUniforms, ...maskOf(ap)] : attUniforms;
    const draw = sites.att[l];
    b.step({ key: `qrag_attn_bwdq_${attKey}`, code: () => backwardQCode(dh, "separate", attDrop, tile, half), refs: [...qkv, b.mask, acts.attSt[l], dCtx, acts.ctx[l], dq, dsum], uniforms, grid, stride: 0, draw });
    b.step({ key: `qrag_attn_bwdkv_${attKey}`, code: () => backwardKVCode(dh, "separate", attDrop, tile, half), refs: [...qkv, b.mask, acts.attSt[l], dCtx, dsum, dk, dv], uniforms, grid, stride: 0, draw });
    // dX = dQ·Wqᵀ + dK·Wkᵀ + dV·Wvᵀ + the residual's, three chained products
    matmul(dq, { weight: o }, gA, N, d, d, { b: true }, gC);
    matmul(dk, { weight: o + 2 }, gB, N, d, d, { b: true }, gA);
    matmul(dv, { weight: o + 4 }, gA, N, d, d, { b: true }, gB);
    // dWq, dWk, dWv = Xᵀ·dQ, Xᵀ·dK, Xᵀ·dV and the three biases' (the column sums) in one program
    wg.gradient({ a: acts.x[l], b: [dq, dk, dv], out: [grads[o], grads[o + 2], grads[o + 4]], m: d, n: d, k: N, trans: { a: true }, hA: half, sums: [grads[o + 1], grads[o + 3], grads[o + 5]] });
    wg.flush();
  }
  // x₀ = LN_emb(e)·m
  let gE = gA;
  if (sites.emb !== undefined) {
    b.flat("qrag_res_drop_dh", ADD_DH, [gA, dH], [["u", N * d], ...maskOf(hp)], N * d, sites.emb);
    gE = dH;
  }
  b.step({ key: `qrag_ln_dx_part_${lanes}${hk}`, code: () => lnDx(d, half, true), refs: [acts.e, { weight: 3 }, acts.embSt, gE, gB, wg.lnSums(grads[3], grads[4])], uniforms: rowDims, grid: rows, stride: 0 });
  wg.flush(); // the embedding LayerNorm's dγ, dβ
  b.flat("qrag_col_sum", COL_SUM, [gB, grads[2]], [["u", N], ["u", d]], d * WG); // type 0 everywhere: row 0
  const steps = tokenAndPositionSteps(b, csr, gB, grads[0], grads[1], c.maxPositions, B, T, d);
  return { steps: b.list, dy, ...gp, clear: [grads[0], grads[2]], csr: { ...csr, ...steps } };
}
