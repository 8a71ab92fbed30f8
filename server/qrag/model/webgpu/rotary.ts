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
  const r = rotation(x, positions);
  if (!r) return x;
  const f = tf.customGrad(((xi: tf.Tensor, save: tf.GradSaveFunc) => {
    save([r.rowsT]);
    return { value: r.run(false, xi, r.rowsT), gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => [r.run(true, dy, saved[0])] };
  }) as CustomGradFn);
  return f(x) as tf.Tensor2D;
}

/**
 * The rotation of x and the transposed rotation for its gradient, without tfjs's tape (the
 * learner's device pass): one program each; null when rotary is off (both are the identity).
 */
export function rotaryPair(x: tf.Tensor2D, positions: Int32Array | null): { y: tf.Tensor2D; backward(dy: tf.Tensor2D): tf.Tensor2D; dispose(): void } | null {
  const r = rotation(x, positions);
  if (!r) return null;
  return {
    y: r.run(false, x, r.rowsT) as tf.Tensor2D,
    backward: (dy) => r.run(true, dy, r.rowsT) as tf.Tensor2D,
    dispose: () => r.rowsT.dispose(),
  };
}

function rotation(x: tf.Tensor2D, positions: Int32Array | null): { rowsT: tf.Tensor; run(backward: boolean, v: tf.Tensor, rows: tf.Tensor): tf.Tensor } | null {
  const [n, D] = x.shape;
  if (D % 2 !== 0) throw new Error(`rotaryFused: odd width ${D}`);
  const t = rotaryRows(D, positions);
  if (!t) return null;
  if (t.rows.length !== n) throw new Error(`rotaryFused: ${t.rows.length} positions for ${n} rows`);
  const uniforms = [{ type: "uint32" as const, data: [n] }, { type: "uint32" as const, data: [D] }];
  return {
    rowsT: tf.tensor1d(t.rows, "int32"),
    run: (backward, v, rows) => {
      const [info] = runRawProgram(webgpuBackend(), { key: `qrag_rotary_${backward ? "bwd" : "fwd"}`, code: () => code(backward), inputs: [v, rows, t.c, t.s], outputs: [{ shape: [n, D] }], uniforms, threads: (n * D) / 2 });
      return tf.engine().makeTensorFromTensorInfo(info);
    },
  };
}
