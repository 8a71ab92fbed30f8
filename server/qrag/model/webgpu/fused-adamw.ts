/**
 * AdamW and Polyak averaging as fused WebGPU programs (the device path's optimizer step).
 *
 * Why: agent/adamw.ts updates each variable with ~14 tfjs ops and the Polyak target update takes
 * 3 more; on a GPU each op costs a dispatch whose overhead dwarfs the arithmetic (the transformer
 * update makes ~1000 dispatches per optimizer step). Here one program updates p, m and v of as
 * many variables as the device's storage-buffer limit allows (7 buffers per variable), with the
 * gradient-clipping factor applied on the way in, and one program averages as many target
 * variables as fit (3 buffers each). The arithmetic is agent/adamw.ts's, op for op in the same
 * order (torch AdamW: decoupled decay, then the bias-corrected Adam step), in float32.
 */
import * as tf from "@tensorflow/tfjs";
import { concatenatedArraysShader, runRawProgram, storageBufferLimit, storageDecls, uniformStruct, webgpuBackend, WG, type Uniform, workgroupSum } from "./raw-program.ts";

/** One variable's update: current p, m, v, its float32 gradient and its own step constants. */
export interface AdamWSlot {
  p: tf.Tensor;
  g: tf.Tensor;
  m: tf.Tensor;
  v: tf.Tensor;
  /** lr / (1 − β1^t) for this variable's step count t. */
  stepSize: number;
  /** √(1 − β2^t). */
  bc2Sqrt: number;
  /** 1 − lr·weight_decay (1 without decay). */
  decay: number;
}

export interface AdamWConstants {
  beta1: number;
  beta2: number;
  eps: number;
}

function adamwCode(k: number, scaled: boolean): string {
  const read: string[] = [];
  const write: string[] = [];
  for (let i = 0; i < k; i++) read.push(`p${i}`, `g${i}`, `m${i}`, `v${i}`);
  if (scaled) read.push("scale");
  for (let i = 0; i < k; i++) write.push(`po${i}`, `mo${i}`, `vo${i}`);
  const fields = ["b1: f32", "c1: f32", "b2: f32", "c2: f32", "eps: f32"];
  for (let i = 0; i < k; i++) fields.push(`n${i}: u32`, `s${i}: f32`, `bc${i}: f32`, `d${i}: f32`);
  const bodies = Array.from(
    { length: k },
    (_, i) => `    let g = g${i}[j]${scaled ? " * scale[0]" : ""};
    let m = m${i}[j] * u.b1 + g * u.c1;
    let v = v${i}[j] * u.b2 + (g * g) * u.c2;
    mo${i}[j] = m;
    vo${i}[j] = v;
    let denom = sqrt(v) / u.bc${i} + u.eps;
    po${i}[j] = p${i}[j] * u.d${i} - (m / denom) * u.s${i};`,
  );
  return concatenatedArraysShader(fields, read, write, bodies);
}

/** How many variables one program takes: 7 storage buffers each, plus the scale. */
function perProgram(buffersEach: number, shared: number): number {
  return Math.max(1, Math.floor((storageBufferLimit() - shared) / buffersEach));
}

/**
 * One AdamW step of every slot, on the device: returns the new p, m, v per slot (new tensors, the
 * caller assigns and disposes them). `scale` (a scalar tensor, e.g. the clipping factor) multiplies
 * every gradient first.
 */
export function adamwStepFused(slots: readonly AdamWSlot[], c: AdamWConstants, scale?: tf.Scalar): { p: tf.Tensor; m: tf.Tensor; v: tf.Tensor }[] {
  const be = webgpuBackend();
  const engine = tf.engine();
  const k = perProgram(7, scale ? 1 : 0);
  const out: { p: tf.Tensor; m: tf.Tensor; v: tf.Tensor }[] = [];
  for (let at = 0; at < slots.length; at += k) {
    const group = slots.slice(at, at + k);
    for (const s of group) {
      if (s.g.dtype !== "float32" || s.p.dtype !== "float32") throw new Error("adamwStepFused: float32 tensors only");
    }
    const inputs: tf.TensorInfo[] = group.flatMap((s) => [s.p, s.g, s.m, s.v]);
    if (scale) inputs.push(scale);
    const uniforms: Uniform[] = [c.beta1, 1 - c.beta1, c.beta2, 1 - c.beta2, c.eps].map((x) => ({ type: "float32", data: [x] }));
    for (const s of group) {
      uniforms.push({ type: "uint32", data: [s.p.size] }, { type: "float32", data: [s.stepSize] }, { type: "float32", data: [s.bc2Sqrt] }, { type: "float32", data: [s.decay] });
    }
    const infos = runRawProgram(be, {
      key: `qrag_adamw_${group.length}_${scale ? "s" : "u"}`,
      code: adamwCode(group.length, Boolean(scale)),
      inputs,
      outputs: group.flatMap((s) => [{ shape: s.p.shape }, { shape: s.p.shape }, { shape: s.p.shape }]),
      uniforms,
      threads: group.reduce((a, s) => a + s.p.size, 0),
    });
    const t = infos.map((i) => engine.makeTensorFromTensorInfo(i));
    for (let i = 0; i < group.length; i++) out.push({ p: t[3 * i], m: t[3 * i + 1], v: t[3 * i + 2] });
  }
  return out;
}

function polyakCode(k: number): string {
  const read: string[] = [];
  for (let i = 0; i < k; i++) read.push(`t${i}`, `o${i}`);
  const write = Array.from({ length: k }, (_, i) => `r${i}`);
  const fields = ["keep: f32", "tau: f32", ...Array.from({ length: k }, (_, i) => `n${i}: u32`)];
  const bodies = Array.from({ length: k }, (_, i) => `    r${i}[j] = t${i}[j] * u.keep + o${i}[j] * u.tau;`);
  return concatenatedArraysShader(fields, read, write, bodies);
}

/**
 * Polyak averaging tgt·(1 − τ) + online·τ of each pair (base.ts polyakFrom's arithmetic), as few
 * programs as the storage-buffer limit allows. Returns new tensors aligned with `pairs`.
 */
export function polyakFused(pairs: readonly { target: tf.Tensor; online: tf.Tensor }[], tau: number): tf.Tensor[] {
  const be = webgpuBackend();
  const engine = tf.engine();
  const k = perProgram(3, 0);
  const out: tf.Tensor[] = [];
  for (let at = 0; at < pairs.length; at += k) {
    const group = pairs.slice(at, at + k);
    for (const pr of group) {
      if (pr.target.size !== pr.online.size || pr.target.dtype !== "float32" || pr.online.dtype !== "float32") throw new Error("polyakFused: float32 pairs of one size only");
    }
    const infos = runRawProgram(be, {
      key: `qrag_polyak_${group.length}`,
      code: polyakCode(group.length),
      inputs: group.flatMap((pr) => [pr.target, pr.online]),
      outputs: group.map((pr) => ({ shape: pr.target.shape })),
      uniforms: [{ type: "float32", data: [1 - tau] }, { type: "float32", data: [tau] }, ...group.map((pr): Uniform => ({ type: "uint32", data: [pr.target.size] }))],
      threads: group.reduce((a, pr) => a + pr.target.size, 0),
    });
    for (const i of infos) out.push(engine.makeTensorFromTensorInfo(i));
  }
  return out;
}

function sumSquaresCode(k: number): string {
  const read = Array.from({ length: k }, (_, i) => `g${i}`);
  const fields = ["groups: u32", ...read.map((_, i) => `n${i}: u32`)];
  const loops = read.map((_, i) => `  for (var j = first; j < u.n${i}; j += step) { let x = g${i}[j]; s += x * x; }`);
  return `${uniformStruct(fields)}
${storageDecls(read, ["part"])}
var<workgroup> acc: array<f32, ${WG}>;
@compute @workgroup_size(${WG})
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let first = wid.x * ${WG}u + lid.x;
  let step = u.groups * ${WG}u;
  var s = 0.0;
${loops.join("\n")}
  ${workgroupSum("s")}
  if (lid.x == 0u) { part[wid.x] = acc[0]; }
}`;
}

/**
 * The sum of k arrays of partial sums in one thread: into `total[0]`, or, finishing, into the norm
 * √Σ and the clipping factor min(1, maxNorm/(norm + 1e-6)).
 */
function partialsCode(k: number, finish: boolean): string {
  const read = Array.from({ length: k }, (_, i) => `p${i}`);
  const fields = ["maxNorm: f32", ...read.map((_, i) => `n${i}: u32`)];
  const sums = read.map((_, i) => `  for (var j = 0u; j < u.n${i}; j++) { s += p${i}[j]; }`);
  const store = finish ? `  let n = sqrt(s);
  norm[0] = n;
  coef[0] = min(1.0, u.maxNorm / (n + 1e-6));` : "  total[0] = s;";
  return `${uniformStruct(fields)}
${storageDecls(read, finish ? ["norm", "coef"] : ["total"])}
@compute @workgroup_size(1)
fn main() {
  var s = 0.0;
${sums.join("\n")}
${store}
}`;
}

/** One single-thread program over arrays of partial sums (partialsCode). */
function sumPartials(parts: readonly tf.Tensor[], maxNorm: number, finish: boolean): tf.Tensor[] {
  const infos = runRawProgram(webgpuBackend(), {
    key: `qrag_${finish ? "clip_finish" : "sum_partials"}_${parts.length}`,
    code: partialsCode(parts.length, finish),
    inputs: [...parts],
    outputs: finish ? [{ shape: [] }, { shape: [] }] : [{ shape: [1] }],
    uniforms: [{ type: "float32", data: [maxNorm] }, ...parts.map((x): Uniform => ({ type: "uint32", data: [x.size] }))],
    threads: 1,
    workgroups: [1, 1, 1],
  });
  return infos.map((i) => tf.engine().makeTensorFromTensorInfo(i));
}

/**
 * The gradient-clipping norm ‖all tensors‖₂ and factor min(1, maxNorm/(norm + 1e-6)) as scalars:
 * one program per group of tensors that fits the storage-buffer limit, each workgroup summing
 * squares over a strided share of the group into one partial, then one program for the sum of the
 * partials, the square root and the factor (tfjs's concat, sum, sqrt, add, div and minimum before).
 */
export function clipNormFused(xs: readonly tf.Tensor[], maxNorm: number): { norm: tf.Scalar; coef: tf.Scalar } {
  const be = webgpuBackend();
  const k = perProgram(1, 1);
  const engine = tf.engine();
  return tf.tidy(() => {
    let parts: tf.Tensor[] = [];
    for (let at = 0; at < xs.length; at += k) {
      const group = xs.slice(at, at + k).map((x) => (x.dtype === "float32" ? x : tf.cast(x, "float32")));
      const total = group.reduce((a, x) => a + x.size, 0);
      const groups = Math.max(1, Math.min(256, Math.ceil(total / (WG * 16))));
      const [info] = runRawProgram(be, {
        key: `qrag_sumsq_${group.length}`,
        code: sumSquaresCode(group.length),
        inputs: group,
        outputs: [{ shape: [groups] }],
        uniforms: [{ type: "uint32", data: [groups] }, ...group.map((x): Uniform => ({ type: "uint32", data: [x.size] }))],
        threads: groups * WG,
      });
      parts.push(engine.makeTensorFromTensorInfo(info));
    }
    // more partials than the finishing program takes (BERT-base's ~400 tensors make 27 groups
    // where a stage has 16 storage buffers): sum them in groups first, as often as needed
    for (let fit = perProgram(1, 2); parts.length > fit; ) {
      const next: tf.Tensor[] = [];
      for (let at = 0; at < parts.length; at += k) next.push(...sumPartials(parts.slice(at, at + k), maxNorm, false));
      parts = next;
    }
    const [norm, coef] = sumPartials(parts, maxNorm, true);
    return { norm: norm as tf.Scalar, coef: coef as tf.Scalar };
  });
}
