/**
 * The learner's forward/backward pass on webgpu without tfjs's tape: both encoders' recorded
 * forwards that keep their activations, the rotary rotation and the twin-head loss with its
 * gradients as fused programs, then the two recorded backwards, called in order by hand.
 *
 * Why: under `tf.variableGrads` the same programs ran, but as 4 tfjs ops (the custom-gradient
 * wrappers) plus the tape's Identity kernels, ~0.1 ms of host JavaScript each and the last tfjs
 * kernels in a training iteration. The gradient is the same function: the pass is the chain rule
 * of learner.ts's loss written out (s → loss ← rotate(a)).
 */
import * as tf from "@tensorflow/tfjs";
import type { TokenBatch } from "../model/encoder.ts";
import { rotaryTables } from "../model/webgpu/rotary.ts";
import { twinLossGrads } from "../model/webgpu/twin-loss.ts";
import { GradPack } from "../model/webgpu/grad-pack.ts";
import { onDevice } from "../backend/device.ts";
import { recordJointly } from "../model/webgpu/recorded-encoder.ts";
import type { QNetworks } from "./networks.ts";

/**
 * The loss (times `weight`) against targets G (the caller's, kept) and the gradients of
 * `nets.trainable`, or null where an encoder has no recorded taped path (the caller runs tfjs's
 * tape; nothing was drawn, or, if only the action encoder lacks one, the state forward's
 * activations are released and its masks are redrawn).
 */
export function devicePass(nets: QNetworks, states: TokenBatch, actions: TokenBatch, positions: Int32Array, G: tf.Tensor1D, weight: number): { value: tf.Scalar; grads: GradPack } | null {
  if (!onDevice()) return null;
  // the two forwards, then the two backwards, recorded together (recordJointly): their programs
  // interleaved, one of each as one dispatch where they may be
  const [s, a] = recordJointly(() => {
    const s = nets.state.tapedForward(states, true);
    return [s, s && nets.action.tapedForward(actions, true)] as const;
  });
  if (!s) return null;
  if (!a) {
    s.release();
    s.y.dispose();
    return null;
  }
  // the actions' rotation rides in the loss's two programs; da is the raw actions' gradient
  const rot = rotaryTables(a.y, positions);
  const { loss, ds, da } = twinLossGrads(s.y, a.y, G, weight, rot);
  // both backwards copy their gradients into one pack (`trainable`'s order: the state encoder's, then the action encoder's)
  const pack = GradPack.empty(nets.trainable.map((v) => v.size));
  recordJointly(() => {
    s.backwardInto(ds, pack, 0);
    a.backwardInto(da, pack, nets.state.variables.length);
  });
  tf.dispose([s.y, a.y, ds, da, ...(rot ? [rot.rows] : [])]);
  return { value: loss, grads: pack };
}
