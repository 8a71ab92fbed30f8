/**
 * Gradient sums on webgpu, written in place into the running sum's buffers (in-place.ts), as many
 * tensors a program as the storage-buffer limit allows (2 buffers each).
 *
 * Why: the update's passes (`pass_batch_size`) and micro-steps (`accumulate_grads`) summed their
 * gradients with one tfjs Add per tensor: ~75 kernels a pass for bert-tiny's twin encoders, ~400
 * for BERT-base's, each with tfjs's host overhead and a new output buffer. The sums are tfjs's
 * Add's (one float32 addition an element).
 */
import * as tf from "@tensorflow/tfjs";
import { ownTensor } from "./in-place.ts";
import { concatenatedArraysShader, runRawProgram, storageBufferLimit, webgpuBackend } from "./raw-program.ts";

function accumulateCode(k: number): string {
  const read = Array.from({ length: k }, (_, i) => `b${i}`);
  const write = Array.from({ length: k }, (_, i) => `a${i}`);
  const fields = Array.from({ length: k }, (_, i) => `n${i}: u32`);
  const bodies = Array.from({ length: k }, (_, i) => `    a${i}[j] = a${i}[j] + b${i}[j];`);
  return concatenatedArraysShader(fields, read, write, bodies);
}

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
  const k = Math.max(1, Math.floor(storageBufferLimit(be) / 2));
  for (let at = 0; at < sums.length; at += k) {
    const group = sums.slice(at, at + k).map((a, i) => ({ a, b: add[at + i] })).filter((p) => p.a.size > 0);
    if (group.length === 0) continue;
    runRawProgram(be, {
      key: `qrag_accumulate_${group.length}`,
      code: accumulateCode(group.length),
      inputs: group.map((p) => p.b),
      outputs: [],
      inPlace: group.map((p) => p.a),
      uniforms: group.map((p) => ({ type: "uint32", data: [p.a.size] })),
      threads: group.reduce((n, p) => n + p.a.size, 0),
    });
  }
  tf.dispose([...add]);
  return sums;
}
