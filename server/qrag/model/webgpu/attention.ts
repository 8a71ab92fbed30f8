/**
 * Multi-head attention softmax(QKᵀ/√d_head − 1e9·PAD_key)·V (with dropout on the probabilities)
 * as fused WebGPU programs: one forward, two backward, instead of device-ops.ts attentionDense's
 * ~10 tfjs ops each way (head split/merge transposes, two batched matmuls, mask add, softmax,
 * dropout).
 *
 * Why: on a GPU every tfjs op is a dispatch whose overhead dwarfs the arithmetic of our small
 * heads. The inputs stay in the dense [B·T, d] layout (heads contiguous along the columns), so no
 * transpose is needed; `attentionFusedPacked` reads q, k, v from the fused QKV projection's
 * [B·T, 3d] output directly (no column slices, one gradient tensor). Forward: a workgroup per
 * (sequence, head, block of 64 queries) stages K and V in tiles of workgroup memory, loaded once
 * for all the block's queries (instead of every thread reading all of K and V from global
 * memory); each query keeps its online softmax's max and normaliser. Backward (the stored
 * statistics give the probabilities again, D_i = dO_i·O_i): dQ per query block over K/V tiles,
 * then dK and dV per key block over tiles of q·scale and dO. Tile rows follow the device's
 * workgroup memory (`attentionTile`); the sums run in the same order as one thread per row did.
 * The dropout mask is the one ops.ts `dropout` would draw for the [B, H, T, T] probabilities
 * (same Rng draws), passed in, so the function is attentionDense's exactly.
 */
import * as tf from "@tensorflow/tfjs";
import { dropoutMaskDevice, MASK_AT_WGSL } from "./dropout.ts";
import { MAX_GROUPS, runRawProgram, storageDecls, uniformStruct, webgpuBackend, WG, type ShaderSource } from "./raw-program.ts";
import type { BatchedArgs } from "../attention-args.ts";
import { enableHalf, readAct, writeAct } from "./half-storage.ts";

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

const FIELDS = ["B: u32", "T: u32", "H: u32", "d: u32", "scale: f32"];

/**
 * Inputs either as three [B·T, d] tensors q, k, v ("separate") or as one [B·T, 3d] tensor qkv
 * ("packed": the fused QKV projection's output, q | k | v along the columns).
 */
export type Layout = "separate" | "packed";

/**
 * Index helpers shared by the three programs: `io` = offset of (sequence b, position t, head h)
 * in the inputs, `oo` = in the [B·T, d] tensors (ctx, dO, dq); reads of q, k, v at an input offset.
 */
function helpers(layout: Layout, half: boolean): string {
  const packed = layout === "packed";
  const at = (e: string): string => readAct(half, e);
  return `
fn io(b: u32, t: u32, h: u32) -> u32 { return (b * u.T + t) * ${packed ? "3u * u.d" : "u.d"} + h * DH; }
fn oo(b: u32, t: u32, h: u32) -> u32 { return (b * u.T + t) * u.d + h * DH; }
fn qAt(o: u32) -> f32 { return ${at(packed ? "qkv[o]" : "q[o]")}; }
fn kAt(o: u32) -> f32 { return ${at(packed ? "qkv[o + u.d]" : "k[o]")}; }
fn vAt(o: u32) -> f32 { return ${at(packed ? "qkv[o + 2u * u.d]" : "v[o]")}; }
fn keyBias(b: u32, j: u32) -> f32 { return select(-1e9, 0.0, mask[b * u.T + j] > 0.0); }`;
}

/** `half`: the inputs q, k, v and ctx (the forward's output, the backward's O) are f16 (half-storage.ts). */
function header(dh: number, tile: number, layout: Layout, read: string[], write: string[], tiles: [string, string], fields = FIELDS, extra = "", half = false): string {
  const inputs = (layout === "packed" ? ["qkv"] : ["q", "k", "v"]).map((n) => (half ? `${n}:f16` : n));
  return `${enableHalf(half)}${uniformStruct(fields)}
${extra}
const DH: u32 = ${dh}u;
const TILE: u32 = ${tile}u;
${storageDecls([...inputs, ...read].map((n) => (half && n === "ctx" ? "ctx:f16" : n)), write.map((n) => (half && n === "ctx" ? "ctx:f16" : n)))}
${helpers(layout, half)}
var<workgroup> ${tiles[0]}: array<f32, ${tile * dh}>;
var<workgroup> ${tiles[1]}: array<f32, ${tile * dh}>;
@compute @workgroup_size(${WG})`;
}

/**
 * Workgroup → (b·H + h, b, h), thread → position t of the block (queries forward and for dQ, keys
 * for dK/dV); `tc` is t clamped into the sequence: threads past its end load tiles and meet the
 * barriers, but store nothing. `idx` = the (b, h, t) row of stats, dsum and the dropout mask.
 */
const BLOCK = `fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let bh = wid.z * ${MAX_GROUPS}u + wid.y;
  if (bh >= u.B * u.H) { return; }
  let h = bh % u.H;
  let b = bh / u.H;
  let t = wid.x * ${WG}u + lid.x;
  let valid = t < u.T;
  let tc = min(t, u.T - 1u);
  let idx = bh * u.T + tc;`;

/**
 * Loop over the sequence's tiles of TILE rows; `load` fills the tiles' element e = row·DH + c (row
 * j0 + e / DH). With `lanes`, a thread takes every lanes-th row of a tile from its `lane`.
 */
function tiled(load: string, body: string, lanes = 1): string {
  return `for (var j0 = 0u; j0 < u.T; j0 += TILE) {
    let n = min(TILE, u.T - j0);
    for (var e = lid.x; e < n * DH; e += ${WG}u) {
      let c = e % DH;
      let jt = j0 + e / DH;
      ${load}
    }
    workgroupBarrier();
    if (valid) {
      for (var j = ${lanes > 1 ? "lane" : "0u"}; j < n; j += ${lanes}u) {
        let jt = j0 + j;
        let jo = j * DH;
        ${body}
      }
    }
    workgroupBarrier();
  }`;
}

const LOAD_KV = "let ko = io(b, jt, h) + c;\n      kt[e] = kAt(ko);\n      vt[e] = vAt(ko);";

/** Loads this thread's query (times the scale) into registers `qs`. */
const Q_REGS = `let qo = io(b, tc, h);
  var qs: array<f32, DH>;
  for (var c = 0u; c < DH; c++) { qs[c] = qAt(qo + c) * u.scale; }`;

/** The fields of a forward that draws its dropout mask itself (`drop` "inline"): FIELDS, then dropout.ts's thr, keep, k0, k1. */
const INLINE_DROP_FIELDS = [...FIELDS, "thr: u32", "keep: f32", "k0: u32", "k1: u32"];

/**
 * The forward program (fields FIELDS; inputs, mask[, drop] → ctx, stats), a workgroup per (b, h,
 * block of queries) with K/V tiles of `tile` rows (attentionTile), launched on attentionGrid.
 * `drop` "inline": no mask buffer; each probability's mask is drawn where it is used, by the hash
 * dropout.ts's mask program uses at the same element index (fields INLINE_DROP_FIELDS), so the same
 * mask: the recorded no-grad forwards, which have no backward to read a stored mask. `half`: f16
 * inputs and ctx (half-storage.ts).
 */
export function forwardCode(dh: number, layout: Layout, drop: boolean | "inline", tile: number, half = false, lanes = 1): string {
  const inline = drop === "inline";
  const at = inline ? "maskAt(idx * u.T + jt)" : "drop[idx * u.T + jt]";
  if (lanes > 1 && !lanesFit(dh, tile)) throw new Error(`attention: ${lanes} key lanes need a tile of ${WG} rows and d_head ≥ 2 (tile ${tile}, d_head ${dh})`);
  return `${header(dh, tile, layout, ["mask", ...(drop === true ? ["drop"] : [])], ["ctx", "stats"], ["kt", "vt"], inline ? INLINE_DROP_FIELDS : FIELDS, inline ? MASK_AT_WGSL : "", half)}
${lanes > 1 ? laneBlock(lanes) : BLOCK}
  ${Q_REGS}
  var m = -3.0e38;
  var l = 0.0;
  var acc: array<f32, DH>;
  for (var c = 0u; c < DH; c++) { acc[c] = 0.0; }
  ${tiled(LOAD_KV, `var s = 0.0;
        for (var c = 0u; c < DH; c++) { s += qs[c] * kt[jo + c]; }
        s += keyBias(b, jt);
        let mn = max(m, s);
        let corr = exp(m - mn);
        let p = exp(s - mn);
        l = l * corr + p;
        let w = p${drop ? ` * ${at}` : ""};
        for (var c = 0u; c < DH; c++) { acc[c] = acc[c] * corr + w * vt[jo + c]; }
        m = mn;`, lanes)}
  ${lanes > 1 ? combineLanes(lanes) : ""}
  if (!valid) { return; }
  let oq = oo(b, t, h);
  for (var c = 0u; c < DH; c++) { ctx[oq + c] = ${writeAct(half, "acc[c] / l")}; }
  stats[2u * idx] = m;
  stats[2u * idx + 1u] = l;
}`;
}

/** BLOCK with `lanes` threads per query: WG / lanes queries a workgroup, thread → (query, lane). */
function laneBlock(lanes: number): string {
  const out = BLOCK.replace(`let t = wid.x * ${WG}u + lid.x;`, `let t = wid.x * ${WG / lanes}u + lid.x / ${lanes}u;\n  let lane = lid.x % ${lanes}u;`);
  if (out === BLOCK) throw new Error("attention: BLOCK's query index changed; laneBlock no longer matches it");
  return out;
}

/**
 * The lanes' online softmax states (m, l, acc) combined into lane 0's, in the K/V tiles' memory
 * (free after the loop's last barrier): acc in kt [WG·DH], m and l in vt [2·WG].
 */
function combineLanes(lanes: number): string {
  return `vt[lid.x] = m;
  vt[${WG}u + lid.x] = l;
  for (var c = 0u; c < DH; c++) { kt[lid.x * DH + c] = acc[c]; }
  workgroupBarrier();
  if (lane != 0u) { return; }
  var mx = m;
  for (var i = 1u; i < ${lanes}u; i++) { mx = max(mx, vt[lid.x + i]); }
  l = 0.0;
  for (var c = 0u; c < DH; c++) { acc[c] = 0.0; }
  for (var i = 0u; i < ${lanes}u; i++) {
    let f = exp(vt[lid.x + i] - mx);
    l += vt[${WG}u + lid.x + i] * f;
    for (var c = 0u; c < DH; c++) { acc[c] += kt[(lid.x + i) * DH + c] * f; }
  }
  m = mx;`;
}

/** Whether key lanes fit: the combine needs a K/V tile of WG rows (acc) and WG·DH ≥ 2·WG (m, l). */
function lanesFit(dh: number, tile: number): boolean {
  return tile >= WG && dh >= 2;
}

/** Workgroups under which a forward splits each query's keys among lanes: about two per SM of a 132-SM GPU. */
export const LANES_BELOW = 256;

/** Lanes a query's keys are split among where the grid is small (the bench's `--key-lanes`; 1: one thread per query). */
let keyLanes = 4;

/** The bench's `--key-lanes N` (a power of two up to 16), for plans built after. */
export function setKeyLanes(n: number): void {
  if (!(n >= 1 && n <= 16 && Number.isInteger(Math.log2(n)))) throw new Error(`attention: key lanes ${n} is not 1, 2, 4, 8 or 16`);
  keyLanes = n;
}

/** The lanes a small grid's forward takes now (the bench's record). */
export function currentKeyLanes(): number {
  return keyLanes;
}

/**
 * Threads per query of a forward (its keys split among them, the lanes' softmax states combined
 * after): 4 where the (sequence, head, block of 64 queries) grid has fewer than LANES_BELOW
 * workgroups (a rollout's 4 sequences: 16–48, each thread walking all keys alone), else 1.
 */
export function attentionLanes(B: number, H: number, T: number, dh: number, tile: number): number {
  return lanesFit(dh, tile) && B * H * Math.ceil(T / WG) < LANES_BELOW ? keyLanes : 1;
}

/**
 * dQ and D = rowsum(dO·O) per query (a block of queries per workgroup, K/V staged in tiles).
 * `drop` "inline" (both backward programs): the mask drawn where it is used, as the inline
 * forward draws it (fields INLINE_DROP_FIELDS, no mask buffer; the recorded BERT backward).
 */
export function backwardQCode(dh: number, layout: Layout, drop: boolean | "inline", tile: number, half = false): string {
  const inline = drop === "inline";
  const at = inline ? "maskAt(idx * u.T + jt)" : "drop[idx * u.T + jt]";
  return `${header(dh, tile, layout, ["mask", ...(drop === true ? ["drop"] : []), "stats", "dO", "ctx"], ["dq", "dsum"], ["kt", "vt"], inline ? INLINE_DROP_FIELDS : FIELDS, inline ? MASK_AT_WGSL : "", half)}
${BLOCK}
  ${Q_REGS}
  let oq = oo(b, tc, h);
  let m = stats[2u * idx];
  let l = stats[2u * idx + 1u];
  var D = 0.0;
  var go: array<f32, DH>;
  for (var c = 0u; c < DH; c++) {
    go[c] = dO[oq + c];
    D += go[c] * ${readAct(half, "ctx[oq + c]")};
  }
  var acc: array<f32, DH>;
  for (var c = 0u; c < DH; c++) { acc[c] = 0.0; }
  ${tiled(LOAD_KV, `var s = 0.0;
        for (var c = 0u; c < DH; c++) { s += qs[c] * kt[jo + c]; }
        let p = exp(s + keyBias(b, jt) - m) / l;
        var dp = 0.0;
        for (var c = 0u; c < DH; c++) { dp += go[c] * vt[jo + c]; }
        let ds = p * (dp${drop ? ` * ${at}` : ""} - D);
        for (var c = 0u; c < DH; c++) { acc[c] += ds * kt[jo + c]; }`)}
  if (!valid) { return; }
  for (var c = 0u; c < DH; c++) { dq[oq + c] = acc[c] * u.scale; }
  dsum[idx] = D;
}`;
}

/**
 * dK, dV per key (a block of keys per workgroup, the queries' q·scale and dO staged in tiles);
 * packed: written with dQ (an input here) into one [B·T, 3d] gradient.
 */
export function backwardKVCode(dh: number, layout: Layout, drop: boolean | "inline", tile: number, half = false): string {
  const packed = layout === "packed";
  const inline = drop === "inline";
  const read = ["mask", ...(drop === true ? ["drop"] : []), "stats", "dO", "dsum", ...(packed ? ["dq"] : [])];
  const store = packed
    ? `for (var c = 0u; c < DH; c++) {
    dqkv[ko + c] = dq[ok + c];
    dqkv[ko + u.d + c] = gk[c];
    dqkv[ko + 2u * u.d + c] = gv[c];
  }`
    : "for (var c = 0u; c < DH; c++) { dk[ok + c] = gk[c]; dv[ok + c] = gv[c]; }";
  return `${header(dh, tile, layout, read, packed ? ["dqkv"] : ["dk", "dv"], ["qt", "gt"], inline ? INLINE_DROP_FIELDS : FIELDS, inline ? MASK_AT_WGSL : "", half)}
${BLOCK}
  let ko = io(b, tc, h);
  let bias = keyBias(b, tc);
  var kr: array<f32, DH>;
  var vr: array<f32, DH>;
  var gk: array<f32, DH>;
  var gv: array<f32, DH>;
  for (var c = 0u; c < DH; c++) {
    kr[c] = kAt(ko + c);
    vr[c] = vAt(ko + c);
    gk[c] = 0.0;
    gv[c] = 0.0;
  }
  ${tiled("qt[e] = qAt(io(b, jt, h) + c) * u.scale;\n      gt[e] = dO[oo(b, jt, h) + c];", `let r = bh * u.T + jt;
        var s = 0.0;
        for (var c = 0u; c < DH; c++) { s += qt[jo + c] * kr[c]; }
        let p = exp(s + bias - stats[2u * r]) / stats[2u * r + 1u];
        let keep = ${inline ? "maskAt(r * u.T + tc)" : drop ? "drop[r * u.T + tc]" : "1.0"};
        var dp = 0.0;
        for (var c = 0u; c < DH; c++) { dp += gt[jo + c] * vr[c]; }
        let ds = p * (dp * keep - dsum[r]);
        for (var c = 0u; c < DH; c++) {
          gv[c] += (p * keep) * gt[jo + c];
          gk[c] += ds * qt[jo + c];
        }`)}
  if (!valid) { return; }
  let ok = oo(b, t, h);
  ${store}
}`;
}

/**
 * Rows of K/V (or Q/dO) per staged tile: two tiles of rows × d_head floats must fit the device's
 * workgroup memory (WebGPU's default limit is 16 KiB: 32 rows at d_head 64), at most 64.
 */
export function attentionTile(dh: number, storageBytes: number): number {
  const rows = Math.min(64, Math.floor(storageBytes / (2 * 4 * dh)));
  if (rows < 1) throw new Error(`attentionFused: d_head ${dh} does not fit ${storageBytes} bytes of workgroup memory`);
  return rows;
}

/** Workgroups: blocks of WG positions (WG / lanes queries with key lanes) × (b, h) pairs (folded into z past 65535). */
export function attentionGrid(B: number, H: number, T: number, lanes = 1): [number, number, number] {
  const bh = B * H;
  return [Math.ceil(T / (WG / lanes)), Math.min(bh, MAX_GROUPS), Math.ceil(bh / MAX_GROUPS)];
}

/**
 * attentionDense's function (device-ops.ts) as fused programs, on q, k, v [B·T, d]. Dropout on the
 * probabilities needs `a.rng` (the mask is drawn on the device from it); callers without one use the tfjs
 * ops.
 */
export function attentionFused(q: tf.Tensor2D, k: tf.Tensor2D, v: tf.Tensor2D, a: BatchedArgs): tf.Tensor2D {
  const f = attentionOp("separate", q.shape[1], a);
  return f(q, k, v) as tf.Tensor2D;
}

/** The same on the fused QKV projection's output qkv [B·T, 3d] (q | k | v along the columns). */
export function attentionFusedPacked(qkv: tf.Tensor2D, a: BatchedArgs): tf.Tensor2D {
  if (qkv.shape[1] % 3 !== 0) throw new Error(`attentionFusedPacked: width ${qkv.shape[1]} is not 3·d`);
  const f = attentionOp("packed", qkv.shape[1] / 3, a);
  return f(qkv) as tf.Tensor2D;
}

function attentionOp(layout: Layout, d: number, a: BatchedArgs): (...xs: tf.Tensor[]) => tf.Tensor {
  const B = a.batch, T = a.len, H = a.heads, N = B * T;
  if (d % H !== 0) throw new Error(`attentionFused: width ${d} not divisible by ${H} heads`);
  const dh = d / H;
  const drop = a.training && a.dropout > 0;
  if (drop && !a.rng) throw new Error("attentionFused: dropout needs an Rng");
  const maskT = tf.tensor1d(a.mask);
  const dropT = drop ? dropoutMaskDevice(B * H * T * T, a.dropout, a.rng!) : null;
  const uniforms = [
    { type: "uint32" as const, data: [B] },
    { type: "uint32" as const, data: [T] },
    { type: "uint32" as const, data: [H] },
    { type: "uint32" as const, data: [d] },
    { type: "float32" as const, data: [1 / Math.sqrt(dh)] },
  ];
  const threads = B * H * T;
  const be = webgpuBackend();
  const tile = attentionTile(dh, be.device.limits.maxComputeWorkgroupStorageSize ?? 16384);
  const lanes = attentionLanes(B, H, T, dh, tile);
  const key = `${layout}_${dh}_${tile}_${drop ? "drop" : "nodrop"}`;
  const run = (name: string, code: ShaderSource, inputs: tf.Tensor[], outputs: number[][], keyLanes = 1): tf.Tensor[] =>
    runRawProgram(be, { key: `qrag_attn_${name}_${key}${keyLanes > 1 ? `_l${keyLanes}` : ""}`, code, inputs, outputs: outputs.map((shape) => ({ shape })), uniforms, threads, workgroups: attentionGrid(B, H, T, keyLanes) }).map((i) => tf.engine().makeTensorFromTensorInfo(i));
  const extra = dropT ? [dropT] : [];
  const nIn = layout === "packed" ? 1 : 3;
  return tf.customGrad(((...args: unknown[]) => {
    const xs = args.slice(0, nIn) as tf.Tensor[];
    const save = args[nIn] as tf.GradSaveFunc;
    const [ctx, stats] = run("fwd", () => forwardCode(dh, layout, drop, tile, false, lanes), [...xs, maskT, ...extra], [[N, d], [threads, 2]], lanes);
    save([ctx, stats, maskT, ...extra, ...xs]);
    return {
      value: ctx,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [ctxS, st, m] = saved;
        const dr = drop ? [saved[3]] : [];
        const ins = saved.slice(3 + dr.length);
        const [dq, dsum] = run("bwdq", () => backwardQCode(dh, layout, drop, tile), [...ins, m, ...dr, st, dy, ctxS], [[N, d], [threads]]);
        if (layout === "packed") {
          const [dqkv] = run("bwdkv", () => backwardKVCode(dh, layout, drop, tile), [...ins, m, ...dr, st, dy, dsum, dq], [[N, 3 * d]]);
          tf.dispose([dq, dsum]);
          return [dqkv];
        }
        const [dk, dv] = run("bwdkv", () => backwardKVCode(dh, layout, drop, tile), [...ins, m, ...dr, st, dy, dsum], [[N, d], [N, d]]);
        dsum.dispose();
        return [dq, dk, dv];
      },
    };
  }) as CustomGradFn);
}
