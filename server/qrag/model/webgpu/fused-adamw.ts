/**
 * AdamW and Polyak averaging as fused WebGPU programs (the device path's optimizer step).
 *
 * Why: agent/adamw.ts updates each variable with ~14 tfjs ops and the Polyak target update takes
 * 3 more; on a GPU each op costs a dispatch whose overhead dwarfs the arithmetic (the transformer
 * update makes ~1000 dispatches per optimizer step). Here one program updates p, m and v in place
 * (in-place.ts) of as many variables as the device's storage-buffer limit allows (the gradients
 * and moments packed, grad-pack.ts: one binding each for all; p and its Polyak target, averaged
 * in the same program, one each), with the gradient-clipping factor applied on the way in, and
 * one program averages as many other target variables as fit (2 buffers each). The arithmetic is agent/adamw.ts's and base.ts polyakAverage's, op for op in the
 * same order (torch AdamW: decoupled decay, then the bias-corrected Adam step), in float32.
 */
import * as tf from "@tensorflow/tfjs";
import { ownBuffer } from "./in-place.ts";
import { concatenatedArraysShader, runRawProgram, storageBufferLimit, storageDecls, uniformStruct, webgpuBackend, WG, type Uniform, workgroupSum } from "./raw-program.ts";

/** One variable's update: p (and its Polyak target) written in place, its gradient and moments at `offset` of the packs, its own step constants. */
export interface AdamWSlot {
  p: tf.Variable;
  /** Where its gradient and moments start in the packs (grad-pack.ts layout), in elements. */
  offset: number;
  /** The Polyak target averaged from the new p in the same program (AdamWConstants.tau). */
  target?: tf.Variable;
  /** lr / (1 − β1^t) for this variable's step count t. */
  stepSize: number;
  /** √(1 − β2^t). */
  bc2Sqrt: number;
  /** 1 − lr·weight_decay (1 without decay). */
  decay: number;
}

/** The packs a step reads and writes: the gradients (grad-pack.ts), the first and second moments, one layout. */
export interface AdamWPacks {
  g: tf.Tensor;
  m: tf.Variable;
  v: tf.Variable;
}

export interface AdamWConstants {
  beta1: number;
  beta2: number;
  eps: number;
  /** Polyak τ of the slots' targets (0 < τ < 1), where they have one. */
  tau?: number;
}

function adamwCode(k: number, scaled: boolean, averaged: boolean): string {
  const read = ["gs", ...(scaled ? ["scale"] : [])];
  const write = ["ms", "vs"];
  for (let i = 0; i < k; i++) write.push(`p${i}`, ...(averaged ? [`t${i}`] : []));
  const fields = ["b1: f32", "c1: f32", "b2: f32", "c2: f32", "eps: f32", "keep: f32", "tau: f32"];
  for (let i = 0; i < k; i++) fields.push(`n${i}: u32`, `o${i}: u32`, `s${i}: f32`, `bc${i}: f32`, `d${i}: f32`);
  const bodies = Array.from(
    { length: k },
    (_, i) => `    let at = u.o${i} + j;
    let g = gs[at]${scaled ? " * scale[0]" : ""};
    let m = ms[at] * u.b1 + g * u.c1;
    let v = vs[at] * u.b2 + (g * g) * u.c2;
    ms[at] = m;
    vs[at] = v;
    let denom = sqrt(v) / u.bc${i} + u.eps;
    let p = p${i}[j] * u.d${i} - (m / denom) * u.s${i};
    p${i}[j] = p;${averaged ? `\n    t${i}[j] = ${POLYAK_EXPR(`t${i}[j]`, "p")};` : ""}`,
  );
  return concatenatedArraysShader(fields, read, write, bodies);
}

/** Polyak averaging of one element (base.ts polyakAverage's arithmetic: tgt·(1 − τ) + online·τ). */
const POLYAK_EXPR = (target: string, online: string): string => `${target} * u.keep + ${online} * u.tau`;

/** How many variables one program takes: `buffersEach` storage buffers each, plus `shared`. */
function perProgram(buffersEach: number, shared: number): number {
  return Math.max(1, Math.floor((storageBufferLimit() - shared) / buffersEach));
}

/**
 * One AdamW step of every slot on the device, in place (in-place.ts): p and its moments, and where
 * a slot has a target, its Polyak average with the new p. The gradients and moments are packs
 * (one binding each for all slots), so a program takes as many slots as their p (and target) fit
 * the storage-buffer limit: 6 with targets at 16 bindings. `scale` (a scalar tensor, e.g. the
 * clipping factor) multiplies every gradient first. Programs take all slots with targets or none.
 */
export function adamwStepFused(slots: readonly AdamWSlot[], packs: AdamWPacks, c: AdamWConstants, scale?: tf.Scalar): void {
  const be = webgpuBackend();
  const averaged = slots.some((s) => s.target);
  if (averaged && !slots.every((s) => s.target)) throw new Error("adamwStepFused: targets for all slots or none");
  const tau = c.tau ?? 0;
  if (averaged && !(tau > 0 && tau < 1)) throw new Error(`adamwStepFused: Polyak τ must be in (0, 1), got ${tau}`);
  if (packs.g.dtype !== "float32" || packs.m.size !== packs.g.size || packs.v.size !== packs.g.size) throw new Error("adamwStepFused: float32 packs of one size only");
  for (const s of slots) {
    if (s.p.dtype !== "float32") throw new Error("adamwStepFused: float32 variables only");
    if (s.offset + s.p.size > packs.g.size) throw new Error(`adamwStepFused: ${s.p.name} past the packs' end`);
  }
  ownBuffer(packs.m, be);
  ownBuffer(packs.v, be);
  const k = perProgram(averaged ? 2 : 1, 3 + (scale ? 1 : 0));
  for (let at = 0; at < slots.length; at += k) {
    const group = slots.slice(at, at + k);
    const written = group.flatMap((s) => [s.p, ...(s.target ? [s.target] : [])]);
    for (const v of written) ownBuffer(v, be);
    const uniforms: Uniform[] = [c.beta1, 1 - c.beta1, c.beta2, 1 - c.beta2, c.eps, 1 - tau, tau].map((x) => ({ type: "float32", data: [x] }));
    for (const s of group) {
      uniforms.push({ type: "uint32", data: [s.p.size] }, { type: "uint32", data: [s.offset] }, { type: "float32", data: [s.stepSize] }, { type: "float32", data: [s.bc2Sqrt] }, { type: "float32", data: [s.decay] });
    }
    runRawProgram(be, {
      key: `qrag_adamw_${group.length}_${scale ? "s" : "u"}${averaged ? "_t" : ""}`,
      code: () => adamwCode(group.length, Boolean(scale), averaged),
      inputs: [packs.g, ...(scale ? [scale] : [])],
      outputs: [],
      inPlace: [packs.m, packs.v, ...written],
      uniforms,
      threads: group.reduce((a, s) => a + s.p.size, 0),
    });
  }
}

function blendCode(k: number): string {
  const read = Array.from({ length: k }, (_, i) => `o${i}`);
  const write = Array.from({ length: k }, (_, i) => `t${i}`);
  const fields = ["keep: f32", "tau: f32", ...Array.from({ length: k }, (_, i) => `n${i}: u32`)];
  const bodies = Array.from({ length: k }, (_, i) => `    t${i}[j] = ${POLYAK_EXPR(`t${i}[j]`, `o${i}[j]`)};`);
  return concatenatedArraysShader(fields, read, write, bodies);
}

/**
 * target ← target·keep + source·scale of each pair (float32, one size), in place: the targets'
 * buffers must be their own (in-place.ts ownBuffer, ownTensor). As few programs as the
 * storage-buffer limit allows (2 buffers a pair; empty pairs take none). Polyak's average is
 * (1 − τ, τ); accumulate.ts's sums are (1, 1), exactly target + source (x·1 is x in float32).
 */
export function blendInPlace(pairs: readonly { target: tf.Tensor; source: tf.Tensor }[], keep: number, scale: number): void {
  const be = webgpuBackend();
  const k = perProgram(2, 0);
  const live = pairs.filter((pr) => pr.target.size > 0);
  for (let at = 0; at < live.length; at += k) {
    const group = live.slice(at, at + k);
    runRawProgram(be, {
      key: `qrag_blend_${group.length}`,
      code: () => blendCode(group.length),
      inputs: group.map((pr) => pr.source),
      outputs: [],
      inPlace: group.map((pr) => pr.target),
      uniforms: [{ type: "float32", data: [keep] }, { type: "float32", data: [scale] }, ...group.map((pr): Uniform => ({ type: "uint32", data: [pr.target.size] }))],
      threads: group.reduce((a, pr) => a + pr.target.size, 0),
    });
  }
}

/**
 * Polyak averaging tgt ← tgt·(1 − τ) + online·τ of each pair (base.ts polyakAverage's arithmetic),
 * in place (in-place.ts).
 */
export function polyakFused(pairs: readonly { target: tf.Variable; online: tf.Tensor }[], tau: number): void {
  const be = webgpuBackend();
  for (const pr of pairs) {
    if (pr.target.size !== pr.online.size || pr.target.dtype !== "float32" || pr.online.dtype !== "float32") throw new Error("polyakFused: float32 pairs of one size only");
    ownBuffer(pr.target, be);
  }
  blendInPlace(pairs.map((pr) => ({ target: pr.target, source: pr.online })), 1 - tau, tau);
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
    code: () => partialsCode(parts.length, finish),
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
        code: () => sumSquaresCode(group.length),
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
