/**
 * GPU memory the active tfjs backend holds, from tf.memory(): on webgpu `numBytesInGPU` (bytes in
 * live tensors), `numBytesAllocatedInGPU` (buffers allocated, the pool included), and the most
 * bytes the last step held at once (webgpu-pool.ts: what the pool is bounded by). Buffers the
 * engine creates outside tfjs (the recorded programs' plans: activations and their buffers, made
 * once per batch shape and kept in an LRU, model/webgpu/recorded-encoder.ts) are added to the
 * allocated figure and reported apart as `planMiB`. Undefined on CPU backends, which report none
 * of them.
 */
import * as tf from "@tensorflow/tfjs";
import { stepPeakBytes } from "./webgpu-pool.ts";

let outsideBytes = 0;

/** Bytes of GPU buffers created (+) or destroyed (−) outside tfjs's buffer manager. */
export function noteOutsideBytes(delta: number): void {
  outsideBytes += delta;
}

export function gpuMemoryMiB(): { usedMiB: number; allocatedMiB: number; peakMiB: number; planMiB: number } | undefined {
  const m = tf.memory() as tf.MemoryInfo & { numBytesInGPU?: number; numBytesAllocatedInGPU?: number };
  if (m.numBytesInGPU === undefined) return undefined;
  const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;
  return { usedMiB: mib(m.numBytesInGPU), allocatedMiB: mib((m.numBytesAllocatedInGPU ?? m.numBytesInGPU) + outsideBytes), peakMiB: mib(stepPeakBytes() ?? m.numBytesInGPU), planMiB: mib(outsideBytes) };
}
