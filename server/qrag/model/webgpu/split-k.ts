/**
 * Weight gradients split along K. dW = Xᵀ·dY has few output tiles at the reference workload's
 * width (128×384: 12 workgroups of 64×64) and K = the batch's rows (2,048–4,096), so on a GPU of
 * 132 SMs most sit idle while a dozen workgroups walk K: on the H200 (run 6) these products were
 * 28 % of an iteration's GPU time. Split `s` ways, workgroup z sums its K/s rows into a partial
 * [s, m, n] (and its column sums, the bias's gradient, into [s, n]); one program then adds the
 * partials in a fixed order, so the result does not depend on scheduling (WGSL has no float
 * atomics). Wide products (BERT-base: 432 tiles and more) stay whole.
 */
import { storageDecls, uniformStruct, WG, type ShaderSource } from "./raw-program.ts";
import { tileFor } from "./matmul.ts";
import { productStep, type BufferLike, type Product, type Ref, type Step, type UniformValues } from "./recorded-encoder.ts";

/** Workgroups a split aims at (about two per SM of a 132-SM GPU), the fewest rows a part sums, the most parts. */
export const SPLIT_TARGET = { workgroups: 256, minRows: 128, maxParts: 16 };

/** The bench's `--split-k N`: at most N parts from now on (1: every product whole), for plans built after. */
export function setMaxSplit(parts: number): void {
  SPLIT_TARGET.maxParts = parts;
}

/** The parts to split a weight gradient's K rows into: a power of two, 1 where the product has tiles enough or K is short or does not divide. */
export function kSplit(m: number, n: number, k: number, parts = 1): number {
  const t = tileFor(m, parts * n, false);
  const tiles = parts * Math.ceil(n / (t.tn * t.wx)) * Math.ceil(m / (t.tm * t.wy));
  let s = 1;
  const { workgroups, minRows, maxParts } = SPLIT_TARGET;
  // K a multiple of s·bk keeps each part's slices whole (and an aligned product aligned)
  while (2 * s <= maxParts && 2 * s * tiles <= workgroups && k % (2 * s * t.bk) === 0 && k / (2 * s) >= minRows) s *= 2;
  return s;
}

/** A weight gradient's shape: W [m, n] (and its bias [n]) from K rows, `parts` of them sharing A (BERT's Q, K, V). */
export interface GradShape {
  m: number;
  n: number;
  parts?: number;
}

/** Floats of the partials' buffers a backward's weight gradients need (shared: the products run one after another), per part index: [C's, the sums']. */
export function splitScratchFloats(shapes: readonly GradShape[], k: number): { c: number[]; s: number[] } {
  const c: number[] = [], s: number[] = [];
  for (const g of shapes) {
    const parts = g.parts ?? 1;
    const split = kSplit(g.m, g.n, k, parts);
    if (split === 1) continue;
    for (let p = 0; p < parts; p++) {
      c[p] = Math.max(c[p] ?? 0, split * g.m * g.n);
      s[p] = Math.max(s[p] ?? 0, split * g.n);
    }
  }
  return { c, s };
}

/** The partials' buffers of a backward (none where no product splits). */
export interface SplitScratch {
  c: BufferLike[];
  s: BufferLike[];
}

export function splitScratch(b: { buf(floats: number): BufferLike }, shapes: readonly GradShape[], k: number): SplitScratch {
  const f = splitScratchFloats(shapes, k);
  return { c: f.c.map((n) => b.buf(n)), s: f.s.map((n) => b.buf(n)) };
}

/** W[i] = Σ_z P[z·n + i] for i < n, and b[j] = Σ_z Q[z·nb + j] for j < nb; one thread per element of W. */
export const SPLIT_SUM = `${uniformStruct(["n: u32", "nb: u32", "parts: u32"])}
${storageDecls(["P", "Q"], ["W", "bias"])}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = threadIndex(gid);
  if (i < u.n) {
    var s = 0.0;
    for (var z = 0u; z < u.parts; z++) { s += P[z * u.n + i]; }
    W[i] = s;
  }
  if (i < u.nb) {
    var s = 0.0;
    for (var z = 0u; z < u.parts; z++) { s += Q[z * u.nb + i]; }
    bias[i] = s;
  }
}`;

/** What records a weight gradient's programs: a plan builder's step and flat. */
interface Steps {
  step(s: Omit<Step, "slot">): Step;
  flat(key: string, code: ShaderSource, refs: Ref[], uniforms: UniformValues, threads: number): Step;
}

/**
 * A weight gradient Aᵀ·B and its bias's (`sums`): one product where it has tiles enough, else the
 * product split along K into `scratch` (sized by splitScratch for this shape) and one program per
 * part adding the partials into `out` and `sums`.
 */
export function weightGradient(b: Steps, p: Product & { sums: BufferLike[] }, scratch: SplitScratch): void {
  const parts = p.b.length;
  const split = kSplit(p.m, p.n, p.k, parts);
  if (split === 1) {
    b.step(productStep(p));
    return;
  }
  b.step(productStep({ ...p, out: scratch.c.slice(0, parts), sums: scratch.s.slice(0, parts), split }));
  for (let i = 0; i < parts; i++) b.flat("qrag_split_sum", SPLIT_SUM, [scratch.c[i], scratch.s[i], p.out[i], p.sums[i]], [["u", p.m * p.n], ["u", p.n], ["u", split]], p.m * p.n);
}
