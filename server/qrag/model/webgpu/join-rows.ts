/**
 * Row blocks joined by buffer copies recorded into tfjs's pending command encoder: no program and
 * no tfjs kernel (tfjs's concat is both). The rollout joins the candidate blocks of the episodes
 * it saw for the deferred values this way (agent/device-candidates.ts).
 */
import * as tf from "@tensorflow/tfjs";
import { webgpuBackend } from "./raw-program.ts";
import { recordedIntoTfjs, type BackendLike, type BufferLike, type EncoderLike } from "./recorded-encoder.ts";

/** tf.concat(parts, 0) of float32 [r_i, d] tensors on webgpu, as one [Σ r_i, d] tensor. */
export function joinRows(parts: readonly tf.Tensor2D[]): tf.Tensor2D {
  const d = parts[0].shape[1];
  for (const p of parts) if (p.shape[1] !== d || p.dtype !== "float32") throw new Error(`joinRows: [${p.shape}] ${p.dtype} among float32 [*, ${d}]`);
  const be = webgpuBackend() as BackendLike;
  be.ensureCommandEncoderReady();
  be.endComputePassEncoder();
  const enc = be.commandEncoder as unknown as EncoderLike;
  const rows = parts.reduce((n, p) => n + p.shape[0], 0);
  const out = be.makeTensorInfo([rows, d], "float32");
  be.uploadToGPU(out.dataId);
  const dst = be.tensorMap.get(out.dataId).resource as BufferLike;
  let offset = 0;
  for (const p of parts) {
    const bytes = p.size * 4;
    if (bytes === 0) continue;
    be.uploadToGPU(p.dataId);
    be.commandQueueOwnedIds.add(p.dataId); // kept until the copy is submitted, even if disposed
    enc.copyBufferToBuffer(be.tensorMap.get(p.dataId).resource as BufferLike, 0, dst, offset, bytes);
    offset += bytes;
  }
  const t = tf.engine().makeTensorFromTensorInfo(out) as tf.Tensor2D;
  recordedIntoTfjs(be, [t]);
  return t;
}
