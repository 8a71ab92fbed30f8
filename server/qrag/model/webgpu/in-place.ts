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

interface GpuBufferLike {
  size: number;
}

/** The parts of tfjs-backend-webgpu 4.22's WebGPUBackend this uses beyond raw-program.ts's. */
interface InPlaceBackend extends WebgpuBackendLike {
  tensorMap: { get(id: object): { resource?: unknown; values?: unknown } };
  refCount(id: object): number;
}

function bytesOf(t: tf.TensorInfo): number {
  if (t.dtype !== "float32" && t.dtype !== "int32") throw new Error(`in-place: float32 or int32 tensors only, got ${t.dtype}`);
  return t.shape.reduce((a, b) => a * b, 1) * 4;
}

/** Records a copy of `src`'s buffer into `dst`'s in tfjs's command encoder, in order with its kernels. */
function recordCopy(be: InPlaceBackend, src: tf.TensorInfo, dst: tf.TensorInfo): void {
  const bytes = bytesOf(src);
  if (bytes === 0) return;
  be.ensureCommandEncoderReady();
  be.endComputePassEncoder();
  const enc = be.commandEncoder as unknown as { copyBufferToBuffer(s: GpuBufferLike, so: number, d: GpuBufferLike, o: number, n: number): void };
  enc.copyBufferToBuffer(be.tensorMap.get(src.dataId).resource as GpuBufferLike, 0, be.tensorMap.get(dst.dataId).resource as GpuBufferLike, 0, bytes);
  // tfjs releases a disposed tensor's buffer only after the commands using it are submitted
  be.commandQueueOwnedIds.add(src.dataId);
  be.commandQueueOwnedIds.add(dst.dataId);
}

/**
 * Makes `v`'s GPU buffer its own, ready to be written in place: uploaded, not shared with another
 * tensor (else v first gets a copy), and its host copy of the values dropped.
 */
export function ownBuffer(v: tf.Variable, on: WebgpuBackendLike = webgpuBackend()): void {
  const be = on as InPlaceBackend;
  be.uploadToGPU(v.dataId);
  if (be.refCount(v.dataId) > 1) {
    const copy = be.makeTensorInfo([...v.shape], v.dtype);
    be.uploadToGPU(copy.dataId);
    recordCopy(be, v, copy);
    const t = tf.engine().makeTensorFromTensorInfo(copy);
    v.assign(t);
    t.dispose();
  }
  be.tensorMap.get(v.dataId).values = null;
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
    be.uploadToGPU(s.dataId);
    recordCopy(be, s, d);
  });
}
