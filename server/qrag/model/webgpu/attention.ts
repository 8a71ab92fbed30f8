/**
 * Multi-head attention softmax(QKᵀ/√d_head − 1e9·PAD_key)·V (with dropout on the probabilities)
 * as fused WebGPU programs: one forward, two backward, instead of device-ops.ts attentionDense's
 * ~10 tfjs ops each way (head split/merge transposes, two batched matmuls, mask add, softmax,
 * dropout).
 *
 * Why: on a GPU every tfjs op is a dispatch whose overhead dwarfs the arithmetic of our small
 * heads. The inputs stay in the dense [B·T, d] layout (heads contiguous along the columns), so no
 * transpose is needed. Forward: one thread per (sequence, head, query) streams over the keys
 * with an online softmax and keeps the row's max and normaliser. Backward (the stored statistics
 * give the probabilities again, D_i = dO_i·O_i): dQ per query row, then dK and dV per key row.
 * The dropout mask is the one ops.ts `dropout` would draw for the [B, H, T, T] probabilities
 * (same Rng draws), passed in, so the function is attentionDense's exactly.
 */
import * as tf from "@tensorflow/tfjs";
import { dropoutMask } from "../ops.ts";
import { runRawProgram, storageDecls, uniformStruct, webgpuBackend, WG } from "./raw-program.ts";
import type { BatchedArgs } from "../attention.ts";

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

const FIELDS = ["B: u32", "T: u32", "H: u32", "d: u32", "scale: f32"];

/** Index helpers shared by the three programs: thread → (b, h, row), offsets of rows. */
const INDEX = `
fn rowOffset(b: u32, t: u32, h: u32) -> u32 { return (b * u.T + t) * u.d + h * DH; }
fn keyBias(b: u32, j: u32) -> f32 { return select(-1e9, 0.0, mask[b * u.T + j] > 0.0); }
fn score(qo: u32, ko: u32) -> f32 {
  var s = 0.0;
  for (var c = 0u; c < DH; c++) { s += (q[qo + c] * u.scale) * k[ko + c]; }
  return s;
}`;

function header(dh: number, read: string[], write: string[]): string {
  return `${uniformStruct(FIELDS)}
const DH: u32 = ${dh}u;
${storageDecls(read, write)}
${INDEX}
@compute @workgroup_size(${WG})`;
}

function forwardCode(dh: number, drop: boolean): string {
  const read = ["q", "k", "v", "mask", ...(drop ? ["drop"] : [])];
  return `${header(dh, read, ["ctx", "stats"])}
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let idx = threadIndex(gid);
  if (idx >= u.B * u.H * u.T) { return; }
  let i = idx % u.T;
  let bh = idx / u.T;
  let h = bh % u.H;
  let b = bh / u.H;
  let qo = rowOffset(b, i, h);
  var m = -3.0e38;
  var l = 0.0;
  var acc: array<f32, DH>;
  for (var c = 0u; c < DH; c++) { acc[c] = 0.0; }
  for (var j = 0u; j < u.T; j++) {
    let ko = rowOffset(b, j, h);
    let s = score(qo, ko) + keyBias(b, j);
    let mn = max(m, s);
    let corr = exp(m - mn);
    let p = exp(s - mn);
    l = l * corr + p;
    let w = p${drop ? " * drop[idx * u.T + j]" : ""};
    for (var c = 0u; c < DH; c++) { acc[c] = acc[c] * corr + w * v[ko + c]; }
    m = mn;
  }
  for (var c = 0u; c < DH; c++) { ctx[qo + c] = acc[c] / l; }
  stats[2u * idx] = m;
  stats[2u * idx + 1u] = l;
}`;
}

function backwardQCode(dh: number, drop: boolean): string {
  const read = ["q", "k", "v", "mask", ...(drop ? ["drop"] : []), "stats", "dO", "ctx"];
  return `${header(dh, read, ["dq", "dsum"])}
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let idx = threadIndex(gid);
  if (idx >= u.B * u.H * u.T) { return; }
  let i = idx % u.T;
  let bh = idx / u.T;
  let h = bh % u.H;
  let b = bh / u.H;
  let qo = rowOffset(b, i, h);
  let m = stats[2u * idx];
  let l = stats[2u * idx + 1u];
  var D = 0.0;
  for (var c = 0u; c < DH; c++) { D += dO[qo + c] * ctx[qo + c]; }
  var acc: array<f32, DH>;
  for (var c = 0u; c < DH; c++) { acc[c] = 0.0; }
  for (var j = 0u; j < u.T; j++) {
    let ko = rowOffset(b, j, h);
    let p = exp(score(qo, ko) + keyBias(b, j) - m) / l;
    var dp = 0.0;
    for (var c = 0u; c < DH; c++) { dp += dO[qo + c] * v[ko + c]; }
    let ds = p * (dp${drop ? " * drop[idx * u.T + j]" : ""} - D);
    for (var c = 0u; c < DH; c++) { acc[c] += ds * k[ko + c]; }
  }
  for (var c = 0u; c < DH; c++) { dq[qo + c] = acc[c] * u.scale; }
  dsum[idx] = D;
}`;
}

function backwardKVCode(dh: number, drop: boolean): string {
  const read = ["q", "k", "v", "mask", ...(drop ? ["drop"] : []), "stats", "dO", "dsum"];
  return `${header(dh, read, ["dk", "dv"])}
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let idx = threadIndex(gid);
  if (idx >= u.B * u.H * u.T) { return; }
  let j = idx % u.T;
  let bh = idx / u.T;
  let h = bh % u.H;
  let b = bh / u.H;
  let ko = rowOffset(b, j, h);
  let bias = keyBias(b, j);
  var gk: array<f32, DH>;
  var gv: array<f32, DH>;
  for (var c = 0u; c < DH; c++) { gk[c] = 0.0; gv[c] = 0.0; }
  for (var i = 0u; i < u.T; i++) {
    let qo = rowOffset(b, i, h);
    let r = bh * u.T + i;
    let p = exp(score(qo, ko) + bias - stats[2u * r]) / stats[2u * r + 1u];
    let keep = ${drop ? "drop[r * u.T + j]" : "1.0"};
    var dp = 0.0;
    for (var c = 0u; c < DH; c++) { dp += dO[qo + c] * v[ko + c]; }
    let ds = p * (dp * keep - dsum[r]);
    for (var c = 0u; c < DH; c++) {
      gv[c] += (p * keep) * dO[qo + c];
      gk[c] += ds * (q[qo + c] * u.scale);
    }
  }
  for (var c = 0u; c < DH; c++) { dk[ko + c] = gk[c]; dv[ko + c] = gv[c]; }
}`;
}

/**
 * attentionDense's function (device-ops.ts) as fused programs. Dropout on the probabilities needs
 * `a.rng` (the mask is drawn on the host); callers without one use the tfjs ops.
 */
export function attentionFused(q: tf.Tensor2D, k: tf.Tensor2D, v: tf.Tensor2D, a: BatchedArgs): tf.Tensor2D {
  const B = a.batch, T = a.len, H = a.heads, N = B * T;
  const d = q.shape[1];
  const dh = d / H;
  const drop = a.training && a.dropout > 0;
  if (drop && !a.rng) throw new Error("attentionFused: dropout needs an Rng");
  const maskT = tf.tensor1d(a.mask);
  const dropT = drop ? tf.tensor1d(dropoutMask(B * H * T * T, a.dropout, a.rng!)) : null;
  const uniforms = [
    { type: "uint32" as const, data: [B] },
    { type: "uint32" as const, data: [T] },
    { type: "uint32" as const, data: [H] },
    { type: "uint32" as const, data: [d] },
    { type: "float32" as const, data: [1 / Math.sqrt(dh)] },
  ];
  const threads = B * H * T;
  const key = `${dh}_${drop ? "drop" : "nodrop"}`;
  const run = (name: string, code: string, inputs: tf.Tensor[], outputs: number[][]): tf.Tensor[] =>
    runRawProgram(webgpuBackend(), { key: `qrag_attn_${name}_${key}`, code, inputs, outputs: outputs.map((shape) => ({ shape })), uniforms, threads }).map((i) => tf.engine().makeTensorFromTensorInfo(i));
  const extra = dropT ? [dropT] : [];
  const f = tf.customGrad(((qi: tf.Tensor, ki: tf.Tensor, vi: tf.Tensor, save: tf.GradSaveFunc) => {
    const [ctx, stats] = run("fwd", forwardCode(dh, drop), [qi, ki, vi, maskT, ...extra], [[N, d], [threads, 2]]);
    save([qi, ki, vi, ctx, stats, maskT, ...extra]);
    return {
      value: ctx,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [qs, ks, vs, ctxS, st, m, ...dr] = saved;
        const [dq, dsum] = run("bwdq", backwardQCode(dh, drop), [qs, ks, vs, m, ...dr, st, dy, ctxS], [[N, d], [threads]]);
        const [dk, dv] = run("bwdkv", backwardKVCode(dh, drop), [qs, ks, vs, m, ...dr, st, dy, dsum], [[N, d], [N, d]]);
        dsum.dispose();
        return [dq, dk, dv];
      },
    };
  }) as CustomGradFn);
  return f(q, k, v) as tf.Tensor2D;
}
