/**
 * Multi-head attention softmax(QKᵀ/√d_head − 1e9·PAD_key)·V (with dropout on the probabilities)
 * as fused WebGPU programs: one forward, two backward, instead of device-ops.ts attentionDense's
 * ~10 tfjs ops each way (head split/merge transposes, two batched matmuls, mask add, softmax,
 * dropout).
 *
 * Why: on a GPU every tfjs op is a dispatch whose overhead dwarfs the arithmetic of our small
 * heads. The inputs stay in the dense [B·T, d] layout (heads contiguous along the columns), so no
 * transpose is needed; `attentionFusedPacked` reads q, k, v from the fused QKV projection's
 * [B·T, 3d] output directly (no column slices, one gradient tensor). Forward: one thread per (sequence, head, query) streams over the keys
 * with an online softmax and keeps the row's max and normaliser. Backward (the stored statistics
 * give the probabilities again, D_i = dO_i·O_i): dQ per query row, then dK and dV per key row.
 * The dropout mask is the one ops.ts `dropout` would draw for the [B, H, T, T] probabilities
 * (same Rng draws), passed in, so the function is attentionDense's exactly.
 */
import * as tf from "@tensorflow/tfjs";
import { dropoutMaskDevice } from "./dropout.ts";
import { runRawProgram, storageDecls, uniformStruct, webgpuBackend, WG } from "./raw-program.ts";
import type { BatchedArgs } from "../attention-args.ts";

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
function helpers(layout: Layout): string {
  const packed = layout === "packed";
  return `
fn io(b: u32, t: u32, h: u32) -> u32 { return (b * u.T + t) * ${packed ? "3u * u.d" : "u.d"} + h * DH; }
fn oo(b: u32, t: u32, h: u32) -> u32 { return (b * u.T + t) * u.d + h * DH; }
fn qAt(o: u32) -> f32 { return ${packed ? "qkv[o]" : "q[o]"}; }
fn kAt(o: u32) -> f32 { return ${packed ? "qkv[o + u.d]" : "k[o]"}; }
fn vAt(o: u32) -> f32 { return ${packed ? "qkv[o + 2u * u.d]" : "v[o]"}; }
fn keyBias(b: u32, j: u32) -> f32 { return select(-1e9, 0.0, mask[b * u.T + j] > 0.0); }
fn score(qo: u32, ko: u32) -> f32 {
  var s = 0.0;
  for (var c = 0u; c < DH; c++) { s += (qAt(qo + c) * u.scale) * kAt(ko + c); }
  return s;
}`;
}

function header(dh: number, layout: Layout, read: string[], write: string[]): string {
  const inputs = layout === "packed" ? ["qkv"] : ["q", "k", "v"];
  return `${uniformStruct(FIELDS)}
const DH: u32 = ${dh}u;
${storageDecls([...inputs, ...read], write)}
${helpers(layout)}
@compute @workgroup_size(${WG})`;
}

/** Thread → (query or key position, b·H + h, h, b). */
const THREAD = `let idx = threadIndex(gid);
  if (idx >= u.B * u.H * u.T) { return; }
  let t = idx % u.T;
  let bh = idx / u.T;
  let h = bh % u.H;
  let b = bh / u.H;`;

/** The forward program (fields FIELDS; inputs, mask[, drop] → ctx, stats), one thread per (b, h, query). */
export function forwardCode(dh: number, layout: Layout, drop: boolean): string {
  return `${header(dh, layout, ["mask", ...(drop ? ["drop"] : [])], ["ctx", "stats"])}
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  ${THREAD}
  let qo = io(b, t, h);
  var m = -3.0e38;
  var l = 0.0;
  var acc: array<f32, DH>;
  for (var c = 0u; c < DH; c++) { acc[c] = 0.0; }
  for (var j = 0u; j < u.T; j++) {
    let ko = io(b, j, h);
    let s = score(qo, ko) + keyBias(b, j);
    let mn = max(m, s);
    let corr = exp(m - mn);
    let p = exp(s - mn);
    l = l * corr + p;
    let w = p${drop ? " * drop[idx * u.T + j]" : ""};
    for (var c = 0u; c < DH; c++) { acc[c] = acc[c] * corr + w * vAt(ko + c); }
    m = mn;
  }
  let oq = oo(b, t, h);
  for (var c = 0u; c < DH; c++) { ctx[oq + c] = acc[c] / l; }
  stats[2u * idx] = m;
  stats[2u * idx + 1u] = l;
}`;
}

function backwardQCode(dh: number, layout: Layout, drop: boolean): string {
  return `${header(dh, layout, ["mask", ...(drop ? ["drop"] : []), "stats", "dO", "ctx"], ["dq", "dsum"])}
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  ${THREAD}
  let qo = io(b, t, h);
  let oq = oo(b, t, h);
  let m = stats[2u * idx];
  let l = stats[2u * idx + 1u];
  var D = 0.0;
  for (var c = 0u; c < DH; c++) { D += dO[oq + c] * ctx[oq + c]; }
  var acc: array<f32, DH>;
  for (var c = 0u; c < DH; c++) { acc[c] = 0.0; }
  for (var j = 0u; j < u.T; j++) {
    let ko = io(b, j, h);
    let p = exp(score(qo, ko) + keyBias(b, j) - m) / l;
    var dp = 0.0;
    for (var c = 0u; c < DH; c++) { dp += dO[oq + c] * vAt(ko + c); }
    let ds = p * (dp${drop ? " * drop[idx * u.T + j]" : ""} - D);
    for (var c = 0u; c < DH; c++) { acc[c] += ds * kAt(ko + c); }
  }
  for (var c = 0u; c < DH; c++) { dq[oq + c] = acc[c] * u.scale; }
  dsum[idx] = D;
}`;
}

/** dK, dV per key row; packed: written with dQ (an input here) into one [B·T, 3d] gradient. */
function backwardKVCode(dh: number, layout: Layout, drop: boolean): string {
  const packed = layout === "packed";
  const read = ["mask", ...(drop ? ["drop"] : []), "stats", "dO", "dsum", ...(packed ? ["dq"] : [])];
  const store = packed
    ? `let ok = oo(b, t, h);
  for (var c = 0u; c < DH; c++) {
    dqkv[ko + c] = dq[ok + c];
    dqkv[ko + u.d + c] = gk[c];
    dqkv[ko + 2u * u.d + c] = gv[c];
  }`
    : `let ok = oo(b, t, h);
  for (var c = 0u; c < DH; c++) { dk[ok + c] = gk[c]; dv[ok + c] = gv[c]; }`;
  return `${header(dh, layout, read, packed ? ["dqkv"] : ["dk", "dv"])}
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  ${THREAD}
  let ko = io(b, t, h);
  let bias = keyBias(b, t);
  var gk: array<f32, DH>;
  var gv: array<f32, DH>;
  for (var c = 0u; c < DH; c++) { gk[c] = 0.0; gv[c] = 0.0; }
  for (var i = 0u; i < u.T; i++) {
    let qo = io(b, i, h);
    let oq = oo(b, i, h);
    let r = bh * u.T + i;
    let p = exp(score(qo, ko) + bias - stats[2u * r]) / stats[2u * r + 1u];
    let keep = ${drop ? "drop[r * u.T + t]" : "1.0"};
    var dp = 0.0;
    for (var c = 0u; c < DH; c++) { dp += dO[oq + c] * vAt(ko + c); }
    let ds = p * (dp * keep - dsum[r]);
    for (var c = 0u; c < DH; c++) {
      gv[c] += (p * keep) * dO[oq + c];
      gk[c] += ds * (qAt(qo + c) * u.scale);
    }
  }
  ${store}
}`;
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
  const key = `${layout}_${dh}_${drop ? "drop" : "nodrop"}`;
  const run = (name: string, code: string, inputs: tf.Tensor[], outputs: number[][]): tf.Tensor[] =>
    runRawProgram(webgpuBackend(), { key: `qrag_attn_${name}_${key}`, code, inputs, outputs: outputs.map((shape) => ({ shape })), uniforms, threads }).map((i) => tf.engine().makeTensorFromTensorInfo(i));
  const extra = dropT ? [dropT] : [];
  const nIn = layout === "packed" ? 1 : 3;
  return tf.customGrad(((...args: unknown[]) => {
    const xs = args.slice(0, nIn) as tf.Tensor[];
    const save = args[nIn] as tf.GradSaveFunc;
    const [ctx, stats] = run("fwd", forwardCode(dh, layout, drop), [...xs, maskT, ...extra], [[N, d], [threads, 2]]);
    save([ctx, stats, maskT, ...extra, ...xs]);
    return {
      value: ctx,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [ctxS, st, m] = saved;
        const dr = drop ? [saved[3]] : [];
        const ins = saved.slice(3 + dr.length);
        const [dq, dsum] = run("bwdq", backwardQCode(dh, layout, drop), [...ins, m, ...dr, st, dy, ctxS], [[N, d], [threads]]);
        if (layout === "packed") {
          const [dqkv] = run("bwdkv", backwardKVCode(dh, layout, drop), [...ins, m, ...dr, st, dy, dsum, dq], [[N, 3 * d]]);
          tf.dispose([dq, dsum]);
          return [dqkv];
        }
        const [dk, dv] = run("bwdkv", backwardKVCode(dh, layout, drop), [...ins, m, ...dr, st, dy, dsum], [[N, d], [N, d]]);
        dsum.dispose();
        return [dq, dk, dv];
      },
    };
  }) as CustomGradFn);
}
