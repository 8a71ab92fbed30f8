/**
 * tfjs-backend-webgpu 4.22 uploads a host tensor to a pooled GPU buffer through a staging buffer
 * it creates (mapped) for every upload and copies in the command encoder, ending the compute pass
 * to do so. On an H200 those creations were the largest native cost left in a training iteration
 * (a CPU profile of `bench --parts dispatch`). `queue.writeBuffer` writes the same bytes with no
 * buffer to create and no pass to end. It runs ahead of the commands still being recorded, which is
 * safe here: a buffer in tfjs's free pool is never the target of a recorded command, since every
 * program's inputs and outputs are released only after their command buffer is submitted, and
 * with this patch no upload records a copy any more.
 */
import * as tf from "@tensorflow/tfjs";

interface TensorDataLike {
  values: ArrayLike<number> | null;
  dtype: tf.DataType;
  shape: number[];
  resource: unknown;
}
interface WebgpuBackendLike {
  tensorMap: { get(id: object): TensorDataLike | undefined };
  bufferManager: { acquireBuffer(size: number, usage: number): unknown };
  queue: { writeBuffer(buffer: unknown, offset: number, data: ArrayBufferView): void };
  uploadToGPU(dataId: object): void;
}

const patched = new WeakSet<object>();

/** Patches the active webgpu backend instance (once): uploads by `queue.writeBuffer`. */
export function patchWebgpuUpload(): void {
  if (tf.getBackend() !== "webgpu") return;
  const be = tf.backend() as unknown as WebgpuBackendLike;
  if (patched.has(be)) return;
  patched.add(be);
  const original = be.uploadToGPU.bind(be);
  const g = globalThis as unknown as { GPUBufferUsage: Record<string, number> };
  const usage = g.GPUBufferUsage.STORAGE | g.GPUBufferUsage.COPY_SRC | g.GPUBufferUsage.COPY_DST;
  be.uploadToGPU = (dataId: object) => {
    const t = be.tensorMap.get(dataId);
    // already on the GPU, as tfjs's own first check (every recorded call asks for each of its weights)
    if (t && t.resource != null) return;
    // complex64 and the rest keep tfjs's own path
    if (!t || !t.values || !(t.dtype === "float32" || t.dtype === "int32" || t.dtype === "bool")) return original(dataId);
    const n = t.shape.reduce((a, b) => a * b, 1);
    const buffer = be.bufferManager.acquireBuffer(4 * n, usage);
    if (n > 0) {
      const v = t.values;
      const data = t.dtype === "float32" ? (v instanceof Float32Array ? v : Float32Array.from(v)) : v instanceof Int32Array ? v : Int32Array.from(v);
      be.queue.writeBuffer(buffer, 0, data.length === n ? data : data.subarray(0, n));
    }
    t.values = null; // once uploaded, the values live on the GPU only (as tfjs does)
    t.resource = buffer;
  };
}
