/**
 * Twin-head Q from one embedding pair (docs/method.md §2.2): with h = D/2,
 *   q1 = ⟨s[:h], a[:h]⟩,  q2 = ⟨s[h:], a[h:]⟩,  Q = q1 + q2 = ⟨s, a⟩,
 * where `a` is the (rotated) action embedding. The training targets use 2·q1 and 2·q2.
 */
import * as tf from "@tensorflow/tfjs";
import { mm } from "./ops.ts";
import { onDevice } from "../backend/device.ts";
import { twinLossDevice } from "./webgpu/twin-loss.ts";

/** Row-wise twin heads for paired rows: s [B, D], aRot [B, D] → q1 [B], q2 [B] (differentiable). */
export function twinQ(s: tf.Tensor2D, aRot: tf.Tensor2D): { q1: tf.Tensor1D; q2: tf.Tensor1D } {
  const [B, D] = s.shape;
  if (aRot.shape[0] !== B || aRot.shape[1] !== D) {
    throw new Error(`twinQ: shapes [${s.shape}] and [${aRot.shape}] differ`);
  }
  if (D % 2 !== 0) throw new Error(`twinQ: odd width ${D}`);
  const halves = tf.sum(tf.reshape(tf.mul(s, aRot), [B, 2, D / 2]), 2) as tf.Tensor2D; // [B, 2]
  const q1 = tf.reshape(tf.slice(halves, [0, 0], [B, 1]), [B]) as tf.Tensor1D;
  const q2 = tf.reshape(tf.slice(halves, [0, 1], [B, 1]), [B]) as tf.Tensor1D;
  return { q1, q2 };
}

/**
 * The PQN twin-head loss 0.5·mse(2·q1, G) + 0.5·mse(2·q2, G) of states s [B, D] and rotated
 * actions aRot [B, D] (docs/method.md §3.5); on the device path one fused program each way
 * (webgpu/twin-loss.ts, same function).
 */
export function twinLoss(s: tf.Tensor2D, aRot: tf.Tensor2D, G: tf.Tensor1D): tf.Scalar {
  if (onDevice()) return twinLossDevice(s, aRot, G);
  const { q1, q2 } = twinQ(s, aRot);
  const l1 = tf.mean(tf.square(tf.sub(tf.mul(q1, 2), G)));
  const l2 = tf.mean(tf.square(tf.sub(tf.mul(q2, 2), G)));
  return tf.add(tf.mul(l1, 0.5), tf.mul(l2, 0.5)) as tf.Scalar;
}

/**
 * All-pairs twin heads: s [B, D] against candidates aRot [N, D] → q1, q2 [B, N] (differentiable;
 * explicit-transpose matmuls). Useful to score a whole candidate set per state in one product.
 */
export function twinQAll(s: tf.Tensor2D, aRot: tf.Tensor2D): { q1: tf.Tensor2D; q2: tf.Tensor2D } {
  const [B, D] = s.shape;
  const [N, D2] = aRot.shape;
  if (D !== D2) throw new Error(`twinQAll: widths ${D} and ${D2} differ`);
  const h = D / 2;
  const aT = tf.transpose(aRot) as tf.Tensor2D; // [D, N]
  const q1 = mm(tf.slice(s, [0, 0], [B, h]), tf.slice(aT, [0, 0], [h, N]));
  const q2 = mm(tf.slice(s, [0, h], [B, h]), tf.slice(aT, [h, 0], [h, N]));
  return { q1, q2 };
}
