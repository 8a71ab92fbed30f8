/**
 * The call shape of dense multi-head attention over a masked [batch, len] batch, shared by the
 * host reference (attention.ts `attentionBatched`), the device ops (device-ops.ts `attentionDense`)
 * and the fused webgpu programs (webgpu/attention.ts), so none of them imports another for it.
 */
import type { Rng } from "../util/rng.ts";

export interface BatchedArgs {
  batch: number;
  len: number;
  heads: number;
  /** [batch·len] key mask, 1 = token, 0 = PAD. */
  mask: Float32Array;
  dropout: number;
  training: boolean;
  rng?: Rng;
}
