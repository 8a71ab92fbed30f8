/**
 * The rest of a transformer layer after its QKV product as one program, for the no-grad forwards
 * of few rows (a rollout step's states, a greedy episode's): the attention of the block's rows
 * over their sequences' keys, the output product with its residual, dropout and LayerNorm, fc1
 * with GELU, fc2 with its residual, dropout and LayerNorm, then the next layer's QKV product (or,
 * after the last layer, the final LayerNorm's rows for the pooling). recorded-encoder.ts runs it
 * in place of five programs a layer (attention, proj + res-LN, fc1 + GELU, fc2 + res-LN, the next
 * QKV): a rollout step's forward of the reference workload then takes 3 programs instead of
 * 10–11 (4 with its lock-step, which pools).
 *
 * Why only for few rows: each workgroup reads every weight of the layer (0.8 MB at d 128) for its
 * 16 rows, where a tiled product shares a weight tile among all its rows, and its attention
 * reads its sequences' keys and values from global memory, where attention.ts stages them in
 * workgroup memory for 256 queries; for many rows the separate programs should cost less GPU
 * time than the dispatches they take (the bound, TAIL_MAX_ROWS, is a guess until a GPU times
 * bench/layer-tail.ts).
 *
 * Its values are the separate programs' bits: the attention runs a query as attention.ts's
 * forward does (a thread per row and head, keys in order, the same online softmax and dropout
 * mask); each product sums k in order with fma (as the tiled matmul does) and adds its bias
 * after; each LayerNorm sums a row in the partial sums and order of matmul.ts's residual +
 * LayerNorm epilogue (16 lanes a row, a lane's columns as that tile's thread holds them); the
 * dropout masks are dropout.ts's at the same indices and keys.
 *
 * A workgroup of 256 threads holds 16 rows: a thread owns a column quad (4 columns, one vec4
 * load of each weight row) of 1–2 rows (`quads`); the hidden layer goes through workgroup memory
 * 64 columns at a time. The residual stream is read and written in place (each workgroup its own
 * rows); the next QKV goes to another buffer than the one the attention reads (tailNeedsQkvBuffer).
 * On lavapipe, before the attention joined it, the
 * program was up to 27 % slower per forward than the programs it replaced (bench/layer-tail.ts,
 * whose GPU figures decide the default: untimed on a GPU yet).
 */
import { MASK_AT_WGSL } from "./dropout.ts";
import { ERF_WGSL, geluExpr } from "./gelu-layernorm.ts";
import { resLnTile } from "./matmul.ts";
import { storageDecls } from "./raw-program.ts";

/** Rows per workgroup. */
export const TAIL_ROWS = 16;
const THREADS = 256;
/** Hidden columns per step of the MLP (through workgroup memory), or all of them where fewer. */
const chunkOf = (F: number): number => Math.min(F, 64);
/** Lanes summing a row's statistics: the residual + LayerNorm epilogue's threads per row (its tile's wx). */
const LANES = 16;
/** Storage buffers the program binds (the QKV variant): this layer's QKV, the mask, 12 weights; the stream (in place), the next QKV. */
export const TAIL_BINDINGS = 16;
/**
 * Rows up to which a no-grad forward takes the layer tail: a rollout step of the reference
 * workload has 4 states of up to 256 tokens (1,024 rows), a greedy episode's state 1 × 256.
 * Untimed on a GPU yet: the bench's --layer-tail 0 runs the separate programs to compare.
 */
export const TAIL_MAX_ROWS = 2048;

let tailOn = true;
/** The bench's `--layer-tail 0|1`: whether plans built after take the layer tail where it fits. */
export function setLayerTail(on: boolean): void {
  tailOn = on;
}
export const layerTailOn = (): boolean => tailOn;

/** The limits the program needs (GPUSupportedLimits' names). */
interface Limits {
  maxStorageBuffersPerShaderStage?: number;
  maxComputeWorkgroupStorageSize?: number;
  maxComputeInvocationsPerWorkgroup?: number;
}

/** Workgroup memory of the program at width d: the rows, a hidden chunk, the lanes' sums, the row stats, and the attention's key lanes' softmax states. */
const sharedBytes = (d: number, F: number): number => 4 * (TAIL_ROWS * d + TAIL_ROWS * chunkOf(F) + THREADS + 2 * TAIL_ROWS + 2 * THREADS);

/** The widths the program's thread layout takes: column quads of d and of the hidden chunk that divide 256 threads, d up to the epilogue's 128 columns, a chunk of at least 16. */
export const widthsFit = (d: number, F: number): boolean => {
  const ch = chunkOf(F);
  return d >= 4 && d <= 128 && d % 4 === 0 && THREADS % (d / 4) === 0 && ch >= 16 && ch % 4 === 0 && THREADS % (ch / 4) === 0 && F % ch === 0;
};

/**
 * Whether a no-grad plan at width d, hidden F needs a buffer for the tail's next QKV of its own:
 * the tail writes it into fc2's input buffer where that holds it (F ≥ 3·d), else into this one.
 * Decided by the widths alone, not the rows: the plans of a family run on one plan's buffers,
 * made in one order (recorded-encoder.ts planBuffers).
 */
export const tailNeedsQkvBuffer = (d: number, F: number): boolean => widthsFit(d, F) && F < 3 * d;

/**
 * Whether a no-grad forward of `rows` rows at width d, hidden F takes the layer tail: on, few
 * rows, widths the layout takes (widthsFit: the reference's 128 and 512, the counts shape's 4
 * and 16), and a device that binds 16 storage buffers and holds the workgroup memory.
 */
export function layerTailFits(limits: Limits, d: number, F: number, rows: number): boolean {
  return tailOn && rows <= TAIL_MAX_ROWS && widthsFit(d, F)
    && (limits.maxStorageBuffersPerShaderStage ?? 8) >= TAIL_BINDINGS
    && (limits.maxComputeWorkgroupStorageSize ?? 16384) >= sharedBytes(d, F)
    && (limits.maxComputeInvocationsPerWorkgroup ?? 256) >= THREADS;
}

/**
 * Uniform fields after `stride`: rows; d, F and the hidden chunk as the loops' bounds; the
 * sequences' length and the attention's scale; eps; the dropout's thr and keep, then the keys of
 * its three sites in order: the attention's probabilities, the residual after proj, the one after
 * fc2 (k0, k1: recorded-encoder.ts fills the last two from `draw`, the four before from `earlierDraws`).
 */
const TAIL_FIELDS = ["M: u32", "D: u32", "F: u32", "CH: u32", "T: u32", "scale: f32", "eps: f32", "thr: u32", "keep: f32", "k0c: u32", "k1c: u32", "k0a: u32", "k1a: u32", "k0: u32", "k1: u32"];

/**
 * The uniform values (after `stride`) of a tail over `rows` rows of sequences of T at width d,
 * hidden F, heads of dh: the loops' bounds come in as uniforms, not constants, because LLVM
 * (lavapipe) unrolled the short constant loops at d 32 into a program that took 50 s to compile;
 * the keys are zeros for the caller to fill.
 */
export function tailUniforms(rows: number, T: number, d: number, F: number, dh: number, eps: number, thr: number, keep: number): ["u" | "f", number][] {
  return [["u", rows], ["u", d], ["u", F], ["u", chunkOf(F)], ["u", T], ["f", 1 / Math.sqrt(dh)], ["f", eps], ["u", thr], ["f", keep], ["u", 0], ["u", 0], ["u", 0], ["u", 0], ["u", 0], ["u", 0]];
}

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/**
 * A thread layout over a block of 16 rows × `width` columns: thread t owns column quad t mod
 * width/4 (4 columns as a vec4) of rows g, g + G, … (g = t div width/4, named `gv` in the WGSL;
 * G groups; `own` indexes a thread's rows); where 256 threads are more than 16 groups, groups past
 * the 16th sit out (`owns`: the condition that a group owns rows, null where all do).
 */
function quads(width: number, gv: string) {
  const Q = width / 4;
  const G = Math.min(THREADS / Q, TAIL_ROWS);
  const owns = THREADS / Q > TAIL_ROWS ? `${gv} < ${TAIL_ROWS}u` : null;
  return {
    Q, own: range(TAIL_ROWS / G), owns,
    /** Row i of the thread's, in the block. */
    lr: (i: number): string => `${gv} + ${i * G}u`,
    /** A statement only the groups that own rows run. */
    mine: (stmt: string): string => (owns ? `if (${owns}) { ${stmt} }` : stmt),
  };
}

/**
 * WGSL of the tail at width d, hidden F, heads of dh (the attention's probabilities drop where
 * thr > 0: a uniform branch, one pipeline for eval and train mode, as the pipelines' compile is
 * what lavapipe pays); `last`: the final LayerNorm's rows into y (no QKV, the stream only read), else the
 * residual stream x in place and the next layer's QKV into qkv.
 * Reads: this layer's QKV and the key mask (f32), then (x,) Wo, bo, γ₁, β₁, W1, b1, W2, b2, γₙ,
 * βₙ (+ Wqkv, bqkv), as vec4 arrays.
 */
export function layerTailShader(d: number, F: number, last: boolean, dh: number, lanes = 1): string {
  const tile = resLnTile(d);
  if (!tile || tile.wx !== LANES || !widthsFit(d, F) || d % dh !== 0 || !(lanes >= 1 && lanes <= TAIL_ROWS && TAIL_ROWS % lanes === 0)) throw new Error(`layerTailShader: width ${d}, hidden ${F}, heads of ${dh} do not fit`);
  const CHUNK = chunkOf(F);
  const o4 = quads(d, "g");
  const h4 = quads(CHUNK, "hg");
  const Q = o4.Q, HQ = h4.Q, FQ = F / 4;
  const L: string[] = [];
  const row = (i: number): string => `row0 + ${o4.lr(i)}`;
  const inRows = (i: number): string => `${o4.owns ? `${o4.owns} && ` : ""}${row(i)} < u.M`;
  /**
   * acc_i (vec4: the thread's column quad) += Σ_k a[row_i, k]·W[k, quad] over K, k in order with
   * fma, 4 k at a time (the rows' vec4 along k from workgroup memory `mem` of `width` columns).
   */
  const product = (l: ReturnType<typeof quads>, accs: string[], K: string, mem: string, width: number, w: (k: string) => string): void => {
    if (l.owns) L.push(`  if (${l.owns}) {`);
    L.push(`  for (var k = 0u; k < ${K}; k += 4u) {`);
    for (let q = 0; q < 4; q++) L.push(`    let wk${q} = ${w(`k + ${q}u`)};`);
    accs.forEach((a, i) => {
      L.push(`    { let x = ${mem}[(${l.lr(i)}) * ${width / 4}u + k / 4u]; ${range(4).map((q) => `${a} = fma(vec4<f32>(x[${q}]), wk${q}, ${a});`).join(" ")} }`);
    });
    L.push(`  }`);
    if (l.owns) L.push(`  }`);
  };
  const at = (lr: string, col: string): string => `sa[((${lr}) * ${d}u + ${col}) / 4u][(${col}) % 4u]`;
  /**
   * The row stats of the rows in `sa` into st (mean at lr, 1/√(var + eps) at R + lr): 16 lanes a
   * row, lane x summing columns (j·16 + x)·4 + q as the epilogue's thread x holds them, the lanes'
   * sums then added in order; two passes (the variance around the mean).
   */
  const stats = (): void => {
    const cols = range(tile.tn / 4).flatMap((j) => range(4).map((q) => `(${j * LANES}u + lane) * 4u + ${q}u`));
    const pass = (term: (v: string) => string, finish: string): void => {
      L.push(`  { var s = 0.0;`);
      for (const col of cols) L.push(`    { let n = ${col}; if (n < ${d}u) { ${term(at("slr", "n"))} } }`);
      L.push(`    red[tid] = s; }`, `  workgroupBarrier();`);
      L.push(`  if (tid < ${TAIL_ROWS}u) { var t = 0.0; for (var w = 0u; w < ${LANES}u; w++) { t += red[tid * ${LANES}u + w]; } ${finish} }`, `  workgroupBarrier();`);
    };
    pass((v) => `s += ${v};`, "st[tid] = t / nf;");
    pass((v) => `let e = ${v} - st[slr]; s += e * e;`, `st[${TAIL_ROWS}u + tid] = inverseSqrt(t / nf + u.eps);`);
  };
  /** The thread's quad of row i in sa. */
  const saAt = (i: number): string => `sa[(${o4.lr(i)}) * ${Q}u + cq]`;
  const normed = (v: string, i: number, g: string, b: string): string => `((${v} - vec4<f32>(st[${o4.lr(i)}])) * vec4<f32>(st[${TAIL_ROWS}u + ${o4.lr(i)}])) * ${g}[cq] + ${b}[cq]`;
  const own = o4.own;

  L.push(`@compute @workgroup_size(${THREADS})`);
  L.push(`fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {`);
  L.push(`  let tid = lid.x;`, `  let row0 = wid.x * ${TAIL_ROWS}u;`, `  let cq = tid % ${Q}u;`, `  let g = tid / ${Q}u;`, `  let hq = tid % ${HQ}u;`, `  let hg = tid / ${HQ}u;`);
  L.push(`  let slr = tid / ${LANES}u;`, `  let lane = tid % ${LANES}u;`, `  let nf = f32(${d});`);
  // the attention of the block's rows into sa (rows past M as zeros): `lanes` threads per (row,
  // head), lane i taking keys i, i + lanes, … as attention.ts's forward splits a query's keys
  // (its tiles hold a multiple of the lanes), its online softmax and dropout mask, then the lanes'
  // states combined as attention.ts's combineLanes does; the lanes' sums pass through sh. Threads
  // next to each other hold the block's rows for one head and lane: they read the same keys.
  const HB = THREADS / (TAIL_ROWS * lanes);
  const pairLanes = (i: string): string => `tid + ${TAIL_ROWS * HB}u * ${i}`;
  L.push(`  for (var e = tid; e < ${TAIL_ROWS * Q}u; e += ${THREADS}u) { sa[e] = vec4<f32>(0.0); }`);
  L.push(`  workgroupBarrier();`);
  L.push(`  let H = u.D / DH;`);
  L.push(`  for (var h0 = 0u; h0 < H; h0 += ${HB}u) {
    let lr = tid % ${TAIL_ROWS}u;
    let h = h0 + (tid / ${TAIL_ROWS}u) % ${HB}u;
    let kl = tid / ${TAIL_ROWS * HB}u;
    let r = row0 + lr;
    let live = h < H && r < u.M;
    let so = lr * u.D + h * DH;
    var m = -3.0e38;
    var l = 0.0;
    var acc: array<f32, DH>;
    for (var c = 0u; c < DH; c++) { acc[c] = 0.0; }
    if (live) {
      let b = r / u.T;
      let idx = (b * H + h) * u.T + r % u.T;
      let qo = r * 3u * u.D + h * DH;
      var qs: array<f32, DH>;
      for (var c = 0u; c < DH; c++) { qs[c] = qkvIn[qo + c] * u.scale; }
      for (var jt = kl; jt < u.T; jt += ${lanes}u) {
        let ko = (b * u.T + jt) * 3u * u.D + h * DH;
        var s = 0.0;
        for (var c = 0u; c < DH; c++) { s += qs[c] * qkvIn[ko + u.D + c]; }
        s += select(-1e9, 0.0, mask[b * u.T + jt] > 0.0);
        let mn = max(m, s);
        let corr = exp(m - mn);
        let p = exp(s - mn);
        l = l * corr + p;
        var w = p;
        if (u.thr > 0u) { w = p * maskKeyed(u.k0c, u.k1c, idx * u.T + jt); }
        for (var c = 0u; c < DH; c++) { acc[c] = acc[c] * corr + w * qkvIn[ko + 2u * u.D + c]; }
        m = mn;
      }
    }`);
  if (lanes === 1) {
    L.push(`    if (live) { for (var c = 0u; c < DH; c++) { sa[(so + c) / 4u][(so + c) % 4u] = acc[c] / l; } }`);
  } else {
    const cw = Math.min(dh, Math.max(1, (TAIL_ROWS * CHUNK) / THREADS));
    L.push(`    lm[tid] = m;
    ll[tid] = l;
    workgroupBarrier();
    var f: array<f32, ${lanes}>;
    if (kl == 0u) {
      var mx = m;
      for (var i = 1u; i < ${lanes}u; i++) { mx = max(mx, lm[${pairLanes("i")}]); }
      l = 0.0;
      for (var i = 0u; i < ${lanes}u; i++) {
        f[i] = exp(lm[${pairLanes("i")}] - mx);
        l += ll[${pairLanes("i")}] * f[i];
      }
    }
    for (var c0 = 0u; c0 < DH; c0 += ${cw}u) {
      for (var q = 0u; q < ${cw}u; q++) { let e = tid * ${cw}u + q; sh[e / 4u][e % 4u] = acc[c0 + q]; }
      workgroupBarrier();
      if (live && kl == 0u) {
        for (var q = 0u; q < ${cw}u; q++) {
          var a = 0.0;
          for (var i = 0u; i < ${lanes}u; i++) { let e = (${pairLanes("i")}) * ${cw}u + q; a += sh[e / 4u][e % 4u] * f[i]; }
          let col = so + c0 + q;
          sa[col / 4u][col % 4u] = a / l;
        }
      }
      workgroupBarrier();
    }`);
  }
  L.push(`  }`);
  L.push(`  workgroupBarrier();`);
  // the output product, then v = x + (a + bo)·m (the first dropout site)
  for (const i of own) L.push(`  var a${i} = vec4<f32>(0.0);`);
  product(o4, own.map((i) => `a${i}`), "u.D", "sa", d, (k) => `wo[(${k}) * ${Q}u + cq]`);
  for (const i of own) L.push(`  var v${i} = vec4<f32>(0.0);`, `  if (${inRows(i)}) { let o = (${row(i)}) * ${d}u + cq * 4u; v${i} = x[(${row(i)}) * ${Q}u + cq] + (a${i} + bo[cq]) * maskQuad(u.k0a, u.k1a, o); }`);
  L.push(`  workgroupBarrier();`);
  for (const i of own) L.push(`  ${o4.mine(`${saAt(i)} = v${i};`)}`);
  L.push(`  workgroupBarrier();`);
  stats();
  // LayerNorm 2 into sa, the MLP's input
  for (const i of own) L.push(`  ${o4.mine(`${saAt(i)} = ${normed(`v${i}`, i, "g1", "be1")};`)}`);
  L.push(`  workgroupBarrier();`);
  // fc1 + GELU a chunk of hidden columns at a time into sh, then fc2's sums over it
  for (const i of own) L.push(`  var f${i} = vec4<f32>(0.0);`);
  L.push(`  for (var j0 = 0u; j0 < u.F; j0 += u.CH) {`);
  for (const i of h4.own) L.push(`  var h${i} = vec4<f32>(0.0);`);
  product(h4, h4.own.map((i) => `h${i}`), "u.D", "sa", d, (k) => `w1[(${k}) * ${FQ}u + j0 / 4u + hq]`);
  L.push(`  workgroupBarrier();`);
  for (const i of h4.own) L.push(`  ${h4.mine(`sh[(${h4.lr(i)}) * ${HQ}u + hq] = gelu4(h${i} + b1[j0 / 4u + hq]);`)}`);
  L.push(`  workgroupBarrier();`);
  product(o4, own.map((i) => `f${i}`), "u.CH", "sh", CHUNK, (k) => `w2[(j0 + ${k}) * ${Q}u + cq]`);
  L.push(`  }`);
  // v2 = v + (f + b2)·m (the second dropout site), then the next LayerNorm
  for (const i of own) L.push(`  var y${i} = vec4<f32>(0.0);`, `  if (${inRows(i)}) { let o = (${row(i)}) * ${d}u + cq * 4u; y${i} = v${i} + (f${i} + b2[cq]) * maskQuad(u.k0, u.k1, o); }`);
  L.push(`  workgroupBarrier();`);
  for (const i of own) L.push(`  ${o4.mine(`${saAt(i)} = y${i};`)}`);
  L.push(`  workgroupBarrier();`);
  stats();
  if (last) {
    for (const i of own) L.push(`  if (${inRows(i)}) { y[(${row(i)}) * ${Q}u + cq] = ${normed(`y${i}`, i, "gn", "bn")}; }`);
  } else {
    // the residual stream out (in place: the block's own rows, read above); the next layer's LayerNorm into sa, and its QKV product
    for (const i of own) L.push(`  if (${inRows(i)}) { x[(${row(i)}) * ${Q}u + cq] = y${i}; }`);
    for (const i of own) L.push(`  ${o4.mine(`${saAt(i)} = ${normed(`y${i}`, i, "gn", "bn")};`)}`);
    L.push(`  workgroupBarrier();`);
    for (let p = 0; p < 3; p++) {
      for (const i of own) L.push(`  var q${p}_${i} = vec4<f32>(0.0);`);
      product(o4, own.map((i) => `q${p}_${i}`), "u.D", "sa", d, (k) => `wq[(${k}) * ${3 * Q}u + ${p * Q}u + cq]`);
      for (const i of own) L.push(`  if (${inRows(i)}) { qkv[(${row(i)}) * ${3 * Q}u + ${p * Q}u + cq] = q${p}_${i} + bq[${p * Q}u + cq]; }`);
    }
  }
  L.push(`}`);
  const weights = ["wo", "bo", "g1", "be1", "w1", "b1", "w2", "b2", "gn", "bn", ...(last ? [] : ["wq", "bq"])];
  const v4 = (names: string[]) => names.map((n) => `${n}:vec4<f32>`);
  return `struct U { stride: u32, ${TAIL_FIELDS.join(", ")} };
const DH: u32 = ${dh}u;
${storageDecls(["qkvIn", "mask", ...v4(last ? ["x", ...weights] : weights)], v4(last ? ["y"] : ["x", "qkv"]))}
${MASK_AT_WGSL}
fn maskQuad(k0: u32, k1: u32, o: u32) -> vec4<f32> { return vec4<f32>(maskKeyed(k0, k1, o), maskKeyed(k0, k1, o + 1u), maskKeyed(k0, k1, o + 2u), maskKeyed(k0, k1, o + 3u)); }
${ERF_WGSL}
fn gelu1(x: f32) -> f32 { return ${geluExpr("x")}; }
fn gelu4(v: vec4<f32>) -> vec4<f32> { return vec4<f32>(gelu1(v.x), gelu1(v.y), gelu1(v.z), gelu1(v.w)); }
var<workgroup> sa: array<vec4<f32>, ${(TAIL_ROWS * d) / 4}>;
var<workgroup> sh: array<vec4<f32>, ${(TAIL_ROWS * CHUNK) / 4}>;
var<workgroup> red: array<f32, ${THREADS}>;
var<workgroup> st: array<f32, ${2 * TAIL_ROWS}>;
var<workgroup> lm: array<f32, ${THREADS}>;
var<workgroup> ll: array<f32, ${THREADS}>;
${L.join("\n")}`;
}
