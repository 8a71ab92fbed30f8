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

function code(backward: boolean): string {
  const body = backward
    ? `y[i] = x[i] * ct[t] + x[i + 1u] * sn[t + 1u];
  y[i + 1u] = x[i + 1u] * ct[t + 1u] + (-x[i]) * sn[t];`
    : `y[i] = x[i] * ct[t] + (-x[i + 1u]) * sn[t];
  y[i + 1u] = x[i + 1u] * ct[t + 1u] + x[i] * sn[t + 1u];`;
  return `${uniformStruct(["n: u32", "D: u32"])}
${storageDecls(["x", "rows:i32", "ct", "sn"], ["y"])}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let p = threadIndex(gid);
  if (p >= u.n * u.D / 2u) { return; }
  let i = 2u * p;
  let t = u32(rows[i / u.D]) * u.D + i % u.D;
  ${body}
}`;
}

/** rotateTf(x, positions) on the device: x [n, D] rotated row by row (identity when rotary is off). */
export function rotaryFused(x: tf.Tensor2D, positions: Int32Array | null): tf.Tensor2D {
  const [n, D] = x.shape;
  if (D % 2 !== 0) throw new Error(`rotaryFused: odd width ${D}`);
  const t = rotaryRows(D, positions);
  if (!t) return x;
  if (t.rows.length !== n) throw new Error(`rotaryFused: ${t.rows.length} positions for ${n} rows`);
  const rowsT = tf.tensor1d(t.rows, "int32");
  const uniforms = [{ type: "uint32" as const, data: [n] }, { type: "uint32" as const, data: [D] }];
  const run = (backward: boolean, v: tf.Tensor, rows: tf.Tensor): tf.Tensor => {
    const [info] = runRawProgram(webgpuBackend(), { key: `qrag_rotary_${backward ? "bwd" : "fwd"}`, code: code(backward), inputs: [v, rows, t.c, t.s], outputs: [{ shape: [n, D] }], uniforms, threads: (n * D) / 2 });
    return tf.engine().makeTensorFromTensorInfo(info);
  };
  const f = tf.customGrad(((xi: tf.Tensor, save: tf.GradSaveFunc) => {
    save([rowsT]);
    return { value: run(false, xi, rowsT), gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => [run(true, dy, saved[0])] };
  }) as CustomGradFn);
  return f(x) as tf.Tensor2D;
}
