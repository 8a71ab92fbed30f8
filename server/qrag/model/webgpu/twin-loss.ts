/**
 * The PQN twin-head loss 0.5·mse(2·q1, G) + 0.5·mse(2·q2, G) (agent/learner.ts), with q1, q2 the
 * two halves of s·aRot summed per row (model/qfunction.ts twinQ), as fused WebGPU programs: one
 * forward (the loss and each row's errors), one backward (ds and daRot).
 *
 * Why: the tfjs composition is ~13 ops forward and ~20 backward per micro-step, one dispatch each,
 * for a few hundred multiply-adds. The forward runs as one workgroup (batches are small) with a
 * shared-memory sum; the backward as a thread per element.
 */
import * as tf from "@tensorflow/tfjs";
import { runRawProgram, storageDecls, uniformStruct, webgpuBackend, WG, workgroupSum } from "./raw-program.ts";

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

/** One workgroup: per row the twin heads, errors e = 2q − G, then Σ e² over rows and heads. */
const FORWARD = `${uniformStruct(["B: u32", "D: u32", "scale: f32"])}
${storageDecls(["s", "a", "g"], ["loss", "err"])}
var<workgroup> acc: array<vec2<f32>, ${WG}>;
@compute @workgroup_size(${WG})
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
  let half = u.D / 2u;
  var sq = vec2<f32>(0.0, 0.0);
  for (var b = lid.x; b < u.B; b += ${WG}u) {
    var q = vec2<f32>(0.0, 0.0);
    for (var c = 0u; c < half; c++) { q.x += s[b * u.D + c] * a[b * u.D + c]; }
    for (var c = half; c < u.D; c++) { q.y += s[b * u.D + c] * a[b * u.D + c]; }
    let e = q * 2.0 - vec2<f32>(g[b], g[b]);
    err[2u * b] = e.x;
    err[2u * b + 1u] = e.y;
    sq += e * e;
  }
  ${workgroupSum("sq")}
  if (lid.x == 0u) {
    let m = acc[0] / f32(u.B);
    loss[0] = (m.x * 0.5 + m.y * 0.5) * u.scale;
  }
}`;

/** d/ds and d/daRot: dL/dq_h(b) = dy·2·e_h(b)/B (0.5 · 2e · 2 / B), times the other factor. */
const BACKWARD = `${uniformStruct(["B: u32", "D: u32", "scale: f32"])}
${storageDecls(["s", "a", "err", "dy"], ["ds", "da"])}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = threadIndex(gid);
  if (i >= u.B * u.D) { return; }
  let b = i / u.D;
  let head = select(1u, 0u, i % u.D < u.D / 2u);
  let dq = dy[0] * u.scale * 2.0 * err[2u * b + head] / f32(u.B);
  ds[i] = dq * a[i];
  da[i] = dq * s[i];
}`;

type Uniforms = { type: "uint32" | "float32"; data: number[] }[];

function checked(s: tf.Tensor2D, aRot: tf.Tensor2D, G: tf.Tensor1D, scale: number): Uniforms {
  const [B, D] = s.shape;
  if (aRot.shape[0] !== B || aRot.shape[1] !== D || G.shape[0] !== B) throw new Error(`twinLossDevice: shapes [${s.shape}], [${aRot.shape}], [${G.shape}]`);
  if (D % 2 !== 0) throw new Error(`twinLossDevice: odd width ${D}`);
  return [{ type: "uint32", data: [B] }, { type: "uint32", data: [D] }, { type: "float32", data: [scale] }];
}

const wrap = (infos: tf.TensorInfo[]) => infos.map((i) => tf.engine().makeTensorFromTensorInfo(i));

function forward(s: tf.Tensor, aRot: tf.Tensor, G: tf.Tensor, uniforms: Uniforms): { loss: tf.Scalar; err: tf.Tensor } {
  const [loss, err] = wrap(runRawProgram(webgpuBackend(), { key: "qrag_twin_loss_fwd", code: FORWARD, inputs: [s, aRot, G], outputs: [{ shape: [] }, { shape: [s.shape[0], 2] }], uniforms, threads: WG }));
  return { loss: loss as tf.Scalar, err };
}

function backward(s: tf.Tensor, aRot: tf.Tensor, err: tf.Tensor, dy: tf.Tensor, uniforms: Uniforms): [tf.Tensor2D, tf.Tensor2D] {
  const n = s.shape[0] * s.shape[1]!;
  return wrap(runRawProgram(webgpuBackend(), { key: "qrag_twin_loss_bwd", code: BACKWARD, inputs: [s, aRot, err, dy], outputs: [{ shape: s.shape }, { shape: s.shape }], uniforms, threads: n })) as [tf.Tensor2D, tf.Tensor2D];
}

/**
 * The twin-head loss of states s [B, D] and rotated actions aRot [B, D] against targets G [B], as a
 * scalar with a gradient for s and aRot (G is a constant).
 */
export function twinLossDevice(s: tf.Tensor2D, aRot: tf.Tensor2D, G: tf.Tensor1D): tf.Scalar {
  const uniforms = checked(s, aRot, G, 1);
  const f = tf.customGrad(((si: tf.Tensor, ai: tf.Tensor, save: tf.GradSaveFunc) => {
    const { loss, err } = forward(si, ai, G, uniforms);
    save([si, ai, err]);
    return { value: loss, gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => backward(saved[0], saved[1], saved[2], dy, uniforms) };
  }) as CustomGradFn);
  return f(s, aRot) as tf.Scalar;
}

/**
 * The loss times `scale` and its gradients for s and aRot, without tfjs's tape: two programs and
 * no tfjs kernel (the learner's device pass; `scale` is a pass's share of the batch).
 */
export function twinLossGrads(s: tf.Tensor2D, aRot: tf.Tensor2D, G: tf.Tensor1D, scale: number): { loss: tf.Scalar; ds: tf.Tensor2D; da: tf.Tensor2D } {
  const uniforms = checked(s, aRot, G, scale);
  const { loss, err } = forward(s, aRot, G, uniforms);
  const one = tf.scalar(1); // dL/dL: the scale is applied inside both programs
  const [ds, da] = backward(s, aRot, err, one, uniforms);
  tf.dispose([err, one]);
  return { loss, ds, da };
}
