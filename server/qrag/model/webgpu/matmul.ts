/**
 * Tiled matrix product C[b] = A[b]·B[b] in our own WGSL (row-major float32; A [batch|1, M, K],
 * B [batch|1, K, N]; a batch of 1 broadcasts).
 *
 * Why our own: tfjs-webgpu 4.22's matMul reached 0.41–0.47× PyTorch-CUDA's fp32 on an H100. This
 * is the register-blocked SGEMM shape that fast GPU BLAS kernels use: a workgroup of WX×WY
 * threads owns a BM×BN tile of C (BM = 4·TM4·WY… see `tileOf`), stages BK-deep slices of A
 * (transposed) and B in workgroup memory, and each thread accumulates a TM×TN block in
 * registers (vec4 columns, fully unrolled so the compiler keeps them in registers). Thread
 * (x, y) owns the rows and column vectors strided by WY and WX, so neighbouring threads read
 * neighbouring vec4s of workgroup memory (no bank conflicts) and write coalesced rows of C.
 * When M, N and K are multiples of the tile, the program reads and writes vec4s with no bounds
 * checks ("aligned"); otherwise it reads scalars with checks.
 */
import * as tf from "@tensorflow/tfjs";
import { runRawProgram, storageDecls, webgpuBackend, type WebgpuBackendLike } from "./raw-program.ts";
import { ACT_GRAD_WGSL, ERF_WGSL, geluExpr, type Activation } from "./gelu-layernorm.ts";
import { actType, enableHalf, readAct, writeAct } from "./half-storage.ts";
import { MASK_AT_WGSL } from "./dropout.ts";

/** The epilogue: none, GELU (erf form) of each result, or GELU with the value before it kept too. */
export type Epilogue = boolean | "keep";

export interface MatmulTile {
  /** Threads per workgroup along N (x) and M (y). */
  wx: number;
  wy: number;
  /** Rows and columns of C per thread (multiples of 4). */
  tm: number;
  tn: number;
  /** Depth of the K slice staged in workgroup memory per step (a multiple of 4). */
  bk: number;
  /**
   * Aligned programs load the next K slice into registers while computing on this one (stored to
   * workgroup memory after the barrier): the global loads' latency hidden behind the FMAs.
   */
  prefetch?: boolean;
}

/**
 * Tiles the bench times. H200, fp32, two leases: 64x128-k8 led at 2048³ and 4096³ (31.8 and 33.5
 * TFLOP/s); at 1024³ 64x64-k16 gave 17.9 and 22.1, 128x64-k16 16.7 and 23.7.
 */
export const MATMUL_TILES: Record<string, MatmulTile> = {
  "128x128-k8": { wx: 16, wy: 16, tm: 8, tn: 8, bk: 8 },
  "128x128-k16": { wx: 16, wy: 16, tm: 8, tn: 8, bk: 16 },
  "64x64-k16": { wx: 16, wy: 16, tm: 4, tn: 4, bk: 16 },
  "128x64-k16": { wx: 16, wy: 16, tm: 8, tn: 4, bk: 16 },
  "64x64-t8x8-k16": { wx: 8, wy: 8, tm: 8, tn: 8, bk: 16 },
  "64x128-k8": { wx: 16, wy: 8, tm: 8, tn: 8, bk: 8 },
  "32x32-k16": { wx: 8, wy: 8, tm: 4, tn: 4, bk: 16 },
  // the next slice prefetched into registers: untimed on a GPU yet, so no product takes them by default
  "64x128-k8-pf": { wx: 16, wy: 8, tm: 8, tn: 8, bk: 8, prefetch: true },
  "64x64-t8x8-k16-pf": { wx: 8, wy: 8, tm: 8, tn: 8, bk: 16, prefetch: true },
  "64x64-k16-pf": { wx: 16, wy: 16, tm: 4, tn: 4, bk: 16, prefetch: true },
  "32x32-k16-pf": { wx: 8, wy: 8, tm: 4, tn: 4, bk: 16, prefetch: true },
};

/** The default tile (large products), the one for products of few tiles, and the one for products of fewer still. */
export const DEFAULT_TILE = MATMUL_TILES["64x128-k8"];
const SMALL_TILE = MATMUL_TILES["64x64-k16"];
const TINY_TILE = MATMUL_TILES["32x32-k16"];

/** Workgroups that spread a product over a big GPU: about one per SM (an H100/H200 has 132). */
const SPREAD = 128;

const blocks = (m: number, n: number, side: number): number => Math.ceil(m / side) * Math.ceil(n / side);

let tinyTiles = true;
/** The bench's `--tiny-tiles 0|1`: whether products of few 64×64 blocks take 32×32 tiles, for plans built after. */
export function setTinyTiles(on: boolean): void {
  tinyTiles = on;
}
export const tinyTilesOn = (): boolean => tinyTiles;

let oneTile = false;
/**
 * Runs f (a taped plan's build) with every product but the weight gradients on DEFAULT_TILE: the
 * state and action encoders' programs run as one dispatch (fused-steps.ts) only where their
 * workgroups have as many threads, and beside the state encoder's products the action encoder's
 * need no smaller tiles to spread over the GPU.
 */
export function withOneTile<T>(f: () => T): T {
  oneTile = true;
  try {
    return f();
  } finally {
    oneTile = false;
  }
}

/**
 * The tile for an m×n product: 64×128 once there are about as many 128×128 blocks as a big GPU
 * has SMs, else 64×64, else (unless `tiny` is false, or the bench's --tiny-tiles 0) 32×32 where
 * even 64×64 blocks are fewer than that. A rollout step's products (one state of 128 tokens by
 * BERT-base's 768 columns: 24 blocks of 64×64) each ran on a few SMs walking all of K (~0.1 ms
 * each on the H200, run 6); 32×32 gives 4× the workgroups, each a quarter of the work. A weight
 * gradient (`tiny` false) splits along K instead (split-k.ts).
 */
export function tileFor(m: number, n: number, tiny = true): MatmulTile {
  if (blocks(m, n, 128) >= SPREAD || (oneTile && tiny)) return DEFAULT_TILE;
  return !(tiny && tinyTiles) || blocks(m, n, 64) >= SPREAD ? SMALL_TILE : TINY_TILE;
}

export const tileName = (t: MatmulTile) => `${t.tm * t.wy}x${t.tn * t.wx}-k${t.bk}-t${t.wx}x${t.wy}${t.prefetch ? "-pf" : ""}`;

/** The tile's C block and the checks that its loads divide evenly among the threads. */
function tileOf(t: MatmulTile) {
  const threads = t.wx * t.wy;
  const bm = t.tm * t.wy;
  const bn = t.tn * t.wx;
  if (t.tm % 4 || t.tn % 4 || t.bk % 4) throw new Error(`matmul tile ${tileName(t)}: tm, tn and bk must be multiples of 4`);
  if (((bm * t.bk) / 4) % threads || ((t.bk * bn) / 4) % threads) throw new Error(`matmul tile ${tileName(t)}: the A and B slices do not divide among ${threads} threads`);
  return { threads, bm, bn };
}

/**
 * Which operands are stored transposed: `a` — A is held as [K, M] (C = Aᵀ·B, a weight gradient
 * Xᵀ·dY), `b` — B as [N, K] (C = A·Bᵀ, an input gradient dY·Wᵀ). Only the tile loads change.
 */
export interface MatmulTrans {
  a?: boolean;
  b?: boolean;
}

/** Which of a product's operands are f16 activations (half-storage.ts): A, the result C (and a kept P), or the P an activation's gradient reads (actGrad). */
export interface HalfOperands {
  a?: boolean;
  c?: boolean;
  p?: boolean;
}

/** Key suffix of the f16 operands: "-h16" for both (a forward's linear), "-hA" for A alone (a weight's gradient Xᵀ·dY). */
export const halfName = (h: HalfOperands): string => `${h.a && h.c ? "-h16" : h.a ? "-hA" : h.c ? "-hC" : ""}${h.p ? "-hP" : ""}`;

/** Key suffix of the transposes (empty for none). */
export const transName = (tr: MatmulTrans) => `${tr.a ? "-tA" : ""}${tr.b ? "-tB" : ""}`;

/** What a tile's program computes besides C = A·B (matmulShader). */
export interface ShaderOptions {
  /** Adds a [N] row. */
  bias?: boolean;
  /** Reads A or B transposed (the aligned loads stay vec4: along m for Aᵀ, along k for Bᵀ). */
  trans?: MatmulTrans;
  /** GELU (erf form) of each result (the recorded no-grad fc1); "keep": the value before it into P too. */
  gelu?: Epilogue;
  /**
   * C = dY·f′(P) for dY = A·B: the activation's backward (gelu-layernorm.ts ACT_GRAD_WGSL, the same
   * bits as its program) on the way out of the product that gives its input's gradient, with P
   * [M, N] the forward's value before the activation (a backward's fc2 dX and GELU in one program).
   */
  actGrad?: Activation;
  /** Adds R, a [M, N] operand like C (a recorded backward sums an input's gradients from several products this way, with no add program). */
  res?: boolean;
  /** A (`a`), or C and P (`c`), stored as f16 (half-storage.ts), converted at the loads and stores. */
  half?: HalfOperands;
  /**
   * The residual + LayerNorm epilogue (resLnEpilogue) in place of storing C; "pool": then also the
   * encoder's masked-mean pooling of the rows it normalized (resLnPool), where each sequence's T
   * rows lie in one row block.
   */
  resLn?: boolean | "pool";
  /**
   * A is the transformer's first LayerNorm of its embedding, computed as the tiles load it
   * (embedLnPrologue): ids rows of the token and position tables (K = d columns), times the dropout
   * mask, normalized with γ, β. The first column block's workgroups also write the embedding (X),
   * its LayerNorm (Y) and the row stats, which the layers and a backward read.
   */
  embedLn?: boolean;
  /**
   * Also the column sums of B over K into S: a bias's gradient beside its weight's (dW = Xᵀ·dY and
   * db = dY's column sums from the B slices the product loads anyway), written by the first row
   * block's workgroups; a batched product's z-th at z·N (a weight gradient split along K, split-k.ts).
   */
  colSum?: boolean;
  /**
   * Products of one A with `parts` operands B (B0…, their biases, into C0…, S0…) in one program, each of N
   * columns: BERT's Q, K and V. A workgroup's column block lies in one part (the grid's x is
   * parts × the blocks of N), so which buffer it reads is uniform across the workgroup.
   */
  parts?: number;
  /**
   * `group` weight gradients Aᵀ·B with their column sums (trans.a, colSum), each its own A, B, C,
   * S and sizes, in one program: a layer's (split-k.ts). The grid is a list of tiles (x only):
   * product g's from t_g on, split part by part, each part's bx_g column blocks by its row blocks
   * (nb_g tiles a part), so no workgroup idles. Uniforms after stride: per product M, N, K,
   * aBatch, bBatch, t, bx, nb.
   */
  group?: number;
}

/** The uniform fields of a product in a `group` program, in order. */
const GROUP_FIELDS = ["M", "N", "K", "aBatch", "bBatch", "t", "bx", "nb"];

/**
 * WGSL of one tile, aligned (vec4, no checks) or general (scalar loads, bounds checks), computing
 * what `o` asks besides A·B. Its callers pass it as a generator (raw-program.ts ShaderSource), so
 * it runs once per compiled program key, not at each plan built for a new batch shape.
 */
export function matmulShader(t: MatmulTile, aligned: boolean, o: ShaderOptions = {}): string {
  const { bias = false, trans = {}, gelu = false, res = false, half = {}, resLn = false, parts = 1, colSum = false, embedLn = false, actGrad } = o;
  if (actGrad && (bias || gelu || res || resLn || parts > 1 || colSum || embedLn)) throw new Error("matmulShader: an activation's gradient takes a plain product");
  if (embedLn && (trans.a || parts > 1 || resLn || colSum || gelu || res)) throw new Error("matmulShader: the embedding prologue takes a plain product (with a bias)");
  if (parts > 1 && (gelu === "keep" || res || resLn)) throw new Error("matmulShader: parts take a bias or GELU epilogue only");
  if (colSum && resLn) throw new Error("matmulShader: the residual + LayerNorm epilogue stores no column sums");
  const G = o.group ?? 1;
  if (G > 1 && (!trans.a || trans.b || !colSum || bias || gelu || res || resLn || parts > 1 || embedLn || actGrad)) throw new Error("matmulShader: a group takes weight gradients Aᵀ·B with their column sums only");
  const { threads, bm, bn } = tileOf(t);
  const { wx, wy, tm, tn, bk } = t;
  // the GELU epilogue: gelu-layernorm.ts's expression per value, so the result equals its program's
  const act = (v: string, width: number): string => (!gelu ? v : width === 1 ? `gelu1(${v})` : `gelu4(${v})`);
  // "keep": the value before GELU also into P (a backward's GELU reads it); `res`: plus R
  const store = (at: string, v: string, width: number): string => {
    const plus = res ? ` + R[${at}]` : "";
    const w = (e: string): string => writeAct(Boolean(half.c), e, width === 4);
    if (parts > 1 || G > 1) return `writeC(${at}, ${w(act(v, width))});`;
    if (actGrad) return `C[${at}] = ${w(`actGrad${width === 4 ? "4" : ""}(${readAct(Boolean(half.p), `P[${at}]`, width === 4)}, ${v})`)};`;
    return gelu === "keep" ? `{ let v = ${v}; P[${at}] = ${w("v")}; C[${at}] = ${w(`${act("v", width)}${plus}`)}; }` : `C[${at}] = ${w(`${act(v, width)}${plus}`)};`;
  };
  // `half`: A, or C and P, hold f16 (activations: half-storage.ts); B, bias and R stay f32
  const ld = (src: string, i: string, vec = false): string => (src === "A" ? (G > 1 ? `readA(${i})` : readAct(Boolean(half.a), `A[${i}]`, vec)) : parts > 1 || G > 1 ? `readB(${i})` : `${src}[${i}]`);
  const biasAt = (i: string): string => (parts > 1 ? `biasAt(${i})` : `bias[${i}]`);
  const tm4 = tm / 4;
  const tn4 = tn / 4;
  const L: string[] = [];
  // workgroup memory: As[k][m] (A transposed) and Bs[k][n], both as vec4 along m / n
  L.push(`var<workgroup> As: array<vec4<f32>, ${(bk * bm) / 4}>;`, `var<workgroup> Bs: array<vec4<f32>, ${(bk * bn) / 4}>;`);
  if (resLn) L.push(...resLnRowTotal(bm, wx));
  if (embedLn) L.push(`var<workgroup> rowMean: array<f32, ${bm}>;`, `var<workgroup> rowInv: array<f32, ${bm}>;`);
  L.push(`@compute @workgroup_size(${wx}, ${wy}, 1)`);
  L.push(`fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {`);
  L.push(`  let tid = lid.y * ${wx}u + lid.x;`);
  if (parts > 1) L.push(`  let blocks = (u.N + ${bn - 1}u) / ${bn}u;`, `  part = wid.x / blocks;`, `  let row0 = wid.y * ${bm}u;`, `  let col0 = (wid.x % blocks) * ${bn}u;`);
  else L.push(`  let row0 = wid.y * ${bm}u;`, `  let col0 = wid.x * ${bn}u;`);
  L.push(`  let aOff = wid.z * u.aBatch;`, `  let bOff = wid.z * u.bBatch;`, `  let cOff = wid.z * u.M * u.N;`);
  if (embedLn) L.push(...embedLnPrologue(t, Boolean(half.c)));
  for (let i = 0; i < tm; i++) for (let j = 0; j < tn4; j++) L.push(`  var c${i}_${j} = vec4<f32>(0.0);`);
  // the column sums: only the threads that write them add (the first row block's first row of threads), so the other warps pay nothing
  if (colSum) L.push(`  let sums = wid.y == 0u && lid.y == 0u;`, ...Array.from({ length: tn4 }, (_, j) => `  var cs${j} = vec4<f32>(0.0);`));
  // A slice → As[k][m], B slice → Bs[k][n]: vec4 loads where aligned (alignedSlices; embedLn
  // computes A's elements, lnA with the row's stats the prologue's, one at a time with checks)
  const vec = aligned ? alignedSlices(t, trans) : null;
  const vecLoads = vec ? [...(embedLn ? [] : vec.a), ...vec.b] : [];
  // prefetch: registers hold the next slice (aligned loads only)
  const prefetch = Boolean(t.prefetch) && aligned && !embedLn;
  if (prefetch) L.push(...prefetchedSlices(vecLoads, bk, ld));
  else {
    L.push(`  for (var k0 = 0u; k0 < u.K; k0 = k0 + ${bk}u) {`);
    for (const s of vecLoads) L.push(`    { ${s.head} let v = ${ld(s.src, s.at("k0"), true)}; ${s.put("v")} }`);
    // the checked loads: an operand stored with k inner (A, or Bᵀ) is read along k and
    // scattered; one stored with k outer (Aᵀ, or B) is read along m / n in place
    const kInner = (tile: string, src: string, rows: number, rowVar: string, at: string): void => {
      const computed = embedLn && src === "A";
      for (let l = 0; l < (rows * bk) / threads; l++) {
        L.push(`    { let e = ${l * threads}u + tid; let ${rowVar} = e / ${bk}u; let kk = e % ${bk}u; var v = 0.0;`);
        L.push(`      if (${rowVar === "m" ? "row0 + m < u.M" : "col0 + n < u.N"} && k0 + kk < u.K) { v = ${computed ? "lnA(row0 + m, m, k0 + kk)" : ld(src, `${at} + kk`)}; }`);
        L.push(`      ${tile}[kk * ${rows / 4}u + ${rowVar} / 4u][${rowVar} % 4u] = v; }`);
      }
    };
    const kOuter = (tile: string, src: string, cols: number, colVar: string, at: string): void => {
      for (let l = 0; l < (bk * cols) / threads; l++) {
        L.push(`    { let e = ${l * threads}u + tid; let kk = e / ${cols}u; let ${colVar} = e % ${cols}u; var v = 0.0;`);
        L.push(`      if (k0 + kk < u.K && ${colVar === "m" ? "row0 + m < u.M" : "col0 + n < u.N"}) { v = ${ld(src, `${at} + ${colVar}`)}; }`);
        L.push(`      ${tile}[kk * ${cols / 4}u + ${colVar} / 4u][${colVar} % 4u] = v; }`);
      }
    };
    if (!vec || embedLn) {
      if (trans.a) kOuter("As", "A", bm, "m", "aOff + (k0 + kk) * u.M + row0");
      else kInner("As", "A", bm, "m", "aOff + (row0 + m) * u.K + k0");
    }
    if (!vec) {
      if (trans.b) kInner("Bs", "B", bn, "n", "bOff + (col0 + n) * u.K + k0");
      else kOuter("Bs", "B", bn, "n", "bOff + (k0 + kk) * u.N + col0");
    }
    L.push(`    workgroupBarrier();`);
  }
  for (let kk = 0; kk < bk; kk++) {
    for (let i = 0; i < tm4; i++) L.push(`    let a${kk}_${i} = As[${(kk * bm) / 4 + i * wy}u + lid.y];`);
    for (let j = 0; j < tn4; j++) L.push(`    let b${kk}_${j} = Bs[${(kk * bn) / 4 + j * wx}u + lid.x];`);
    if (colSum) L.push(`    if (sums) { ${Array.from({ length: tn4 }, (_, j) => `cs${j} += b${kk}_${j};`).join(" ")} }`);
    for (let i = 0; i < tm; i++) {
      for (let j = 0; j < tn4; j++) L.push(`    c${i}_${j} = fma(vec4<f32>(a${kk}_${i >> 2}[${i & 3}]), b${kk}_${j}, c${i}_${j});`);
    }
  }
  L.push(`    workgroupBarrier();`, `  }`);
  // thread (x, y) owns rows (i4·WY + y)·4 + c and column vectors j·WX + x
  if (colSum) {
    const put = (i: string, v: string): string => (parts > 1 || G > 1 ? `writeS(${i}, ${v});` : `S[${i}] = ${v};`);
    L.push(`  if (sums) {`, `    let sOff = wid.z * u.N;`);
    for (let j = 0; j < tn4; j++) {
      const col = `col0 + (${j * wx}u + lid.x) * 4u`;
      if (aligned) L.push(`    ${put(`(sOff + ${col}) / 4u`, `cs${j}`)}`);
      else for (let c = 0; c < 4; c++) L.push(`    if (${col} + ${c}u < u.N) { ${put(`sOff + ${col} + ${c}u`, `cs${j}[${c}]`)} }`);
    }
    L.push(`  }`);
  }
  if (resLn) L.push(...resLnEpilogue(t, Boolean(half.c)));
  if (resLn === "pool") L.push(...resLnPool(t, Boolean(half.c)));
  for (let i = 0; i < (resLn ? 0 : tm); i++) {
    L.push(`  { let r = row0 + (${(i >> 2) * wy}u + lid.y) * 4u + ${i & 3}u;`);
    for (let j = 0; j < tn4; j++) {
      const col = `col0 + (${j * wx}u + lid.x) * 4u`;
      if (aligned) L.push(`    ${store(`(cOff + r * u.N + ${col}) / 4u`, `c${i}_${j}${bias ? ` + ${biasAt(`(${col}) / 4u`)}` : ""}`, 4)}`);
      else {
        L.push(`    if (r < u.M) { let n = ${col};`);
        for (let c = 0; c < 4; c++) L.push(`      if (n + ${c}u < u.N) { ${store(`cOff + r * u.N + n + ${c}u`, `c${i}_${j}[${c}]${bias ? ` + ${biasAt(`n + ${c}u`)}` : ""}`, 1)} }`);
        L.push(`    }`);
      }
    }
    L.push(`  }`);
  }
  L.push(`}`);
  const ty = aligned ? "vec4<f32>" : "f32";
  const aty = actType(Boolean(half.a), aligned), cty = actType(Boolean(half.c), aligned);
  const geluFns = gelu ? `${ERF_WGSL}
fn gelu1(x: f32) -> f32 { return ${geluExpr("x")}; }
fn gelu4(v: vec4<f32>) -> vec4<f32> { return vec4<f32>(gelu1(v.x), gelu1(v.y), gelu1(v.z), gelu1(v.w)); }
` : "";
  if (embedLn) {
    const act = actType(Boolean(half.c));
    return `${enableHalf(Boolean(half.c))}struct U { stride: u32, M: u32, N: u32, K: u32, aBatch: u32, bBatch: u32, T: u32, eps: f32, thr: u32, keep: f32, k0: u32, k1: u32 };
${storageDecls(["ids:i32", "tok", "pos", "gamma", "beta", `B:${ty}`, ...(bias ? [`bias:${ty}`] : [])], [`C:${cty}`, `X:${act}`, `Y:${act}`, "stats"])}
${MASK_AT_WGSL}
fn embAt(r: u32, k: u32) -> f32 { return (tok[u32(ids[r]) * u.K + k] + pos[(r % u.T) * u.K + k]) * maskAt(r * u.K + k); }
fn lnA(r: u32, lr: u32, k: u32) -> f32 { return ((${readAct(Boolean(half.c), writeAct(Boolean(half.c), "embAt(r, k)"))} - rowMean[lr]) * rowInv[lr]) * gamma[k] + beta[k]; }
${L.join("\n")}`;
  }
  if (resLn) {
    const act = actType(Boolean(half.c));
    const pool = resLn === "pool";
    return `${enableHalf(Boolean(half.a || half.c))}struct U { stride: u32, M: u32, N: u32, K: u32, aBatch: u32, bBatch: u32, T: u32, eps: f32, thr: u32, keep: f32, k0: u32, k1: u32 };
${storageDecls([`A:${aty}`, `B:${ty}`, "bias", `X:${act}`, "gamma", "beta", ...(pool ? ["poolW"] : [])], [`Y:${act}`, `V:${act}`, "stats", ...(pool ? ["pooled"] : [])])}
${MASK_AT_WGSL}
${L.join("\n")}`;
  }
  if (G > 1) return groupProgram(G, L, { aty, ty, cty, half: Boolean(half.a || half.c), aligned, readA: (e) => readAct(Boolean(half.a), e, aligned) });
  if (parts > 1) {
    const each = (body: (p: number) => string): string => switchCases(parts, body);
    const named = (n: string, type: string): string[] => Array.from({ length: parts }, (_, p) => `${n}${p}:${type}`);
    return `${enableHalf(Boolean(half.a || half.c))}struct U { stride: u32, M: u32, N: u32, K: u32, aBatch: u32, bBatch: u32 };
${storageDecls([`A:${aty}`, ...named("B", ty), ...(bias ? named("bias", ty) : [])], [...named("C", cty), ...(colSum ? named("S", ty) : [])])}
var<private> part: u32;
fn readB(i: u32) -> ${ty} { switch part { ${each((p) => `return B${p}[i];`)} } }
${bias ? `fn biasAt(i: u32) -> ${ty} { switch part { ${each((p) => `return bias${p}[i];`)} } }` : ""}
fn writeC(i: u32, v: ${cty}) { switch part { ${each((p) => `C${p}[i] = v;`)} } }
${colSum ? `fn writeS(i: u32, v: ${ty}) { switch part { ${each((p) => `S${p}[i] = v;`)} } }` : ""}
${geluFns}${L.join("\n")}`;
  }
  return `${enableHalf(Boolean(half.a || half.c || half.p))}struct U { stride: u32, M: u32, N: u32, K: u32, aBatch: u32, bBatch: u32 };
${storageDecls([`A:${aty}`, `B:${ty}`, ...(bias ? [`bias:${ty}`] : []), ...(res ? [`R:${ty}`] : []), ...(actGrad ? [`P:${actType(Boolean(half.p), aligned)}`] : [])], [`C:${cty}`, ...(gelu === "keep" ? [`P:${cty}`] : []), ...(colSum ? [`S:${ty}`] : [])])}
${geluFns}${actGrad ? `${ACT_GRAD_WGSL[actGrad]}
fn actGrad4(x: vec4<f32>, dy: vec4<f32>) -> vec4<f32> { return vec4<f32>(actGrad(x.x, dy.x), actGrad(x.y, dy.y), actGrad(x.z, dy.z), actGrad(x.w, dy.w)); }
` : ""}${L.join("\n")}`;
}

/** The cases of a WGSL `switch` over 0 … n−1 (the last one the default): which operand's buffer a workgroup's part or product reads. */
const switchCases = (n: number, body: (i: number) => string): string => Array.from({ length: n }, (_, i) => `${i === n - 1 ? "default" : `case ${i}u`}: { ${body(i)} }`).join(" ");

/**
 * The `group` program around a product's body L: the product g a workgroup computes picked from
 * its z (uniform across the workgroup), its sizes and z offset in place of the single product's
 * uniforms, and its buffers through readA, readB, writeC and writeS.
 */
function groupProgram(G: number, L: string[], o: { aty: string; ty: string; cty: string; half: boolean; aligned: boolean; readA: (e: string) => string }): string {
  const gs = Array.from({ length: G }, (_, g) => g);
  const each = (body: (g: number) => string): string => switchCases(G, body);
  const pick = (f: string): string => gs.reduce((acc, g) => (g === 0 ? `u.${f}0` : `select(${acc}, u.${f}${g}, g == ${g}u)`), "");
  const vt = o.aligned ? "vec4<f32>" : "f32";
  // the workgroup's product g (uniform across it), then its split part and tile from its place in g's list
  const main = L.join("\n")
    .replace(/\bu\.(M|N|K|aBatch|bBatch)\b/g, (_, f: string) => `p${f}`)
    .replace(/\bwid\.([xyz])\b/g, (_, c: string) => ({ x: "gbx", y: "gby", z: "gz" })[c]!)
    .replace(/( {2}let row0 = )/, `  var g = 0u;
${gs.slice(1).map((q) => `  if (wid.x >= u.t${q}) { g = ${q}u; }`).join("\n")}
  part = g;
${GROUP_FIELDS.map((f) => `  let p${f} = ${pick(f)};`).join("\n")}
  let local = wid.x - pt;
  let gz = local / pnb;
  let gby = (local % pnb) / pbx;
  let gbx = (local % pnb) % pbx;
$1`);
  return `${enableHalf(o.half)}struct U { stride: u32, ${gs.flatMap((g) => GROUP_FIELDS.map((f) => `${f}${g}: u32`)).join(", ")} };
${storageDecls(gs.flatMap((g) => [`A${g}:${o.aty}`, `B${g}:${o.ty}`]), gs.flatMap((g) => [`C${g}:${o.cty}`, `S${g}:${o.ty}`]))}
var<private> part: u32;
fn readA(i: u32) -> ${vt} { switch part { ${each((g) => `return ${o.readA(`A${g}[i]`)};`)} } }
fn readB(i: u32) -> ${o.ty} { switch part { ${each((g) => `return B${g}[i];`)} } }
fn writeC(i: u32, v: ${o.cty}) { switch part { ${each((g) => `C${g}[i] = v;`)} } }
fn writeS(i: u32, v: ${o.ty}) { switch part { ${each((g) => `S${g}[i] = v;`)} } }
${main}`;
}

/** One vec4 load a thread makes of an operand's K slice: its index math, its vec4 index at K offset k, where it goes in workgroup memory. */
interface SliceLoad {
  src: "A" | "B";
  head: string;
  at: (k: string) => string;
  put: (v: string) => string;
}

/**
 * The loads of an aligned program's K slices, per operand: A [M, K] (k inner: scattered into
 * As[k][m]) or Aᵀ [K, M] (k outer: in place), B [K, N] (k outer) or Bᵀ [N, K] (k inner).
 */
function alignedSlices(t: MatmulTile, trans: MatmulTrans): { a: SliceLoad[]; b: SliceLoad[] } {
  const { threads, bm, bn } = tileOf(t);
  const bk = t.bk;
  const loads = (src: "A" | "B", count: number, index: string, at: (k: string) => string, put: (v: string) => string): SliceLoad[] =>
    Array.from({ length: count }, (_, l) => ({ src, head: `let e = ${l * threads}u + tid; ${index}`, at, put }));
  /** A vec4 along k scattered into the tile's rows (As[k][m] or Bs[k][n]). */
  const scatter = (tile: string, rows: number, r: string) => (v: string): string =>
    [0, 1, 2, 3].map((c) => `${tile}[(k4 * 4u + ${c}u) * ${rows / 4}u + ${r} / 4u][${r} % 4u] = ${v}[${c}];`).join(" ");
  return {
    a: trans.a
      ? loads("A", (bk * bm) / 4 / threads, `let kk = e / ${bm / 4}u; let m4 = e % ${bm / 4}u;`, (k) => `(aOff + (${k} + kk) * u.M + row0) / 4u + m4`, (v) => `As[kk * ${bm / 4}u + m4] = ${v};`)
      : loads("A", (bm * bk) / 4 / threads, `let m = e / ${bk / 4}u; let k4 = e % ${bk / 4}u;`, (k) => `(aOff + (row0 + m) * u.K + ${k}) / 4u + k4`, scatter("As", bm, "m")),
    b: trans.b
      ? loads("B", (bn * bk) / 4 / threads, `let n = e / ${bk / 4}u; let k4 = e % ${bk / 4}u;`, (k) => `(bOff + (col0 + n) * u.K + ${k}) / 4u + k4`, scatter("Bs", bn, "n"))
      : loads("B", (bk * bn) / 4 / threads, `let kk = e / ${bn / 4}u; let n4 = e % ${bn / 4}u;`, (k) => `(bOff + (${k} + kk) * u.N + col0) / 4u + n4`, (v) => `Bs[kk * ${bn / 4}u + n4] = ${v};`),
  };
}

/**
 * The K loop's head for a prefetching tile (aligned loads): slice 0 into registers before the
 * loop; each step stores the registers to workgroup memory, and after the barrier loads the next
 * slice into them, so those loads are in flight while the FMAs after them run. A thread's loads
 * are the ones the unprefetched program makes (alignedSlices: same elements, same places).
 */
function prefetchedSlices(slices: readonly SliceLoad[], bk: number, ld: (src: string, i: string, vec?: boolean) => string): string[] {
  const reg = (s: SliceLoad, i: number): string => `p${s.src}${i}`;
  const load = (k: string, pad = ""): string[] => slices.map((s, i) => `${pad}    { ${s.head} ${reg(s, i)} = ${ld(s.src, s.at(k), true)}; }`);
  return [
    ...slices.map((s, i) => `  var ${reg(s, i)} = vec4<f32>(0.0);`),
    ...load("0u"),
    `  for (var k0 = 0u; k0 < u.K; k0 = k0 + ${bk}u) {`,
    ...slices.map((s, i) => `    { ${s.head} ${s.put(reg(s, i))} }`),
    `    workgroupBarrier();`,
    `    if (k0 + ${bk}u < u.K) {`,
    ...load(`k0 + ${bk}u`, "  "),
    `    }`,
  ];
}

/**
 * The tile whose workgroup holds whole rows of n columns (one column block), for the residual +
 * LayerNorm epilogue; null past the widest tile's 128 columns.
 */
export function resLnTile(n: number): MatmulTile | null {
  return n <= 64 ? SMALL_TILE : n <= 128 ? DEFAULT_TILE : null;
}

/**
 * The pooling after the residual + LayerNorm epilogue (the last layer's): pooled[b, c] =
 * Σ_t poolW[b·T + t]·Y[b·T + t, c] for the block's sequences (T divides the block's rows: u.T),
 * read back from Y after a storage barrier, in recorded-encoder.ts poolShader's order (the same
 * bits). Saves the pooling program of every forward whose sequences fit a row block.
 */
function resLnPool(t: MatmulTile, half: boolean): string[] {
  const threads = t.wx * t.wy;
  const bm = t.tm * t.wy;
  return [
    `  storageBarrier();`,
    `  let b0 = row0 / u.T;`,
    `  for (var o = tid; o < ${bm}u / u.T * u.N; o += ${threads}u) {`,
    `    let b = b0 + o / u.N;`,
    `    let c = o % u.N;`,
    `    if (b * u.T < u.M) {`,
    `      var s = 0.0;`,
    `      for (var t = 0u; t < u.T; t++) { let r = b * u.T + t; s += ${readAct(half, "Y[r * u.N + c]")} * poolW[r]; }`,
    `      pooled[b * u.N + c] = s;`,
    `    }`,
    `  }`,
  ];
}

/**
 * The embedding prologue (recorded-encoder.ts's embedding + first LayerNorm program, fused into the
 * QKV product it feeds): a thread per row of the block sums the row's embedding (token and position
 * rows times the mask: `embAt`), then its variance over the values as stored (rounded when f16), and
 * keeps the mean and 1/√(var + eps) in workgroup memory for the tile loads (`lnA`); the first column
 * block's workgroups write the embedding, its LayerNorm and the stats as that program does.
 */
function embedLnPrologue(t: MatmulTile, half: boolean): string[] {
  const bm = t.tm * t.wy;
  const rnd = (e: string): string => readAct(half, writeAct(half, e));
  return [
    `  for (var lr = tid; lr < ${bm}u; lr += ${t.wx * t.wy}u) {`,
    `    let r = row0 + lr;`,
    `    var mean = 0.0;`,
    `    var inv = 0.0;`,
    `    if (r < u.M) {`,
    `      let nf = f32(u.K);`,
    `      var s = 0.0;`,
    `      for (var k = 0u; k < u.K; k++) { let a = embAt(r, k); s += a; if (wid.x == 0u) { X[r * u.K + k] = ${writeAct(half, "a")}; } }`,
    `      mean = s / nf;`,
    `      var q = 0.0;`,
    `      for (var k = 0u; k < u.K; k++) { let c = ${rnd("embAt(r, k)")} - mean; q += c * c; }`,
    `      inv = inverseSqrt(q / nf + u.eps);`,
    `      if (wid.x == 0u) {`,
    `        stats[2u * r] = mean;`,
    `        stats[2u * r + 1u] = inv;`,
    `        for (var k = 0u; k < u.K; k++) { Y[r * u.K + k] = ${writeAct(half, `((${rnd("embAt(r, k)")} - mean) * inv) * gamma[k] + beta[k]`)}; }`,
    `      }`,
    `    }`,
    `    rowMean[lr] = mean;`,
    `    rowInv[lr] = inv;`,
    `  }`,
    `  workgroupBarrier();`,
  ];
}

/** The row sums of the epilogue: each of the BM rows' WX partial sums, added in workgroup memory. */
function resLnRowTotal(bm: number, wx: number): string[] {
  return [
    `var<workgroup> lnRed: array<f32, ${bm * wx}>;`,
    `fn lnRowTotal(lr: u32) -> f32 { var s = 0.0; for (var w = 0u; w < ${wx}u; w++) { s += lnRed[lr * ${wx}u + w]; } return s; }`,
  ];
}

/**
 * The residual + LayerNorm epilogue (residual-layernorm.ts's program, fused into the product that
 * feeds it): the workgroup holds whole rows (N within the tile's columns, one column block), so
 * C + bias never goes to memory. v = X + (C + bias)·m (m: the dropout mask of the uniforms' key,
 * index r·N + n as there) is written to V; each row's mean, then 1/√(var + eps) (two passes, over
 * v as stored: rounded when f16) are summed over its WX threads in workgroup memory; Y = LN(v)·γ + β
 * and the stats (mean, inv) as that program writes them. Saves its dispatch and a pass over h.
 */
function resLnEpilogue(t: MatmulTile, half: boolean): string[] {
  const { wx, wy, tm, tn } = t;
  const L: string[] = [];
  const rows = Array.from({ length: tm }, (_, i) => ({ i, lr: `(${(i >> 2) * wy}u + lid.y) * 4u + ${i & 3}u` }));
  /** `body` for each of the thread's elements inside the matrix: r, n, o = r·N + n, its register `c`. */
  const each = (i: number, body: string): void => {
    for (let j = 0; j < tn / 4; j++) {
      for (let c = 0; c < 4; c++) {
        L.push(`  { let n = col0 + (${j * wx}u + lid.x) * 4u + ${c}u; if (r${i} < u.M && n < u.N) { let o = r${i} * u.N + n; ${body.replaceAll("REG", `c${i}_${j}[${c}]`)} } }`);
      }
    }
  };
  const total = (name: string, v: (i: number) => string): void => {
    for (const { i, lr } of rows) L.push(`  lnRed[(${lr}) * ${wx}u + lid.x] = ${v(i)};`);
    L.push(`  workgroupBarrier();`);
    for (const { i, lr } of rows) L.push(`  let ${name}${i} = lnRowTotal(${lr});`);
    L.push(`  workgroupBarrier();`);
  };
  L.push(`  let nf = f32(u.N);`);
  for (const { i, lr } of rows) L.push(`  let r${i} = row0 + ${lr};`, `  var s${i} = 0.0;`);
  for (const { i } of rows) each(i, `let a = ${readAct(half, "X[o]")} + (REG + bias[n]) * maskAt(o); V[o] = ${writeAct(half, "a")}; s${i} += a; REG = ${readAct(half, writeAct(half, "a"))};`);
  total("sum", (i) => `s${i}`);
  for (const { i } of rows) L.push(`  let mean${i} = sum${i} / nf;`, `  var q${i} = 0.0;`);
  for (const { i } of rows) each(i, `let e = REG - mean${i}; q${i} += e * e;`);
  total("qs", (i) => `q${i}`);
  for (const { i } of rows) {
    L.push(`  let inv${i} = inverseSqrt(qs${i} / nf + u.eps);`);
    each(i, `Y[o] = ${writeAct(half, `((REG - mean${i}) * inv${i}) * gamma[n] + beta[n]`)};`);
    L.push(`  if (lid.x == 0u && r${i} < u.M) { stats[2u * r${i}] = mean${i}; stats[2u * r${i} + 1u] = inv${i}; }`);
  }
  return L;
}

/** Whether a product of these sizes takes the aligned (vec4, unchecked) program of tile `t`. */
export function isAligned(t: MatmulTile, m: number, n: number, k: number): boolean {
  const { bm, bn } = tileOf(t);
  return m % bm === 0 && n % bn === 0 && k % t.bk === 0;
}

/**
 * A·B (+ bias, a [N] row) on webgpu with our tiled program: a [M, K] or [batch, M, K], b [K, N] or
 * [batch, K, N] (with `trans`: a [.., K, M], b [.., N, K]); 3-D operands have equal batches or a
 * batch of 1, which broadcasts. Not
 * differentiable: forward-only callers use it (ops.ts `linear` when no gradient is recorded).
 */
export function matmulTiled(a: tf.Tensor, b: tf.Tensor, tile: MatmulTile = DEFAULT_TILE, bias?: tf.Tensor1D, trans: MatmulTrans = {}, be: WebgpuBackendLike = webgpuBackend()): tf.Tensor {
  const a3 = a.rank === 2 ? [1, ...a.shape] : a.shape;
  const b3 = b.rank === 2 ? [1, ...b.shape] : b.shape;
  if (a3.length !== 3 || b3.length !== 3) throw new Error(`matmulTiled: operands must be 2-D or 3-D (got ${a.shape} and ${b.shape})`);
  const [ba, m, k] = trans.a ? [a3[0], a3[2], a3[1]] : a3;
  const [bb, k2, n] = trans.b ? [b3[0], b3[2], b3[1]] : b3;
  if (k !== k2) throw new Error(`matmulTiled: inner sizes differ (${a.shape} · ${b.shape})`);
  if (ba !== bb && ba !== 1 && bb !== 1) throw new Error(`matmulTiled: batches ${ba} and ${bb} do not broadcast`);
  if (bias && (bias.rank !== 1 || bias.shape[0] !== n)) throw new Error(`matmulTiled: bias of shape ${bias.shape} for ${n} columns`);
  const batch = Math.max(ba, bb);
  const { bm, bn } = tileOf(tile);
  const aligned = isAligned(tile, m, n, k);
  const outShape = a.rank === 2 && b.rank === 2 ? [m, n] : [batch, m, n];
  if (m === 0 || n === 0 || batch === 0) return tf.zeros(outShape);
  const key = `matmul-${tileName(tile)}-${aligned ? "aligned" : "checked"}${bias ? "-bias" : ""}${transName(trans)}`;
  const [out] = runRawProgram(be, {
    key,
    code: () => matmulShader(tile, aligned, { bias: Boolean(bias), trans }),
    inputs: bias ? [a, b, bias] : [a, b],
    outputs: [{ shape: outShape }],
    uniforms: [m, n, k, ba === 1 ? 0 : m * k, bb === 1 ? 0 : k * n].map((x) => ({ type: "uint32", data: [x] })),
    threads: batch * m * n,
    workgroups: [Math.ceil(n / bn), Math.ceil(m / bm), batch],
  });
  return tf.engine().makeTensorFromTensorInfo(out);
}
