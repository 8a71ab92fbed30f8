/**
 * GPU memory the active tfjs backend holds, from tf.memory(): on webgpu `numBytesInGPU` (bytes in
 * live tensors) and `numBytesAllocatedInGPU` (buffers allocated, the pool included). Undefined on
 * CPU backends, which report neither.
 */
import * as tf from "@tensorflow/tfjs";

export function gpuMemoryMiB(): { usedMiB: number; allocatedMiB: number } | undefined {
  const m = tf.memory() as tf.MemoryInfo & { numBytesInGPU?: number; numBytesAllocatedInGPU?: number };
  if (m.numBytesInGPU === undefined) return undefined;
  const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;
  return { usedMiB: mib(m.numBytesInGPU), allocatedMiB: mib(m.numBytesAllocatedInGPU ?? m.numBytesInGPU) };
}
