/**
 * A recorded call's inputs and uniforms on their way into its plan's buffers: written on the queue
 * into the ring's next free bytes, then copied into place by the pending command encoder, in order
 * with the commands around them.
 *
 * Why: written straight into the plan, they landed before the whole pending command buffer ran,
 * so a call of a plan already pending in it had to submit that first: one submit each time a
 * rollout's lock-step reused the plan of a step before it.
 *
 * The ring starts over with each command encoder: what earlier calls copied from it has been
 * submitted, and the queue runs later writes after that. A call that does not fit submits first
 * (ringRoom); one larger than the ring replaces it with a larger one.
 */
import { noteOutsideBytes } from "../../backend/gpu-memory.ts";

/** What the ring needs of the webgpu backend, its device and a command encoder (recorded-encoder.ts's types fit). */
type BufferLike = object;
interface DeviceLike {
  createBuffer(d: { size: number; usage: number; label?: string }): BufferLike;
  queue: { writeBuffer(b: BufferLike, offset: number, data: ArrayBufferView): void };
}
interface BackendLike {
  device: object;
  commandEncoder: unknown;
}
interface EncoderLike {
  copyBufferToBuffer(src: BufferLike, so: number, dst: BufferLike, d0: number, size: number): void;
}

/** Bytes `data` goes to `dst` at `offset` with (each a multiple of 4). */
export interface Staged {
  dst: BufferLike;
  offset: number;
  data: ArrayBufferView;
}

interface Ring {
  buffer: BufferLike & { destroy(): void };
  size: number;
  used: number;
  /** The command encoder the used bytes are copied by. */
  encoder: unknown;
}

/** The smallest ring: a rollout step's inputs and uniforms are a few KiB; an encode's sub-batch of 64k tokens 768 KiB. */
const MIN_BYTES = 256 << 10;
/** GPUBufferUsage COPY_SRC | COPY_DST. */
const RING_USAGE = 0x04 | 0x08;

const rings = new WeakMap<object, Ring>();

const bytesOf = (staged: readonly Staged[]) => staged.reduce((a, s) => a + s.data.byteLength, 0);

/** Whether `staged` fits beside what the pending command encoder already copies from the ring (false: submit it first). */
export function ringRoom(be: BackendLike, staged: readonly Staged[]): boolean {
  const r = rings.get(be.device);
  if (!r || be.commandEncoder === null || r.encoder !== be.commandEncoder) return true;
  return r.used + bytesOf(staged) <= r.size;
}

/** Writes `staged` into the ring and records their copies into `enc` (the pending command encoder, no pass open). */
export function stageAll(be: BackendLike, enc: EncoderLike, staged: readonly Staged[]): void {
  const device = be.device as DeviceLike;
  const bytes = bytesOf(staged);
  let r = rings.get(device);
  if (r && r.encoder !== enc) {
    r.used = 0;
    r.encoder = enc;
  }
  if (!r || r.used + bytes > r.size) {
    if (r && r.used > 0) throw new Error("staging ring: a call that does not fit must submit first (ringRoom)");
    // the old ring's copies were all submitted (a new encoder); the queue frees it after them
    if (r) {
      r.buffer.destroy();
      noteOutsideBytes(-r.size);
    }
    let size = MIN_BYTES;
    while (size < bytes) size *= 2;
    r = { buffer: device.createBuffer({ size, usage: RING_USAGE, label: "qrag-staging" }) as Ring["buffer"], size, used: 0, encoder: enc };
    noteOutsideBytes(size);
    rings.set(device, r);
  }
  for (const s of staged) {
    const n = s.data.byteLength;
    device.queue.writeBuffer(r.buffer, r.used, s.data);
    enc.copyBufferToBuffer(r.buffer, r.used, s.dst, s.offset, n);
    r.used += n;
  }
}
