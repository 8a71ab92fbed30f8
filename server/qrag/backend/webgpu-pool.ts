/**
 * tfjs-backend-webgpu 4.22 keeps every freed GPU buffer in its BufferManager's `freeBuffers`,
 * keyed by exact size and usage, and never destroys one: a later tensor of the same size reuses it
 * (what keeps tfjs fast), but every size that varies (chunk batches, episode lengths, read-back
 * staging) stays allocated for good (44 GB on an H100 after the benches, with 0 bytes in live
 * tensors). `trimWebgpuPool` bounds the pool: called at natural points (after a training
 * iteration, a candidate encoding, a greedy episode), it destroys pooled buffers until the backend
 * holds at most `ratio` × the step's working set: the most bytes its live buffers held at once
 * since the last trim (the tensors and in-flight buffers the step needed). Why the peak and not
 * the bytes live at the step's end: trimming to those destroyed the buffers every step re-creates,
 * 17 % of a training iteration's time on an H200 (344 vs 287 ms), for no lasting gain.
 */
import * as tf from "@tensorflow/tfjs";

/** Allocated ≤ this × the step's peak bytes in use after a trim. */
export const POOL_RATIO = 1.2;

let ratioInUse = POOL_RATIO;

/** Sets the ratio trims use by default (the bench's `--pool-ratio`; Infinity turns trimming off). */
export function setPoolRatio(ratio: number): void {
  if (!(ratio >= 1)) throw new Error(`pool ratio ${ratio} must be ≥ 1`);
  ratioInUse = ratio;
}

/** The parts of tfjs-backend-webgpu 4.22's BufferManager and WebGPUBackend this uses. */
interface GpuBufferLike {
  size: number;
  destroy(): void;
}
interface BufferManagerLike {
  freeBuffers: Map<string, GpuBufferLike[]>;
  numFreeBuffers: number;
  numBytesUsed: number;
  numBytesAllocated: number;
  acquireBuffer(size: number, usage: number, ...rest: unknown[]): GpuBufferLike;
}
interface WebgpuBackendLike {
  bufferManager?: BufferManagerLike;
  commandEncoder: object | null;
  endComputePassEncoder(): void;
  submitQueue(): void;
}

/** Per buffer manager, since its last trim: the pool keys (tfjs's `${size}_${usage}`) acquired, and the most bytes in use at once. */
interface StepUse {
  keys: Set<string>;
  peak: number;
  /** The previous step's peak (what the last trim bounded by). */
  lastPeak: number;
}
const steps = new WeakMap<BufferManagerLike, StepUse>();

function stepUse(bm: BufferManagerLike): StepUse {
  let use = steps.get(bm);
  if (!use) {
    const u: StepUse = { keys: new Set(), peak: bm.numBytesUsed, lastPeak: bm.numBytesUsed };
    const acquire = bm.acquireBuffer.bind(bm);
    bm.acquireBuffer = (size, usage, ...rest) => {
      u.keys.add(`${size}_${usage}`);
      const buf = acquire(size, usage, ...rest);
      if (bm.numBytesUsed > u.peak) u.peak = bm.numBytesUsed;
      return buf;
    };
    steps.set(bm, (use = u));
  }
  return use;
}

/** Bytes the last trimmed step held at most at once (live now if more; undefined off webgpu). */
export function stepPeakBytes(): number | undefined {
  const be = webgpuBackend();
  if (!be) return undefined;
  return Math.max(stepUse(be.bufferManager).lastPeak, be.bufferManager.numBytesUsed);
}

function webgpuBackend(): (WebgpuBackendLike & { bufferManager: BufferManagerLike }) | undefined {
  if (tf.getBackend() !== "webgpu") return undefined;
  const be = tf.backend() as unknown as WebgpuBackendLike;
  return be.bufferManager?.freeBuffers instanceof Map ? (be as WebgpuBackendLike & { bufferManager: BufferManagerLike }) : undefined;
}

/**
 * Destroys pooled (free) webgpu buffers until allocated ≤ `ratio` × the step's peak bytes in use
 * (at least those live now); returns the bytes freed (0 off webgpu). Sizes not acquired since the last trim go first (one-off shapes), then
 * those in use each step; within each, a pick is the smallest pooled size that covers what is
 * still over, else the largest: few buffers go, and little more than needed.
 */
export function trimWebgpuPool(ratio = ratioInUse): number {
  const be = webgpuBackend();
  if (!be) return 0;
  const bm = be.bufferManager;
  const use = stepUse(bm);
  const hot = use.keys;
  const peak = Math.max(use.peak, bm.numBytesUsed);
  use.lastPeak = peak;
  use.peak = bm.numBytesUsed;
  if (bm.numBytesAllocated <= ratio * peak) {
    hot.clear();
    return 0;
  }
  // A buffer freed while the unsubmitted encoder still copies into it (an uploaded tensor disposed
  // before any kernel read it) sits in the pool already: destroying it would invalidate that
  // command buffer. Submitted work is safe: WebGPU frees a destroyed buffer once the queue is done.
  if (be.commandEncoder) {
    be.endComputePassEncoder();
    be.submitQueue(); // also releases the tensors and uniforms it held: live bytes drop
  }
  const budget = ratio * peak;
  const stale: GpuBufferLike[][] = [];
  const reused: GpuBufferLike[][] = [];
  for (const [key, list] of bm.freeBuffers) if (list.length > 0) (hot.has(key) ? reused : stale).push(list);
  hot.clear();
  let freed = 0;
  for (const lists of [stale, reused]) {
    lists.sort((a, b) => a[0].size - b[0].size);
    while (bm.numBytesAllocated > budget && lists.length > 0) {
      const over = bm.numBytesAllocated - budget;
      let i = lists.findIndex((l) => l[0].size >= over);
      if (i < 0) i = lists.length - 1;
      // emptied lists stay in the map: releaseBuffer returns early (and leaks) when it is empty
      const buf = lists[i].pop()!;
      if (lists[i].length === 0) lists.splice(i, 1);
      buf.destroy();
      bm.numFreeBuffers--;
      bm.numBytesAllocated -= buf.size;
      freed += buf.size;
    }
  }
  return freed;
}
