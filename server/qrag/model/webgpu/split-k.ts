/**
 * Weight gradients split along K. dW = Xᵀ·dY has few output tiles at the reference workload's
 * width (128×384: 12 workgroups of 64×64) and K = the batch's rows (2,048–4,096), so on a GPU of
 * 132 SMs most sit idle while a dozen workgroups walk K: on the H200 (run 6) these products were
 * 28 % of an iteration's GPU time. Split `s` ways, workgroup z sums its K/s rows into a partial
 * [s, m, n] (and its column sums, the bias's gradient, into [s, n]); a program then adds the
 * partials in a fixed order, so the result does not depend on scheduling (WGSL has no float
 * atomics). Wide products (BERT-base: 432 tiles and more) stay whole. A layer's sums wait for its
 * last weight gradient and run as one program per SUMS_PER_PROGRAM (a layer's four: one dispatch
 * where each took its own), so each split product has partial buffers of its own.
 */
import { concatenatedArraysShader } from "./raw-program.ts";
import { tileFor, tileName, type MatmulTile } from "./matmul.ts";
import { productGroupStep, productStep, type BufferLike, type Product, type Ref, type Step, type UniformValues } from "./recorded-encoder.ts";

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

/**
 * Floats of the partials' buffers a backward's weight gradients need, one set per split product
 * (and part) of a layer in `shapes`' order: [C's, the sums'].
 */
export function splitScratchFloats(shapes: readonly GradShape[], k: number): { c: number[]; s: number[] } {
  const c: number[] = [], s: number[] = [];
  for (const g of shapes) {
    const parts = g.parts ?? 1;
    const split = kSplit(g.m, g.n, k, parts);
    if (split === 1) continue;
    for (let p = 0; p < parts; p++) {
      c.push(split * g.m * g.n);
      s.push(split * g.n);
    }
  }
  return { c, s };
}

/** What records a weight gradient's programs: a plan builder's step and flat. */
interface Steps {
  step(s: Omit<Step, "slot">): Step;
  flat(key: string, code: () => string, refs: Ref[], uniforms: UniformValues, threads: number): Step;
}

/** A split product's sum waiting for its program: its partials, its outputs, W's elements and the bias's, the parts. */
interface PendingSum {
  c: BufferLike;
  s: BufferLike;
  w: BufferLike;
  bias: BufferLike;
  n: number;
  nb: number;
  parts: number;
}

/** Split products' sums in one program: 4 storage bindings each, within the 16 a recorded plan requires (recorderBinds). */
export const SUMS_PER_PROGRAM = 4;
/** Weight gradients in one program (matmul.ts `group`): A, B, C and S each, 4 storage bindings. */
export const PRODUCTS_PER_PROGRAM = 4;

/**
 * Sums g = 0 … G−1 as arrays end to end (one thread per element of W_g): W_g[i] = Σ_z P_g[z·n_g + i]
 * and, for i < nb_g, bias_g[i] = Σ_z Q_g[z·nb_g + i], z in order (the same sums whatever the grouping).
 */
export function splitSumShader(G: number): string {
  const g = Array.from({ length: G }, (_, i) => i);
  return concatenatedArraysShader(
    g.flatMap((i) => [`n${i}: u32`, `nb${i}: u32`, `parts${i}: u32`]),
    g.flatMap((i) => [`P${i}`, `Q${i}`]),
    g.flatMap((i) => [`W${i}`, `bias${i}`]),
    g.map((i) => `    var s = 0.0;
    for (var z = 0u; z < u.parts${i}; z++) { s += P${i}[z * u.n${i} + j]; }
    W${i}[j] = s;
    if (j < u.nb${i}) {
      var t = 0.0;
      for (var z = 0u; z < u.parts${i}; z++) { t += Q${i}[z * u.nb${i} + j]; }
      bias${i}[j] = t;
    }`),
  );
}

/**
 * A backward's weight gradients Aᵀ·B with their biases': `gradient` takes each (split along K
 * where it has few tiles, its partials in buffers of its own), and `flush`, after a layer's last,
 * records them, PRODUCTS_PER_PROGRAM of one tile to a program (a product of several parts, BERT's
 * Q, K and V, alone), then the split ones' sums, SUMS_PER_PROGRAM to a program. The products run
 * at the flush, so what they read must still hold its values there (the backwards keep each
 * LayerNorm's masked gradient in a buffer of its own for this). The partials' buffers are a
 * layer's (sized by splitScratchFloats for `shapes`), used again after each flush.
 */
export function weightGradients(b: Steps & { buf(floats: number): BufferLike }, shapes: readonly GradShape[], k: number): { gradient(p: Product & { sums: BufferLike[] }): void; flush(): void } {
  const f = splitScratchFloats(shapes, k);
  const c = f.c.map((n) => b.buf(n)), s = f.s.map((n) => b.buf(n));
  let pending: PendingSum[] = [];
  let products: (Product & { split: number })[] = [];
  return {
    gradient: (p) => {
      const parts = p.b.length;
      const split = kSplit(p.m, p.n, p.k, parts);
      if (split === 1) {
        products.push({ ...p, split });
        return;
      }
      // the next free partials of this size (a layer's products each take their own)
      const at = pending.length;
      for (let i = 0; i < parts; i++) {
        if (f.c[at + i] !== split * p.m * p.n) throw new Error(`weightGradients: a ${p.m}×${p.n} product split ${split} ways is not the layer's gradient ${at + i + 1} (${shapes.length} shapes given)`);
        pending.push({ c: c[at + i], s: s[at + i], w: p.out[i], bias: p.sums[i], n: p.m * p.n, nb: p.n, parts: split });
      }
      products.push({ ...p, out: c.slice(at, at + parts), sums: s.slice(at, at + parts), split });
    },
    flush: () => {
      // groups of one tile and one A type, in the products' order
      const groups = new Map<string, (Product & { split: number })[][]>();
      for (const p of products) {
        if (p.b.length > 1) {
          b.step(productStep(p));
          continue;
        }
        const key = `${tileName(gradientTile(p))}${p.hA ? "h" : ""}`;
        const list = groups.get(key) ?? [];
        if (list.length === 0 || list[list.length - 1].length === PRODUCTS_PER_PROGRAM) list.push([]);
        list[list.length - 1].push(p);
        groups.set(key, list);
      }
      for (const list of groups.values()) {
        for (const g of list) b.step(g.length === 1 ? productStep(g[0]) : productGroupStep(g, gradientTile(g[0])));
      }
      products = [];
      for (let i = 0; i < pending.length; i += SUMS_PER_PROGRAM) {
        const group = pending.slice(i, i + SUMS_PER_PROGRAM);
        const G = group.length;
        b.flat(`qrag_split_sum_${G}`, () => splitSumShader(G), [...group.flatMap((x) => [x.c, x.s]), ...group.flatMap((x) => [x.w, x.bias])], group.flatMap((x): UniformValues => [["u", x.n], ["u", x.nb], ["u", x.parts]]), group.reduce((a, x) => a + x.n, 0));
      }
      pending = [];
    },
  };
}

/** The tile a weight gradient takes (productStep's: no 32×32 tiles; it splits along K instead). */
const gradientTile = (p: Product): MatmulTile => tileFor(p.m, p.b.length * p.n, false);
