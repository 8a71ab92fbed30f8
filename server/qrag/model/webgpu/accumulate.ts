/**
 * Gradient sums on webgpu, written in place into the running sum's buffers (in-place.ts) by the
 * blend program Polyak's average runs (fused-adamw.ts blendInPlace, weights 1 and 1), as many
 * tensors a program as the storage-buffer limit allows (2 buffers each).
 *
 * Why: the update's passes (`pass_batch_size`) and micro-steps (`accumulate_grads`) summed their
 * gradients with one tfjs Add per tensor: ~75 kernels a pass for bert-tiny's twin encoders, ~400
 * for BERT-base's, each with tfjs's host overhead and a new output buffer. The sums are tfjs's
 * Add's (one float32 addition an element).
 */
import * as tf from "@tensorflow/tfjs";
import { ownTensor } from "./in-place.ts";
import { blendInPlace } from "./fused-adamw.ts";
import { webgpuBackend } from "./raw-program.ts";

/**
 * acc[i] + add[i] for every i, consuming both lists: the sums are acc's own tensors, written in
 * place, except where one shared its buffer with another tensor (it is then replaced by a copy of
 * its own, and released); `add` is released.
 */
export function accumulateFused(acc: readonly tf.Tensor[], add: readonly tf.Tensor[]): tf.Tensor[] {
  if (acc.length !== add.length) throw new Error(`accumulateFused: ${add.length} tensors added to ${acc.length}`);
  acc.forEach((a, i) => {
    const b = add[i];
    if (a.dtype !== "float32" || b.dtype !== "float32" || a.size !== b.size) throw new Error(`accumulateFused: tensor ${i}: [${b.shape}] ${b.dtype} added to [${a.shape}] ${a.dtype} (float32 of one size only)`);
  });
  const be = webgpuBackend();
  const sums = acc.map((a) => ownTensor(a, be));
  blendInPlace(sums.map((a, i) => ({ target: a, source: add[i] })), 1, 1);
  tf.dispose([...add]);
  return sums;
}
