/**
 * Dropout masks drawn on the GPU: the values of ops.ts `dropoutMask` (the counter-based hash of
 * util/mask-hash.ts under a key drawn from the same Rng), one thread per value.
 *
 * Why: the update's attention dropout alone needs B·H·T·T = 16.7M values per layer for the
 * reference workload; drawn on the host and uploaded they took ≈ 45 % of a training iteration's
 * host time on an H200 (a CPU profile of `--parts dispatch`).
 */
import * as tf from "@tensorflow/tfjs";
import type { Rng } from "../../util/rng.ts";
import { MASK_HASH_WGSL, dropoutKeepScale, dropThreshold, maskKey } from "../../util/mask-hash.ts";
import { runRawProgram, storageDecls, uniformStruct, webgpuBackend, WG } from "./raw-program.ts";

/**
 * `maskAt(i)`: mask value i (0 or the keep scale) from the uniforms `thr`, `keep`, `k0`, `k1`;
 * shared with the fused programs that apply a mask without storing it (residual-layernorm.ts).
 * `maskKeyed(k0, k1, i)`: the same under another key (a program with two dropout sites: layer-tail.ts).
 */
export const MASK_AT_WGSL = `${MASK_HASH_WGSL}
fn maskKeyed(k0: u32, k1: u32, i: u32) -> f32 {
  let bits = maskBits(k0, k1, i >> 1u);
  let half = select(bits & 0xffffu, bits >> 16u, (i & 1u) == 1u);
  return select(u.keep, 0.0, half < u.thr);
}
fn maskAt(i: u32) -> f32 { return maskKeyed(u.k0, u.k1, i); }`;

/** The mask program: m[i] = maskAt(i), fields n, thr, keep, k0, k1. */
export const DROPOUT_MASK_WGSL = `${uniformStruct(["n: u32", "thr: u32", "keep: f32", "k0: u32", "k1: u32"])}
${storageDecls([], ["m"])}
${MASK_AT_WGSL}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = threadIndex(gid);
  if (i >= u.n) { return; }
  m[i] = maskAt(i);
}`;

/** The mask `dropoutMask(size, rate, rng)` returns, as a [size] tensor computed on the device. */
export function dropoutMaskDevice(size: number, rate: number, rng: Rng): tf.Tensor1D {
  const thr = dropThreshold(rate);
  const keep = dropoutKeepScale(rate);
  const [k0, k1] = maskKey(rng);
  const [info] = runRawProgram(webgpuBackend(), {
    key: "qrag_dropout_mask",
    code: DROPOUT_MASK_WGSL,
    inputs: [],
    outputs: [{ shape: [size] }],
    uniforms: [
      { type: "uint32", data: [size] },
      { type: "uint32", data: [thr] },
      { type: "float32", data: [keep] },
      { type: "uint32", data: [k0] },
      { type: "uint32", data: [k1] },
    ],
    threads: size,
  });
  return tf.engine().makeTensorFromTensorInfo(info) as tf.Tensor1D;
}
