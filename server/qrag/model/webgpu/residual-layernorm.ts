/**
 * A sub-layer's end as one WebGPU program: BERT's post-LN `LayerNorm(x + dropout(h))` (two
 * programs backward) and the pre-LN transformer's `x + dropout(h)` (one backward), instead of a
 * mask program, a multiply, an add (and the LayerNorm): 3–4 dispatches and their tfjs kernels
 * forward, as many backward, and a saved [rows, d] mask per sub-layer.
 *
 * The mask is the counter-based hash of util/mask-hash.ts under a key drawn from the same Rng at
 * the same point as ops.ts `dropout` draws it, so the result equals the unfused ops (tested). The
 * forward also writes v = x + h·m, which the backward reads (one [rows, d] tensor, as the add's
 * output was). The row programs spread a row over a group of threads (row-reduce.ts).
 */
import * as tf from "@tensorflow/tfjs";
import { runToTensors, storageDecls, uniformStruct, WG } from "./raw-program.ts";
import { MASK_AT_WGSL } from "./dropout.ts";
import { LN_DGB, lnDxShader, lnFwdShader, pooledDy } from "./gelu-layernorm.ts";
import { rowLanes, rowWorkgroups } from "./row-reduce.ts";
import { readAct, writeAct } from "./half-storage.ts";

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

/** The dropout of `h`: drop threshold (of 65536), keep scale, hash key; thr 0 and keep 1 keep all. */
export interface MaskParams {
  thr: number;
  keep: number;
  k0: number;
  k1: number;
}

const FIELDS = ["rows: u32", "n: u32", "eps: f32", "thr: u32", "keep: f32", "k0: u32", "k1: u32"];

/** The forward over rows of n columns: y, v = x + h·m and the row statistics (fields rows, n, eps, thr, keep, k0, k1). */
export const resLnFwd = (n: number, half = false) => lnFwdShader({
  n, fields: FIELDS, read: ["x", "h", "gamma", "beta"], write: ["y", "v", "stats"], extra: MASK_AT_WGSL, src: "v",
  first: `let a = ${readAct(half, "x[o + k]")} + ${readAct(half, "h[o + k]")} * maskAt(o + k);\n    v[o + k] = ${writeAct(half, "a")};`,
  half: half ? ["x", "h", "y", "v"] : [],
});

/** dv per row (LayerNorm's dx over v), then dx = dv and dh = dv·m (fields FIELDS; also the recorded BERT backward's). */
export const resLnDx = (n: number, half = false, pooled = false, partials = false) => lnDxShader({
  n, fields: pooled ? [...FIELDS.slice(0, 3), "T: u32", ...FIELDS.slice(3)] : FIELDS, read: ["v", "gamma", "stats", "dy", ...(pooled ? ["w"] : [])], write: ["dx", "dh"], x: "v", extra: MASK_AT_WGSL, half,
  store: "dx[o + k] = d;\n    dh[o + k] = d * maskAt(o + k);",
  // `pooled`: dy is a masked-mean pooling's gradient, spread over the rows as it is read (fields T, reads w)
  dy: pooled ? (r) => pooledDy(r) : undefined,
  partials,
});

const ADD_FIELDS = ["n: u32", "thr: u32", "keep: f32", "k0: u32", "k1: u32"];
/** x + h·m, one thread per element (fields ADD_FIELDS). */
const ADD_FWD = `${uniformStruct(ADD_FIELDS)}
${storageDecls(["x", "h"], ["y"])}
${MASK_AT_WGSL}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = threadIndex(gid);
  if (i >= u.n) { return; }
  y[i] = x[i] + h[i] * maskAt(i);
}`;
export const ADD_DH = `${uniformStruct(ADD_FIELDS)}
${storageDecls(["dy"], ["dh"])}
${MASK_AT_WGSL}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = threadIndex(gid);
  if (i >= u.n) { return; }
  dh[i] = dy[i] * maskAt(i);
}`;


/** LayerNorm(x + h·m) over the last axis, m the dropout mask `mask` describes; x, h [rows, d]. */
export function residualLayerNormDevice<T extends tf.Tensor>(x: T, h: T, gamma: tf.Tensor1D, beta: tf.Tensor1D, eps: number, mask: MaskParams): T {
  if (x.dtype !== "float32" || h.dtype !== "float32") throw new Error("residualLayerNormDevice: float32 only");
  const n = x.shape[x.rank - 1];
  const rows = x.size / n;
  const lanes = rowLanes(n);
  const grid = rowWorkgroups(rows, n);
  const uniforms = [
    { type: "uint32" as const, data: [rows] },
    { type: "uint32" as const, data: [n] },
    { type: "float32" as const, data: [eps] },
    { type: "uint32" as const, data: [mask.thr] },
    { type: "float32" as const, data: [mask.keep] },
    { type: "uint32" as const, data: [mask.k0] },
    { type: "uint32" as const, data: [mask.k1] },
  ];
  const f = tf.customGrad(((xi: tf.Tensor, hi: tf.Tensor, g: tf.Tensor, b: tf.Tensor, save: tf.GradSaveFunc) => {
    const [y, v, stats] = runToTensors(`qrag_res_ln_fwd_${lanes}`, () => resLnFwd(n), [xi, hi, g, b], [xi.shape, xi.shape, [rows, 2]], uniforms, rows, grid);
    save([v, g, stats]);
    return {
      value: y,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [vs, gs, st] = saved;
        const [dx, dh] = runToTensors(`qrag_res_ln_dx_${lanes}`, () => resLnDx(n), [vs, gs, st, dy], [vs.shape, vs.shape], uniforms, rows, grid);
        const [dgamma, dbeta] = runToTensors("qrag_ln_dgb", LN_DGB, [vs, st, dy], [[n], [n]], uniforms.slice(0, 2), n * WG);
        return [dx, dh, dgamma, dbeta];
      },
    };
  }) as CustomGradFn);
  return f(x, h, gamma, beta) as T;
}

/** x + h·m, m the dropout mask `mask` describes (the gradient: dy to x, dy·m to h). */
export function residualDropoutDevice<T extends tf.Tensor>(x: T, h: T, mask: MaskParams): T {
  if (x.dtype !== "float32" || h.dtype !== "float32") throw new Error("residualDropoutDevice: float32 only");
  const n = x.size;
  const uniforms = [
    { type: "uint32" as const, data: [n] },
    { type: "uint32" as const, data: [mask.thr] },
    { type: "float32" as const, data: [mask.keep] },
    { type: "uint32" as const, data: [mask.k0] },
    { type: "uint32" as const, data: [mask.k1] },
  ];
  const f = tf.customGrad(((xi: tf.Tensor, hi: tf.Tensor) => {
    const [y] = runToTensors("qrag_res_drop_fwd", ADD_FWD, [xi, hi], [xi.shape], uniforms, n);
    return {
      value: y,
      gradFunc: (dy: tf.Tensor) => {
        const [dh] = runToTensors("qrag_res_drop_dh", ADD_DH, [dy], [dy.shape], uniforms, n);
        return [tf.clone(dy), dh];
      },
    };
  }) as CustomGradFn);
  return f(x, h) as T;
}
