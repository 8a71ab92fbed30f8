/**
 * Row blocks joined by buffer copies recorded into tfjs's pending command encoder: no program and
 * no tfjs kernel (tfjs's concat is both). The rollout joins the candidate blocks of the episodes
 * it saw for the deferred values this way (agent/device-candidates.ts), and an encoder its
 * sub-batches (base.ts embedDevice), whose rows `gatherRows` then puts back in order; the
 * rollout's runs of lock-steps and batches of values are joined flat (`joinFlat`), to be read, or
 * kept, as one.
 */
import * as tf from "@tensorflow/tfjs";
import { runToTensors, storageDecls, uniformStruct, webgpuBackend, WG } from "./raw-program.ts";
import { recordedIntoTfjs, type BackendLike, type BufferLike } from "./recorded-encoder.ts";
import { recordTensorCopy } from "./in-place.ts";

/** tf.concat(parts, 0) of float32 [r_i, d] tensors on webgpu, as one [Σ r_i, d] tensor. */
export function joinRows(parts: readonly tf.Tensor2D[]): tf.Tensor2D {
  const d = parts[0].shape[1];
  for (const p of parts) if (p.shape[1] !== d || p.dtype !== "float32") throw new Error(`joinRows: [${p.shape}] ${p.dtype} among float32 [*, ${d}]`);
  return joined(parts, [parts.reduce((n, p) => n + p.shape[0], 0), d]) as tf.Tensor2D;
}

/** Tensors of one dtype (float32 or int32) end to end, as one 1-D tensor: several results read with one read. */
export function joinFlat(parts: readonly tf.Tensor[]): tf.Tensor1D {
  const dtype = parts[0].dtype;
  for (const p of parts) if (p.dtype !== dtype) throw new Error(`joinFlat: ${p.dtype} among ${dtype}`);
  return joined(parts, [parts.reduce((n, p) => n + p.size, 0)]) as tf.Tensor1D;
}

/** The parts' buffers copied one after another into a new tensor of `shape` (recordTensorCopy checks the dtype). */
function joined(parts: readonly tf.Tensor[], shape: number[]): tf.Tensor {
  const be = webgpuBackend() as BackendLike;
  const out = be.makeTensorInfo(shape, parts[0].dtype);
  be.uploadToGPU(out.dataId);
  const dst = be.tensorMap.get(out.dataId).resource as BufferLike;
  let offset = 0;
  for (const p of parts) {
    recordTensorCopy(be, p, dst, offset);
    offset += p.size * 4;
  }
  const t = tf.engine().makeTensorFromTensorInfo(out);
  recordedIntoTfjs(be, [t]);
  return t;
}

const GATHER_CODE = `${uniformStruct(["n: u32", "d: u32"])}
${storageDecls(["src", "index:i32"], ["out"])}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let j = threadIndex(gid);
  if (j >= u.n) { return; }
  let r = j / u.d;
  out[j] = src[u32(index[r]) * u.d + j % u.d];
}`;

/**
 * tf.gather(src, index) of a float32 [n, d] tensor's rows (or a [n] tensor's values) on webgpu, as
 * one program of ours (tfjs's GatherV2 is a kernel with its host overhead). Each index must lie in [0, n).
 */
export function gatherRows<T extends tf.Tensor1D | tf.Tensor2D>(src: T, index: Int32Array): T {
  const [n, d = 1] = src.shape;
  if (src.dtype !== "float32") throw new Error(`gatherRows: float32 rows only, got ${src.dtype}`);
  for (const r of index) if (!(r >= 0 && r < n)) throw new Error(`gatherRows: row ${r} outside [0, ${n})`);
  const idx = tf.tensor1d(index, "int32");
  try {
    const size = index.length * d;
    const shape = src.rank === 1 ? [index.length] : [index.length, d];
    return runToTensors("qrag_gather_rows", GATHER_CODE, [src, idx], [shape], [{ type: "uint32", data: [size] }, { type: "uint32", data: [d] }], size)[0] as T;
  } finally {
    idx.dispose();
  }
}
