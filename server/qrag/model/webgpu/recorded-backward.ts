/**
 * The recorded encoder's backward (recorded-train.ts): the programs of the gradient of the pooled
 * output with respect to every variable, recorded after a keep plan's forward (recorded-encoder.ts
 * buildPlan keeps each layer's activations) into the same plan, one command buffer per call.
 *
 * Order: masked-mean backward; final LN dx, dγ, dβ; per layer in reverse: fc2 (dX = dY·Wᵀ,
 * dW = Xᵀ·dY: matmul.ts with a transposed operand; db = column sums) → GELU backward → fc1 → LN2
 * dx added to the residual stream's gradient, dγ, dβ → proj → attention dQ, dK/dV (attention.ts's
 * programs, the probabilities' mask drawn inline from the forward's key) → QKV → LN1; token rows
 * summed per distinct id over a host-built CSR of their positions, a frequent id's in parts of
 * TOK_SEG (WGSL has no float atomics; one thread per (job, column) keeps the sum deterministic);
 * positions summed over the batch and the parts added up, in one program.
 * Each residual branch's dropout mask (the forward's key) is applied by the LayerNorm dx program
 * before it, which writes the stream's gradient and the branch's (and the embedding's) both.
 */
import { storageDecls, uniformStruct, WG, workgroupSum } from "./raw-program.ts";
import { attentionGrid, attentionTile, backwardKVCode, backwardQCode } from "./attention.ts";
import { lnDxShader, pooledDy } from "./gelu-layernorm.ts";
import { halfKey } from "./half-storage.ts";
import { weightGradients, type GradShape } from "./split-k.ts";
import { rowLanes, rowWorkgroups } from "./row-reduce.ts";
import { MASK_AT_WGSL } from "./dropout.ts";
import { dropoutKeepScale, dropThreshold } from "../../util/mask-hash.ts";
import { productStep, transformerGradSizes, USAGE, type BackPlan, type BufferLike, type PlanBuilder, type Ref, type UniformValues } from "./recorded-encoder.ts";
import { packLayout } from "./grad-pack.ts";

/** The column sums of dy [rows, n], a workgroup per column (as LN_DGB): BERT's type-table gradient (a linear's bias gets its column sums in its weight-gradient product, matmul.ts colSum). */
export const COL_SUM = `${uniformStruct(["rows: u32", "n: u32"])}
${storageDecls(["dy"], ["s"])}
var<workgroup> acc: array<f32, ${WG}>;
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let k = threadIndex(gid) / ${WG}u;
  var sum = 0.0;
  if (k < u.n) {
    for (var r = lid.x; r < u.rows; r += ${WG}u) { sum += dy[r * u.n + k]; }
  }
  ${workgroupSum("sum")}
  if (lid.x == 0u && k < u.n) { s[k] = acc[0]; }
}`;

/**
 * The position table's gradient [max_len, d] (rows t < T summed over the batch, the rest 0) and,
 * in the same program, the token table's rows of the ids TOK_BWD summed in parts: heavy id h's
 * row is the sum of its partial rows heavyStart[h] .. heavyStart[h+1]. Threads: the larger of
 * the two element counts (`nPos`, `nHeavy`).
 */
export const POS_TOK_BWD = `${uniformStruct(["nPos: u32", "B: u32", "T: u32", "d: u32", "nHeavy: u32"])}
${storageDecls(["g", "part", "heavy:i32", "heavyStart:i32"], ["dpos", "dtok"])}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = threadIndex(gid);
  let c = i % u.d;
  if (i < u.nPos) {
    let t = i / u.d;
    var s = 0.0;
    if (t < u.T) {
      for (var b = 0u; b < u.B; b++) { s += g[(b * u.T + t) * u.d + c]; }
    }
    dpos[i] = s;
  }
  if (i < u.nHeavy) {
    let h = i / u.d;
    var s = 0.0;
    for (var r = heavyStart[h]; r < heavyStart[h + 1u]; r++) { s += part[u32(r) * u.d + c]; }
    dtok[u32(heavy[h]) * u.d + c] = s;
  }
}`;

/**
 * The token table's gradient at the batch's ids (the rest cleared before), one thread per (job,
 * column): job j sums g's rows pos[jobStart[j] .. jobStart[j+1]) into the table's row dest[j]
 * (≥ 0), or into partial row −1−dest[j] that POS_TOK_BWD adds up; `n` = jobs·d.
 */
export const TOK_BWD = `${uniformStruct(["n: u32", "d: u32"])}
${storageDecls(["g", "dest:i32", "jobStart:i32", "pos:i32"], ["dtok", "part"])}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = threadIndex(gid);
  if (i >= u.n) { return; }
  let j = i / u.d;
  let c = i % u.d;
  var s = 0.0;
  for (var p = jobStart[j]; p < jobStart[j + 1u]; p++) { s += g[u32(pos[p]) * u.d + c]; }
  let t = dest[j];
  if (t >= 0) { dtok[u32(t) * u.d + c] = s; } else { part[u32(-1 - t) * u.d + c] = s; }
}`;

/**
 * Token positions one thread of the token table's gradient sums at most. An id used more often
 * (PAD, [CLS], a full stop: 900 of 4,096 rows in the reference workload's update) is summed in
 * parts: as one serial loop it took 1.4 ms of the H200's GPU time per pass.
 */
export const TOK_SEG = 32;

/** The batch's token rows grouped by id into TOK_BWD's jobs and POS_TOK_BWD's heavy ids. */
export interface TokenCsr {
  /** Per job: the table row its sum goes to (≥ 0), or −1 − its partial row. */
  dest: Int32Array;
  /** Job j sums the rows pos[jobStart[j] .. jobStart[j+1]) (jobStart has jobs + 1 entries). */
  jobStart: Int32Array;
  /** Row indices grouped by id (in order of first use). */
  pos: Int32Array;
  /** The ids used more than `seg` times, and their partial rows heavyStart[h] .. heavyStart[h+1]. */
  heavy: Int32Array;
  heavyStart: Int32Array;
}

/** How many of each a batch of n rows can need (the plan's buffers): jobs ≤ n, heavy ids < n/seg, partial rows < 2n/seg. */
export function tokenCsrCaps(n: number, seg = TOK_SEG): { jobs: number; heavy: number; parts: number } {
  return { jobs: n, heavy: Math.ceil(n / seg), parts: Math.ceil((2 * n) / seg) };
}

/** The batch's token ids grouped: each distinct id's positions, split into jobs of at most `seg`. */
export function tokenCsr(ids: Int32Array, seg = TOK_SEG): TokenCsr {
  const slot = new Map<number, number>();
  const count: number[] = [];
  const of = new Int32Array(ids.length);
  for (let i = 0; i < ids.length; i++) {
    let s = slot.get(ids[i]);
    if (s === undefined) {
      slot.set(ids[i], (s = count.length));
      count.push(0);
    }
    count[s]++;
    of[i] = s;
  }
  const distinct = [...slot.keys()];
  const start = new Int32Array(distinct.length + 1);
  for (let s = 0; s < count.length; s++) start[s + 1] = start[s] + count[s];
  const fill = start.slice(0, distinct.length);
  const pos = new Int32Array(ids.length);
  for (let i = 0; i < ids.length; i++) pos[fill[of[i]]++] = i;
  const dest: number[] = [], jobStart: number[] = [], heavy: number[] = [], heavyStart = [0];
  let parts = 0;
  distinct.forEach((id, s) => {
    if (count[s] <= seg) {
      dest.push(id);
      jobStart.push(start[s]);
      return;
    }
    heavy.push(id);
    for (let p = start[s]; p < start[s + 1]; p += seg) {
      dest.push(-1 - parts++);
      jobStart.push(p);
    }
    heavyStart.push(parts);
  });
  jobStart.push(ids.length);
  return { dest: Int32Array.from(dest), jobStart: Int32Array.from(jobStart), pos, heavy: Int32Array.from(heavy), heavyStart: Int32Array.from(heavyStart) };
}

type CsrBuffers = Omit<BackPlan["csr"], "tok" | "merge">;

/** The floats of each csrBuffers buffer for N rows of width d (tokenCsr's arrays by tokenCsrCaps, TOK_BWD's partial rows): what a plan allocates and its estimate counts. */
export function csrFloats(N: number, d: number): Record<keyof CsrBuffers, number> {
  const cap = tokenCsrCaps(N);
  return { dest: N, jobStart: N + 1, pos: N, heavy: cap.heavy, heavyStart: cap.heavy + 1, part: cap.parts * d };
}

/** A plan's buffers for tokenCsr's arrays and TOK_BWD's partial rows (csrFloats). */
export function csrBuffers(b: Pick<PlanBuilder, "buf">, N: number, d: number): CsrBuffers {
  const f = csrFloats(N, d);
  return { dest: b.buf(f.dest), jobStart: b.buf(f.jobStart), pos: b.buf(f.pos), heavy: b.buf(f.heavy), heavyStart: b.buf(f.heavyStart), part: b.buf(f.part) };
}

/** The token table's gradient (TOK_BWD) and the position table's with the heavy ids' parts added (POS_TOK_BWD): the steps whose uniforms take a call's counts. */
export function tokenAndPositionSteps(b: Pick<PlanBuilder, "flat">, csr: CsrBuffers, g: BufferLike, dtok: Ref, dpos: Ref, positions: number, B: number, T: number, d: number): Pick<BackPlan["csr"], "tok" | "merge"> {
  const N = B * T;
  const tok = b.flat("qrag_rec_tok_bwd", TOK_BWD, [g, csr.dest, csr.jobStart, csr.pos, dtok, csr.part], [["u", 0], ["u", d]], N * d);
  const merge = b.flat("qrag_rec_pos_tok_bwd", POS_TOK_BWD, [g, csr.part, csr.heavy, csr.heavyStart, dpos, dtok], [["u", positions * d], ["u", B], ["u", T], ["u", d], ["u", 0]], Math.max(positions, tokenCsrCaps(N).heavy) * d);
  return { tok, merge };
}

/**
 * LayerNorm dx over rows of n columns (x, γ, stats, dy), plus `res` where `acc` (the residual
 * stream's gradient), into dx; with `mask` also dx times the dropout mask of the site below into
 * dh (the mask program's hash at the same element index: the same mask ADD_DH applies).
 */
function lnBackCode(n: number, acc: boolean, mask: boolean, half: boolean, pooled = false): string {
  // dγ, dβ as the workgroups' partial sums (split-k.ts sums them at the layer's end)
  const v = acc ? "res[o + k] + d" : "d";
  return lnDxShader({
    n, fields: ["rows: u32", "n: u32", ...(pooled ? ["T: u32"] : []), ...(mask ? ["thr: u32", "keep: f32", "k0: u32", "k1: u32"] : [])],
    read: ["x", "gamma", "stats", "dy", ...(pooled ? ["w"] : []), ...(acc ? ["res"] : [])], write: ["dx", ...(mask ? ["dh"] : [])], x: "x", extra: mask ? MASK_AT_WGSL : "",
    store: mask ? `let g = ${v};\n    dx[o + k] = g;\n    dh[o + k] = g * maskAt(o + k);` : `dx[o + k] = ${v};`, half,
    dy: pooled ? (r) => pooledDy(r) : undefined,
    partials: true,
  });
}

/**
 * A backward's gradient buffer: one for the variables of `sizes`, each gradient a part of it laid
 * out as grad-pack.ts packLayout lays a pack (aligned, zeros between), so the device pass copies
 * it into its pack in a copy a segment.
 */
export function gradientParts(b: Pick<PlanBuilder, "buf">, sizes: readonly number[]): Pick<BackPlan, "grads" | "gradBuf" | "gradFloats"> {
  const { offsets, totals: [total] } = packLayout(sizes);
  const gradBuf = b.buf(total, USAGE.STORAGE | USAGE.COPY_SRC | USAGE.COPY_DST);
  return { grads: sizes.map((n, i) => ({ of: gradBuf, offset: offsets[i] * 4, size: n * 4 })), gradBuf, gradFloats: total };
}

/** The transformer layer's weight gradients in the order its backward takes them: fc2, fc1, the projection, QKV. */
function transformerGrads(d: number, F: number): GradShape[] {
  return [{ m: F, n: d }, { m: d, n: F }, { m: d, n: d }, { m: d, n: 3 * d }];
}

/** Builds the backward's buffers and programs into a keep plan (planFor's `extend`). */
export function buildBackward(b: PlanBuilder): BackPlan {
  const { c, B, T, acts, sites, dropping, half } = b;
  const hk = halfKey(half);
  const d = c.dim, F = c.hidden, H = c.heads, L = c.layers, N = B * T;
  // the variables' gradients in transformer.ts's order, parts of one buffer
  const gp = gradientParts(b, transformerGradSizes(c));
  const grads = gp.grads;
  const dy = b.buf(B * d);
  // dH, dH2: the masked gradients of a layer's two LayerNorms, apart, so the weight gradients
  // that read them can wait for the layer's end (split-k.ts weightGradients' flush)
  const gA = b.buf(N * d), gB = b.buf(N * d), dH = b.buf(N * d), dH2 = b.buf(N * d), dHN = b.buf(N * d), dCtx = b.buf(N * d), dq = b.buf(N * d);
  const dsum = b.buf(B * H * T), dqkv = b.buf(N * 3 * d), dF1 = b.buf(N * F);
  const csr = csrBuffers(b, N, d);
  const wg = weightGradients(b, transformerGrads(d, F), N, { rows: N, d });

  const thr = dropThreshold(dropping ? c.dropout : 0), keep = dropping ? dropoutKeepScale(c.dropout) : 1;
  const maskFields: UniformValues = [["u", thr], ["f", keep], ["u", 0], ["u", 0]];
  /**
   * The gradients of x·W + b (W variable w, [n, k] in the forward) given dY = g [N, k]: dX (times
   * GELU′ of `geluIn`, the forward's value before the GELU that gave x, where given), then dW and
   * db in one product (split along K where it has few tiles; `half`: x is an f16 activation).
   */
  const linearBack = (g: BufferLike, x: BufferLike, w: number, dx: BufferLike, n: number, k: number, geluIn?: BufferLike): void => {
    b.step(productStep({ a: g, b: [{ weight: w }], out: [dx], m: N, n, k, trans: { b: true }, actGrad: geluIn && { act: "gelu", p: geluIn, half } }));
    wg.gradient({ a: x, b: [g], out: [grads[w]], m: n, n: k, k: N, trans: { a: true }, hA: half, sums: [grads[w + 1]] });
  };
  const rows: UniformValues = [["u", N], ["u", d]];
  const lanes = rowLanes(d);
  /**
   * A LayerNorm's dx (plus `res`, the residual stream's gradient, when given) into `out`, and dγ,
   * dβ (partial sums, added up at the next flush); the gradient of the residual branch that
   * `site`'s mask multiplies comes back: `out` times that mask, written by the same program into
   * `masked` (out itself when nothing drops).
   */
  const lnBack = (x: BufferLike, stats: BufferLike, gamma: number, g: BufferLike, res: BufferLike | null, out: BufferLike, site: number | undefined, masked: BufferLike, pooled = false): BufferLike => {
    const masking = site !== undefined;
    const key = `qrag_ln_dx${res ? "_acc" : ""}${masking ? "_mask" : ""}${pooled ? "_pool" : ""}_part_${lanes}${hk}`;
    const uniforms: UniformValues = [...rows, ...(pooled ? [["u", T] as ["u", number]] : []), ...(masking ? maskFields : [])];
    b.step({ key, code: () => lnBackCode(d, res !== null, masking, half, pooled), refs: [x, { weight: gamma }, stats, g, ...(pooled ? [b.poolW] : []), ...(res ? [res] : []), out, ...(masking ? [masked] : []), wg.lnSums(grads[gamma], grads[gamma + 1])], uniforms, grid: rowWorkgroups(N, d), stride: 0, draw: site });
    return masking ? masked : out;
  };

  // the final LayerNorm's backward reads the pooling's gradient spread over the rows as it goes (pooledDy: no program of its own)
  const nf = 2 + L * 12;
  let g = lnBack(acts.x[L], acts.lnfSt, nf, dy, null, gA, sites.res2[L - 1], dH, true);
  const dh = d / H;
  const tile = attentionTile(dh, b.device.limits.maxComputeWorkgroupStorageSize ?? 16384);
  // the probabilities' dropout mask drawn inline from the forward's key, as the forward did
  const attDrop = dropping ? "inline" : false;
  const attKey = `packed_${dh}_${tile}_${dropping ? "inline" : "nodrop"}${hk}`;
  const attUniforms: UniformValues = [["u", B], ["u", T], ["u", H], ["u", d], ["f", 1 / Math.sqrt(dh)], ...(dropping ? maskFields : [])];
  let cur = gA, other = gB;
  for (let l = L - 1; l >= 0; l--) {
    const o = 2 + l * 12;
    // x_out = mid + drop(fc2(gelu(fc1(LN2(mid))))): g is the stream's gradient times res2's mask
    linearBack(g, acts.f2[l], o + 10, dF1, F, d, acts.f1[l]);
    linearBack(dF1, acts.hN2[l], o + 8, dHN, d, F);
    g = lnBack(acts.mid[l], acts.st2[l], o + 6, dHN, cur, other, sites.res1[l], dH2);
    [cur, other] = [other, cur];
    // mid = x + drop(proj(attn(QKV(LN1(x)))))
    linearBack(g, acts.ctx[l], o + 4, dCtx, d, d);
    const grid = attentionGrid(B, H, T);
    const draw = sites.att[l];
    b.step({ key: `qrag_attn_bwdq_${attKey}`, code: () => backwardQCode(dh, "packed", attDrop, tile, half), refs: [acts.qkv[l], b.mask, acts.attSt[l], dCtx, acts.ctx[l], dq, dsum], uniforms: attUniforms, grid, stride: 0, draw });
    b.step({ key: `qrag_attn_bwdkv_${attKey}`, code: () => backwardKVCode(dh, "packed", attDrop, tile, half), refs: [acts.qkv[l], b.mask, acts.attSt[l], dCtx, dsum, dq, dqkv], uniforms: attUniforms, grid, stride: 0, draw });
    linearBack(dqkv, acts.hN1[l], o + 2, dHN, d, 3 * d);
    wg.flush();
    // the next branch down: the layer below's res2, or the embedding's dropout
    g = lnBack(acts.x[l], acts.st1[l], o, dHN, cur, other, l > 0 ? sites.res2[l - 1] : sites.emb, dH);
    [cur, other] = [other, cur];
  }
  wg.flush(); // layer 0's first LayerNorm's dγ, dβ
  const gE = g;
  const steps = tokenAndPositionSteps(b, csr, gE, grads[0], grads[1], c.max_len, B, T, d);
  return { steps: b.list, dy, ...gp, clear: [grads[0]], csr: { ...csr, ...steps } };
}
