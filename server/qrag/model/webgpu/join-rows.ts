/**
 * Row blocks joined by buffer copies recorded into tfjs's pending command encoder: no program and
 * no tfjs kernel (tfjs's concat is both). The rollout joins the candidate blocks of the episodes
 * it saw for the deferred values this way (agent/device-candidates.ts).
 */
import * as tf from "@tensorflow/tfjs";
import { webgpuBackend } from "./raw-program.ts";
import { recordedIntoTfjs, type BackendLike, type BufferLike } from "./recorded-encoder.ts";
import { recordTensorCopy } from "./in-place.ts";

/** tf.concat(parts, 0) of float32 [r_i, d] tensors on webgpu, as one [Σ r_i, d] tensor. */
export function joinRows(parts: readonly tf.Tensor2D[]): tf.Tensor2D {
  const d = parts[0].shape[1];
  for (const p of parts) if (p.shape[1] !== d || p.dtype !== "float32") throw new Error(`joinRows: [${p.shape}] ${p.dtype} among float32 [*, ${d}]`);
  const be = webgpuBackend() as BackendLike;
  const rows = parts.reduce((n, p) => n + p.shape[0], 0);
  const out = be.makeTensorInfo([rows, d], "float32");
  be.uploadToGPU(out.dataId);
  const dst = be.tensorMap.get(out.dataId).resource as BufferLike;
  let offset = 0;
  for (const p of parts) {
    recordTensorCopy(be, p, dst, offset);
    offset += p.size * 4;
  }
  const t = tf.engine().makeTensorFromTensorInfo(out) as tf.Tensor2D;
  recordedIntoTfjs(be, [t]);
  return t;
}
