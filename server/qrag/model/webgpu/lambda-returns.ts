/**
 * λ-return targets on the device: agent/lambda-returns.ts lambdaTargets op for op, in float32
 * (the host accumulates in float64), one thread per environment walking its row backwards.
 *
 * Why: the rollout's V_target values then stay where they were computed and the update takes its
 * targets there, so an iteration awaits no read between the values and the update: the GPU goes on
 * from the values to the update while the host packs the update's batch.
 */
import * as tf from "@tensorflow/tfjs";
import { runToTensors, storageDecls, uniformStruct, WG, type Uniform } from "./raw-program.ts";

/** lambda-returns.ts's modes: "reference" keeps pqn-qa's bootstrap at t = L − 3. */
type Mode = "intended" | "reference";

// V(e, t), R, ND of the row widened by the bootstrap column where boot = 1 (V[E·L + e], reward 0, not done)
const CODE = `${uniformStruct(["E: u32", "L: u32", "boot: u32", "mode: u32", "gamma: f32", "lambda: f32"])}
${storageDecls(["V", "R", "ND"], ["out"])}
fn val(e: u32, t: u32) -> f32 {
  if (t < u.L) { return V[e * u.L + t]; }
  return V[u.E * u.L + e];
}
fn rew(e: u32, t: u32) -> f32 {
  if (t < u.L) { return R[e * u.L + t]; }
  return 0.0;
}
fn notDone(e: u32, t: u32) -> f32 {
  if (t < u.L) { return ND[e * u.L + t]; }
  return 1.0;
}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let e = threadIndex(gid);
  if (e >= u.E) { return; }
  let Lw = u.L + u.boot;
  let o = e * (Lw - 1u);
  var G = rew(e, Lw - 2u) + u.gamma * notDone(e, Lw - 2u) * val(e, Lw - 1u);
  out[o + Lw - 2u] = G;
  var nq = notDone(e, Lw - 2u) * val(e, Lw - 1u);
  for (var i = 3u; i <= Lw; i++) {
    let t = Lw - i;
    if (u.mode == 1u) {
      let r = rew(e, t);
      let nd = notDone(e, t);
      let x = (r + u.gamma * nd * nq) + u.gamma * u.lambda * (G - nq);
      G = nd * x + (1.0 - nd) * r;
      nq = val(e, t);
    } else {
      G = rew(e, t) + u.gamma * notDone(e, t) * ((1.0 - u.lambda) * val(e, t + 1u) + u.lambda * G);
    }
    out[o + t] = G;
  }
}`;

/** The rollout rows a target needs: rewards and not-done flags [E·L] (host), V_target on the device. */
export interface DeviceRolloutRows {
  /** V_target(s_t) [E·L], then with `bootstrap` the E states after the rollout. */
  values: tf.Tensor1D;
  reward: Float32Array;
  notDone: Float32Array;
  E: number;
  L: number;
  /** The rows widen by a last column: reward 0, not done, V the bootstrap value (iteration.ts buildTargets). */
  bootstrap: boolean;
}

/**
 * lambdaTargets of the rows (widened by the bootstrap column where asked) as a [E·W] tensor, W the
 * widened row's length − 1: env-major, the order of the training transitions.
 */
export function lambdaTargetsFused(rows: DeviceRolloutRows, gamma: number, lambda: number, mode: Mode = "intended"): tf.Tensor1D {
  const { values, reward, notDone, E, L, bootstrap } = rows;
  const Lw = L + (bootstrap ? 1 : 0);
  if (!(Lw >= 2)) throw new RangeError(`lambdaTargetsFused: rows of ${Lw} columns, at least 2 needed`);
  for (const [name, n, want] of [["reward", reward.length, E * L], ["notDone", notDone.length, E * L], ["values", values.size, E * L + (bootstrap ? E : 0)]] as const) {
    if (n !== want) throw new RangeError(`lambdaTargetsFused: ${name} has ${n} values, expected ${want}`);
  }
  if (values.dtype !== "float32") throw new Error(`lambdaTargetsFused: float32 values, got ${values.dtype}`);
  const R = tf.tensor1d(reward);
  const ND = tf.tensor1d(notDone);
  try {
    const uniforms: Uniform[] = [
      { type: "uint32", data: [E] }, { type: "uint32", data: [L] }, { type: "uint32", data: [bootstrap ? 1 : 0] }, { type: "uint32", data: [mode === "reference" ? 1 : 0] },
      { type: "float32", data: [gamma] }, { type: "float32", data: [lambda] },
    ];
    return runToTensors("qrag_lambda_returns", CODE, [values, R, ND], [[E * (Lw - 1)]], uniforms, E)[0] as tf.Tensor1D;
  } finally {
    tf.dispose([R, ND]);
  }
}
