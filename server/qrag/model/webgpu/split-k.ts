/**
 * Weight gradients split along K. dW = Xᵀ·dY has few output tiles at the reference workload's
 * width (128×384: 12 workgroups of 64×64) and K = the batch's rows (2,048–4,096), so on a GPU of
 * 132 SMs most sit idle while a dozen workgroups walk K: on the H200 (run 6) these products were
 * 28 % of an iteration's GPU time. Split `s` ways, workgroup z sums its K/s rows into a partial
 * [s, m, n] (and its column sums, the bias's gradient, into [s, n]); a program then adds the
 * partials in a fixed order, so the result does not depend on scheduling (WGSL has no float
 * atomics). Wide products (BERT-base: 432 tiles and more) stay whole. A layer's products wait
 * for its end and run four to a program; their sums, and its LayerNorms' (the partial sums their
 * dx programs write), then run as one program per SUMS_PER_PROGRAM, so each split product has
 * partials of its own (parts of one scratch buffer).
 */
import { concatenatedArraysShader } from "./raw-program.ts";
import { rowWorkgroups } from "./row-reduce.ts";
import { LN_PARTS } from "./gelu-layernorm.ts";
import { alignUp } from "./grad-pack.ts";
import { tileFor, tileName, type MatmulTile } from "./matmul.ts";
import { productGroupStep, productStep, type BufferLike, type BufferPart, type Product, type Ref, type Step, type UniformValues } from "./recorded-encoder.ts";

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

/** A sum waiting for its program: dst[j] = Σ_z src[z·len + j], z < parts, j < len (z in order). */
interface PendingSum {
  src: BufferPart;
  dst: BufferPart;
  len: number;
  parts: number;
}

/** Sums in one program: 4 uniforms each, within a plan's uniform slot (256 bytes, the stride first). */
export const SUMS_PER_PROGRAM = 15;
/** Weight gradients in one program (matmul.ts `group`): A, B, C and S each, 4 storage bindings. */
export const PRODUCTS_PER_PROGRAM = 4;

/**
 * The sums of partials as arrays end to end (one thread per element of each destination):
 * G[d_i + j] = Σ_z P[s_i + z·n_i + j], z < c_i in order (the same sums whatever the grouping).
 */
function partialSumsShader(J: number): string {
  const js = Array.from({ length: J }, (_, i) => i);
  return concatenatedArraysShader(
    js.flatMap((i) => [`n${i}: u32`, `c${i}: u32`, `s${i}: u32`, `d${i}: u32`]),
    ["P"],
    ["G"],
    js.map((i) => `    var t = 0.0;
    for (var z = 0u; z < u.c${i}; z++) { t += P[u.s${i} + z * u.n${i} + j]; }
    G[u.d${i} + j] = t;`),
  );
}

/** How many partial sums a LayerNorm's dx program over `rows` rows of d writes for dγ and for dβ (gelu-layernorm.ts lnPartials). */
export function lnParts(rows: number, d: number): number {
  const [gx, gy] = rowWorkgroups(rows, d);
  return Math.min(gx * gy, LN_PARTS);
}

/**
 * A backward's weight gradients Aᵀ·B with their biases', and its LayerNorms' dγ, dβ: `gradient`
 * takes each product (split along K where it has few tiles, its partials in a part of the
 * backward's scratch buffer of its own), `lnSums` gives the part a LayerNorm's dx program writes
 * its workgroups' dγ, dβ sums into, and `flush`, after a layer's last product, records the
 * products, PRODUCTS_PER_PROGRAM of one tile to a program (a product of several parts, BERT's
 * Q, K and V, alone), then every pending sum, SUMS_PER_PROGRAM to a program. The products run at
 * the flush, so what they read must still hold its values there (the backwards keep each
 * LayerNorm's masked gradient in a buffer of its own for this). The products' partials are a
 * layer's (sized by splitScratchFloats for `shapes`), used again after each flush; the LayerNorms'
 * take two parts in turn (two may wait for one flush). The gradients (outputs, sums' destinations)
 * are parts of one buffer (recorded-backward.ts gradientParts).
 */
export function weightGradients(b: Steps & { buf(floats: number): BufferLike }, shapes: readonly GradShape[], k: number, ln: { rows: number; d: number }): {
  gradient(p: Product & { out: BufferPart[]; sums: BufferPart[] }): void;
  lnSums(gamma: BufferPart, beta: BufferPart): BufferPart;
  flush(): void;
} {
  const f = splitScratchFloats(shapes, k);
  const lnCount = lnParts(ln.rows, ln.d);
  const lnFloats = 2 * lnCount * ln.d;
  const sizes = [...f.c, ...f.s, lnFloats, lnFloats];
  const total = sizes.reduce((a, n) => a + alignUp(n), 0);
  const scratch = b.buf(Math.max(total, 1));
  let at = 0;
  const parts = sizes.map((n): BufferPart => {
    const part = { of: scratch, offset: at * 4, size: Math.max(n, 1) * 4 };
    at += alignUp(n);
    return part;
  });
  const c = parts.slice(0, f.c.length), s = parts.slice(f.c.length, f.c.length + f.s.length), lnRegions = parts.slice(-2);
  let pending: PendingSum[] = [];
  let splitUsed = 0;
  let lnUsed = 0;
  let products: (Product & { split: number })[] = [];
  return {
    gradient: (p) => {
      const nParts = p.b.length;
      const split = kSplit(p.m, p.n, p.k, nParts);
      if (split === 1) {
        products.push({ ...p, split });
        return;
      }
      // the next free partials of this size (a layer's products each take their own)
      const first = splitUsed;
      for (let i = 0; i < nParts; i++) {
        if (f.c[first + i] !== split * p.m * p.n) throw new Error(`weightGradients: a ${p.m}×${p.n} product split ${split} ways is not the layer's gradient ${first + i + 1} (${shapes.length} shapes given)`);
        pending.push({ src: c[first + i], dst: p.out[i], len: p.m * p.n, parts: split }, { src: s[first + i], dst: p.sums[i], len: p.n, parts: split });
      }
      splitUsed += nParts;
      products.push({ ...p, out: c.slice(first, first + nParts), sums: s.slice(first, first + nParts), split });
    },
    lnSums: (gamma, beta) => {
      if (lnUsed === 2) throw new Error("weightGradients: a third LayerNorm's sums before a flush");
      const part = lnRegions[lnUsed++];
      const half = lnCount * ln.d;
      pending.push({ src: { ...part, size: half * 4 }, dst: gamma, len: ln.d, parts: lnCount }, { src: { of: part.of, offset: part.offset + half * 4, size: half * 4 }, dst: beta, len: ln.d, parts: lnCount });
      return part;
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
        const dst = group[0].dst.of;
        if (group.some((x) => x.dst.of !== dst || x.src.of !== scratch)) throw new Error("weightGradients: sums into parts of one gradient buffer only");
        const J = group.length;
        // only the span of the gradient buffer its sums write (a whole model's gradients may exceed a binding's limit)
        const lo = Math.min(...group.map((x) => x.dst.offset)), hi = Math.max(...group.map((x) => x.dst.offset + x.dst.size));
        const span: BufferPart = { of: dst, offset: lo, size: hi - lo };
        b.flat(`qrag_partial_sums_${J}`, () => partialSumsShader(J), [scratch, span], group.flatMap((x): UniformValues => [["u", x.len], ["u", x.parts], ["u", x.src.offset / 4], ["u", (x.dst.offset - lo) / 4]]), group.reduce((a, x) => a + x.len, 0));
      }
      pending = [];
      splitUsed = 0;
      lnUsed = 0;
    },
  };
}

/** The tile a weight gradient takes (productStep's: no 32×32 tiles; it splits along K instead). */
const gradientTile = (p: Product): MatmulTile => tileFor(p.m, p.b.length * p.n, false);
