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
import { ROTATE_WGSL, type RotaryTables } from "./rotary.ts";

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

/**
 * One workgroup: per row the twin heads, errors e = 2q − G, then Σ e² over rows and heads.
 * `rotated`: a holds the raw actions, rotated here pair by pair as rotary.ts's program does
 * (rows, ct, sn its tables), each head's sum in the same column order.
 */
function forwardCode(rotated: boolean): string {
  const sum = rotated
    ? `    for (var c = 0u; c < u.D; c += 2u) {
      let e = b * u.D + c;
      let r = rotPair(a[e], a[e + 1u], u32(rows[b]) * u.D + c);
      if (c < half) { q.x += s[e] * r.x; } else { q.y += s[e] * r.x; }
      if (c + 1u < half) { q.x += s[e + 1u] * r.y; } else { q.y += s[e + 1u] * r.y; }
    }`
    : `    for (var c = 0u; c < half; c++) { q.x += s[b * u.D + c] * a[b * u.D + c]; }
    for (var c = half; c < u.D; c++) { q.y += s[b * u.D + c] * a[b * u.D + c]; }`;
  return `${uniformStruct(["B: u32", "D: u32", "scale: f32"])}
${storageDecls(["s", "a", "g", ...(rotated ? ["rows:i32", "ct", "sn"] : [])], ["loss", "err"])}
${rotated ? ROTATE_WGSL : ""}
var<workgroup> acc: array<vec2<f32>, ${WG}>;
@compute @workgroup_size(${WG})
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
  let half = u.D / 2u;
  var sq = vec2<f32>(0.0, 0.0);
  for (var b = lid.x; b < u.B; b += ${WG}u) {
    var q = vec2<f32>(0.0, 0.0);
${sum}
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
}

/**
 * d/ds and d/daRot: dL/dq_h(b) = dy·2·e_h(b)/B (0.5 · 2e · 2 / B), times the other factor.
 * `rotated`: a thread per pair of the raw actions a, which it rotates for ds and whose gradient it
 * rotates back (rotary.ts's backward) into da.
 */
function backwardCode(rotated: boolean): string {
  const body = rotated
    ? `  if (p >= u.B * u.D / 2u) { return; }
  let i = 2u * p;
  let b = i / u.D;
  let t = u32(rows[b]) * u.D + i % u.D;
  let r = rotPair(a[i], a[i + 1u], t);
  let dq0 = dq(b, i);
  let dq1 = dq(b, i + 1u);
  ds[i] = dq0 * r.x;
  ds[i + 1u] = dq1 * r.y;
  let gr = rotPairT(dq0 * s[i], dq1 * s[i + 1u], t);
  da[i] = gr.x;
  da[i + 1u] = gr.y;`
    : `  let i = p;
  if (i >= u.B * u.D) { return; }
  let d = dq(i / u.D, i);
  ds[i] = d * a[i];
  da[i] = d * s[i];`;
  return `${uniformStruct(["B: u32", "D: u32", "scale: f32"])}
${storageDecls(["s", "a", "err", "dy", ...(rotated ? ["rows:i32", "ct", "sn"] : [])], ["ds", "da"])}
${rotated ? ROTATE_WGSL : ""}
fn dq(b: u32, i: u32) -> f32 {
  let head = select(1u, 0u, i % u.D < u.D / 2u);
  return dy[0] * u.scale * 2.0 * err[2u * b + head] / f32(u.B);
}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let p = threadIndex(gid);
${body}
}`;
}
const FORWARD = forwardCode(false);
const BACKWARD = backwardCode(false);

type Uniforms = { type: "uint32" | "float32"; data: number[] }[];

function checked(s: tf.Tensor2D, aRot: tf.Tensor2D, G: tf.Tensor1D, scale: number): Uniforms {
  const [B, D] = s.shape;
  if (aRot.shape[0] !== B || aRot.shape[1] !== D || G.shape[0] !== B) throw new Error(`twinLossDevice: shapes [${s.shape}], [${aRot.shape}], [${G.shape}]`);
  if (D % 2 !== 0) throw new Error(`twinLossDevice: odd width ${D}`);
  return [{ type: "uint32", data: [B] }, { type: "uint32", data: [D] }, { type: "float32", data: [scale] }];
}

const wrap = (infos: tf.TensorInfo[]) => infos.map((i) => tf.engine().makeTensorFromTensorInfo(i));

/** The forward's program (rotating a where `rot` holds its tables): the loss and each row's errors. */
function forward(s: tf.Tensor, a: tf.Tensor, G: tf.Tensor, uniforms: Uniforms, rot?: RotaryTables | null): { loss: tf.Scalar; err: tf.Tensor } {
  const key = `qrag_twin_loss_fwd${rot ? "_rot" : ""}`;
  const [loss, err] = wrap(runRawProgram(webgpuBackend(), { key, code: rot ? () => forwardCode(true) : FORWARD, inputs: [s, a, G, ...tables(rot)], outputs: [{ shape: [] }, { shape: [s.shape[0], 2] }], uniforms, threads: WG }));
  return { loss: loss as tf.Scalar, err };
}

/** The backward's program: ds and da (a thread per element, or per pair where `rot` rotates). */
function backward(s: tf.Tensor, a: tf.Tensor, err: tf.Tensor, dy: tf.Tensor, uniforms: Uniforms, rot?: RotaryTables | null): [tf.Tensor2D, tf.Tensor2D] {
  const n = s.shape[0] * s.shape[1]!;
  const key = `qrag_twin_loss_bwd${rot ? "_rot" : ""}`;
  return wrap(runRawProgram(webgpuBackend(), { key, code: rot ? () => backwardCode(true) : BACKWARD, inputs: [s, a, err, dy, ...tables(rot)], outputs: [{ shape: s.shape }, { shape: s.shape }], uniforms, threads: rot ? n / 2 : n })) as [tf.Tensor2D, tf.Tensor2D];
}

const tables = (rot?: RotaryTables | null): tf.Tensor[] => (rot ? [rot.rows, rot.c, rot.s] : []);

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
 * The loss times `scale` and its gradients, without tfjs's tape: two programs and no tfjs kernel
 * (the learner's device pass; `scale` is a pass's share of the batch). With `rot` (rotary.ts
 * rotaryTables), `a` holds the raw actions, rotated inside both programs, and `da` is their
 * gradient: the rotation's two programs taken in; without, `a` is aRot.
 */
export function twinLossGrads(s: tf.Tensor2D, a: tf.Tensor2D, G: tf.Tensor1D, scale: number, rot?: RotaryTables | null): { loss: tf.Scalar; ds: tf.Tensor2D; da: tf.Tensor2D } {
  const uniforms = checked(s, a, G, scale);
  const { loss, err } = forward(s, a, G, uniforms, rot);
  const one = tf.scalar(1); // dL/dL: the scale is applied inside both programs
  const [ds, da] = backward(s, a, err, one, uniforms, rot);
  tf.dispose([err, one]);
  return { loss, ds, da };
}
