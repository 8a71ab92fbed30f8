/**
 * The default rotary rotation (rotary.ts rotateTf) as fused WebGPU programs: one forward, one
 * backward (the transposed rotation), with the cos/sin tables already on the device
 * (device-ops.ts rotaryRows) and only the table rows uploaded.
 *
 * Why: rotateTf uploads two [n, D] tables and runs ~5 ops forward and ~6 backward, one dispatch
 * each, for every micro-step of the update. Same values: for each pair (x0, x1) of a row,
 * y0 = x0·c0 + (−x1)·s0 and y1 = x1·c1 + x0·s1.
 */
import * as tf from "@tensorflow/tfjs";
import { rotaryRows } from "../device-ops.ts";
import { runRawProgram, storageDecls, uniformStruct, webgpuBackend, WG } from "./raw-program.ts";

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

/**
 * A pair's rotation and its transpose over the tables ct, sn at t (the pair's first column in the
 * tables): this file's programs' and twin-loss.ts's (which rotates the actions inside the loss),
 * so both give the same bits.
 */
export const ROTATE_WGSL = `fn rotPair(x0: f32, x1: f32, t: u32) -> vec2<f32> { return vec2<f32>(x0 * ct[t] + (-x1) * sn[t], x1 * ct[t + 1u] + x0 * sn[t + 1u]); }
fn rotPairT(g0: f32, g1: f32, t: u32) -> vec2<f32> { return vec2<f32>(g0 * ct[t] + g1 * sn[t + 1u], g1 * ct[t + 1u] + (-g0) * sn[t]); }`;

function code(backward: boolean): string {
  return `${uniformStruct(["n: u32", "D: u32"])}
${storageDecls(["x", "rows:i32", "ct", "sn"], ["y"])}
${ROTATE_WGSL}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let p = threadIndex(gid);
  if (p >= u.n * u.D / 2u) { return; }
  let i = 2u * p;
  let t = u32(rows[i / u.D]) * u.D + i % u.D;
  let r = ${backward ? "rotPairT" : "rotPair"}(x[i], x[i + 1u], t);
  y[i] = r.x;
  y[i + 1u] = r.y;
}`;
}

/** rotateTf(x, positions) on the device: x [n, D] rotated row by row (identity when rotary is off). */
export function rotaryFused(x: tf.Tensor2D, positions: Int32Array | null): tf.Tensor2D {
  const r = rotation(x, positions);
  if (!r) return x;
  const f = tf.customGrad(((xi: tf.Tensor, save: tf.GradSaveFunc) => {
    save([r.rowsT]);
    return { value: r.run(false, xi, r.rowsT), gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => [r.run(true, dy, saved[0])] };
  }) as CustomGradFn);
  return f(x) as tf.Tensor2D;
}

/** A batch's rotary tables on the device: its rows' table rows (int32, the caller disposes) and the shared cos/sin tables. */
export interface RotaryTables {
  rows: tf.Tensor;
  c: tf.Tensor;
  s: tf.Tensor;
}

/** The tables that rotate x [n, D] row by row at `positions`, or null where rotary is off. */
export function rotaryTables(x: tf.Tensor2D, positions: Int32Array | null): RotaryTables | null {
  const [n, D] = x.shape;
  if (D % 2 !== 0) throw new Error(`rotaryFused: odd width ${D}`);
  const t = rotaryRows(D, positions);
  if (!t) return null;
  if (t.rows.length !== n) throw new Error(`rotaryFused: ${t.rows.length} positions for ${n} rows`);
  return { rows: tf.tensor1d(t.rows, "int32"), c: t.c, s: t.s };
}

function rotation(x: tf.Tensor2D, positions: Int32Array | null): { rowsT: tf.Tensor; run(backward: boolean, v: tf.Tensor, rows: tf.Tensor): tf.Tensor } | null {
  const t = rotaryTables(x, positions);
  if (!t) return null;
  const [n, D] = x.shape;
  const uniforms = [{ type: "uint32" as const, data: [n] }, { type: "uint32" as const, data: [D] }];
  return {
    rowsT: t.rows,
    run: (backward, v, rows) => {
      const [info] = runRawProgram(webgpuBackend(), { key: `qrag_rotary_${backward ? "bwd" : "fwd"}`, code: () => code(backward), inputs: [v, rows, t.c, t.s], outputs: [{ shape: [n, D] }], uniforms, threads: (n * D) / 2 });
      return tf.engine().makeTensorFromTensorInfo(info);
    },
  };
}
