/**
 * Variables written in place on webgpu: the optimizer's programs (fused-adamw.ts) write p, m, v
 * and the Polyak targets into the buffers the variables already hold, and a hard copy (the
 * policy's) is a buffer copy.
 *
 * Why: assigning new tensors gave every trained, target and policy variable a new GPU buffer at
 * every update, so every recorded plan that binds them (recorded-encoder.ts bindGroupOf) made all
 * its bind groups again, and AdamW's outputs took 3 more storage buffers a variable than in place
 * (fewer variables per program: more dispatches).
 *
 * A variable shares its buffer with the tensors made from it (tf.variable(x), clone, assign):
 * `ownBuffer` first gives it a copy of its own (copy on write), so those keep their values.
 * tfjs keeps a tensor's values on the host after a read: a write here drops them. A read still in
 * flight across an update would keep the old values again; the engine awaits its reads first.
 */
import * as tf from "@tensorflow/tfjs";
import { webgpuBackend, type WebgpuBackendLike } from "./raw-program.ts";
import type { BackendLike, BufferLike, EncoderLike } from "./recorded-encoder.ts";

/** The parts of tfjs-backend-webgpu 4.22's WebGPUBackend this uses beyond recorded-encoder.ts's. */
interface InPlaceBackend extends BackendLike {
  tensorMap: { get(id: object): { resource?: unknown; values?: unknown } };
  refCount(id: object): number;
}

/**
 * Records a copy of tensor `src` (float32 or int32) into `dst` at byte `offset`, in tfjs's pending
 * command encoder (in order with its kernels; no program). `src` is uploaded first and its buffer
 * kept until the copy is submitted, even if the tensor is disposed before.
 */
export function recordTensorCopy(be: BackendLike, src: tf.TensorInfo, dst: BufferLike, offset = 0): void {
  if (src.dtype !== "float32" && src.dtype !== "int32") throw new Error(`recordTensorCopy: float32 or int32 tensors only, got ${src.dtype}`);
  const bytes = src.shape.reduce((a, b) => a * b, 1) * 4;
  if (bytes === 0) return;
  be.uploadToGPU(src.dataId);
  be.ensureCommandEncoderReady();
  be.endComputePassEncoder();
  be.commandQueueOwnedIds.add(src.dataId);
  (be.commandEncoder as unknown as EncoderLike).copyBufferToBuffer(be.tensorMap.get(src.dataId).resource as BufferLike, 0, dst, offset, bytes);
}

/** Records a copy of `src` into the buffer of `dst` (same size), which tfjs then keeps until it is submitted. */
function recordCopy(be: InPlaceBackend, src: tf.TensorInfo, dst: tf.TensorInfo): void {
  recordTensorCopy(be, src, be.tensorMap.get(dst.dataId).resource as BufferLike);
  be.commandQueueOwnedIds.add(dst.dataId);
}

/** A copy of `t` in a buffer of its own (recorded in order), as a new tensor info. */
function ownCopy(be: InPlaceBackend, t: tf.TensorInfo): tf.TensorInfo {
  const copy = be.makeTensorInfo([...t.shape], t.dtype);
  be.uploadToGPU(copy.dataId);
  recordCopy(be, t, copy);
  return copy;
}

/**
 * Makes `v`'s GPU buffer its own, ready to be written in place: uploaded, not shared with another
 * tensor (else v first gets a copy), and its host copy of the values dropped.
 */
export function ownBuffer(v: tf.Variable, on: WebgpuBackendLike = webgpuBackend()): void {
  const be = on as InPlaceBackend;
  be.uploadToGPU(v.dataId);
  if (be.refCount(v.dataId) > 1) {
    const t = tf.engine().makeTensorFromTensorInfo(ownCopy(be, v));
    v.assign(t);
    t.dispose();
  }
  be.tensorMap.get(v.dataId).values = null;
}

/**
 * `t` ready to be written in place, as ownBuffer readies a variable: `t` itself where its buffer
 * is its own, else a copy of its own (and `t` is released). Its host copy of the values is dropped.
 */
export function ownTensor<T extends tf.Tensor>(t: T, on: WebgpuBackendLike = webgpuBackend()): T {
  const be = on as InPlaceBackend;
  be.uploadToGPU(t.dataId);
  let own = t;
  if (be.refCount(t.dataId) > 1) {
    own = tf.engine().makeTensorFromTensorInfo(ownCopy(be, t)) as T;
    t.dispose();
  }
  be.tensorMap.get(own.dataId).values = null;
  return own;
}

/** dst[i] ← src[i] on the device, into dst's own buffers (a hard copy that keeps them). */
export function copyVariables(dst: readonly tf.Variable[], src: readonly tf.Variable[]): void {
  if (dst.length !== src.length) throw new Error(`copyVariables: ${dst.length} targets for ${src.length} sources`);
  const be = webgpuBackend() as InPlaceBackend;
  dst.forEach((d, i) => {
    const s = src[i];
    if (d.dtype !== s.dtype || d.size !== s.size) throw new Error(`copyVariables: ${d.name} [${d.shape}] ${d.dtype} ≠ ${s.name} [${s.shape}] ${s.dtype}`);
    if (d.dataId === s.dataId) return;
    ownBuffer(d, be);
    recordCopy(be, s, d);
  });
}
