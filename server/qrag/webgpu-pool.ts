/**
 * tfjs-backend-webgpu 4.22 keeps every freed GPU buffer in its BufferManager's `freeBuffers`,
 * keyed by exact size and usage, and never destroys one: a later tensor of the same size reuses it
 * (what keeps tfjs fast), but every size that varies (chunk batches, episode lengths, read-back
 * staging) stays allocated for good (44 GB on an H100 after the benches, with 0 bytes in live
 * tensors). `trimWebgpuPool` bounds the pool: called at natural points (after a training
 * iteration, a candidate encoding, a greedy episode), it destroys pooled buffers until the backend
 * holds at most `ratio` × the bytes of its live buffers. Reuse inside one of those steps, and of
 * whatever the slack keeps, is untouched.
 */
import * as tf from "@tensorflow/tfjs";

/** Allocated ≤ this × live after a trim. */
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

/** Per buffer manager: the pool keys (tfjs's `${size}_${usage}`) acquired since its last trim. */
const hotKeys = new WeakMap<BufferManagerLike, Set<string>>();

function keysAcquired(bm: BufferManagerLike): Set<string> {
  let hot = hotKeys.get(bm);
  if (!hot) {
    const keys = new Set<string>();
    const acquire = bm.acquireBuffer.bind(bm);
    bm.acquireBuffer = (size, usage, ...rest) => {
      keys.add(`${size}_${usage}`);
      return acquire(size, usage, ...rest);
    };
    hotKeys.set(bm, (hot = keys));
  }
  return hot;
}

function webgpuBackend(): (WebgpuBackendLike & { bufferManager: BufferManagerLike }) | undefined {
  if (tf.getBackend() !== "webgpu") return undefined;
  const be = tf.backend() as unknown as WebgpuBackendLike;
  return be.bufferManager?.freeBuffers instanceof Map ? (be as WebgpuBackendLike & { bufferManager: BufferManagerLike }) : undefined;
}

/**
 * Destroys pooled (free) webgpu buffers until allocated ≤ `ratio` × live bytes; returns the bytes
 * freed (0 off webgpu). Sizes not acquired since the last trim go first (one-off shapes), then
 * those in use each step; within each, a pick is the smallest pooled size that covers what is
 * still over, else the largest: few buffers go, and little more than needed.
 */
export function trimWebgpuPool(ratio = ratioInUse): number {
  const be = webgpuBackend();
  if (!be) return 0;
  const bm = be.bufferManager;
  const hot = keysAcquired(bm);
  if (bm.numBytesAllocated <= ratio * bm.numBytesUsed) {
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
  const budget = ratio * bm.numBytesUsed;
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
