/**
 * The hf BERT encoder's forward with a gradient, recorded (issue 27): as recorded-train.ts does
 * for the transformer, ONE tfjs op for tfjs's tape (recorded-train.ts recordedTrainOp, a
 * `tf.customGrad` over the encoder's variables), its forward our own programs on a plan that keeps
 * every layer's activations, its gradient the backward of recorded-bert-backward.ts recorded into
 * the same plan. No tfjs kernel runs inside either; the function is hf/bert.ts `bertDense` + the
 * ÷10 masked mean (hf/encoder.ts), the dropout masks the ones its tfjs path draws.
 *
 * Why: the paper's recipe (hf BERT) spends its update in bertDense under the tape, hundreds of tfjs
 * kernels forward and backward for 12 layers (~0.075 ms of host JavaScript each on an H200).
 *
 * Forward programs (recorded-bert.ts buildBertPlan, the no-grad list keeping what the backward reads):
 * e = word[id] + pos[t] + type[0]; x₀ = LN(e)·mask (e and the row stats kept); per layer Q, K, V matmul+bias
 * (one program, separate buffers) → attention (its dropout mask drawn inline, as the backward draws it again) → output matmul+bias → mid = LN(x + h·m) (v = x + h·m and the row stats kept) → fc1
 * matmul+bias (pre-activation kept) → activation → fc2 matmul+bias → LN(mid + h·m); masked mean
 * ÷10: 3 + 8 per layer programs, 3 + 6 where each LN is its product's epilogue (d ≤ 128). Dropout keys: embedding, per layer attention then the two
 * sub-layer ends (the tfjs path's order), each only where its rate is > 0 in train mode.
 */
import * as tf from "@tensorflow/tfjs";
import type { Rng } from "../../util/rng.ts";
import type { BertConfig } from "../hf/bert.ts";
import type { TapedForward } from "../encoder.ts";
import { webgpuBackend } from "./raw-program.ts";
import { admitPlan, cachedPlan, gradientsFit, keepKey, planBound, recorderApplies, residualFuses, rowsWithin, type BackendLike, type DeviceLike, type Plan } from "./recorded-encoder.ts";
import { recordedTrainOp, runTaped } from "./recorded-train.ts";
import { bertFits, bertGradSizes, bertPlanKey, buildBertPlan } from "./recorded-bert.ts";
import { bertGrads, buildBertBackward } from "./recorded-bert-backward.ts";
import { csrFloats } from "./recorded-backward.ts";
import { lnParts, splitScratchFloats } from "./split-k.ts";
import { halfActive, halfKey } from "./half-storage.ts";

/**
 * The pooled encoding [B, d] of an HfBertEncoder's `vars` (bertSpecs order) as one differentiable
 * op, or null where the recorder does not apply (as recordedBertForward: the caller runs bertDense).
 */
export function recordedBertTrain(vars: readonly tf.Variable[], c: BertConfig, ids: Int32Array, mask: Float32Array, B: number, T: number, training: boolean, rng: Rng): tf.Tensor2D | null {
  const plan = tapedPlan(c, ids, B, T, training);
  return plan && recordedTrainOp(webgpuBackend() as BackendLike, plan, vars, ids, mask, rng);
}

/** The same forward and its backward without tfjs's tape (the learner's device pass), or null. */
export function recordedBertTaped(vars: readonly tf.Variable[], c: BertConfig, ids: Int32Array, mask: Float32Array, B: number, T: number, training: boolean, rng: Rng): TapedForward | null {
  const plan = tapedPlan(c, ids, B, T, training);
  return plan && runTaped(webgpuBackend() as BackendLike, plan, vars, ids, mask, rng);
}

function tapedPlan(c: BertConfig, ids: Int32Array, B: number, T: number, training: boolean): Plan | null {
  if (T > c.maxPositions || !recorderApplies(c.vocab, ids, B, T)) return null;
  return bertTrainPlanFor(webgpuBackend().device as DeviceLike, c, B, T, training);
}

/** A keep plan of this architecture and shape (recorded-encoder.ts keepKey), made on a miss; null when it cannot be recorded. */
function bertTrainPlanFor(device: DeviceLike, c: BertConfig, B: number, T: number, training: boolean): Plan | null {
  const { key: plain, hp, ap } = bertPlanKey(c, B, T, training);
  const key = keepKey(device, `${plain}${halfKey(halfActive(device))}`);
  const hit = cachedPlan(device, key);
  if (hit) return hit;
  if (!bertFits(device, c, B, T) || !gradientsFit(device, bertGradSizes(c))) return null;
  // over the keep plans' byte bound (admitPlan would refuse it): not made, rather than its buffers
  // created and destroyed on every update (BERT-base keeps ~0.6 MB of activations per token)
  if (bertTrainBytes(c, B, T, halfActive(device)) > planBound("keep")) return null;
  return admitPlan(device, buildBertPlan(device, c, key, B, T, hp, ap, buildBertBackward));
}

/**
 * The most rows of `T` tokens whose keep plan this device holds: within the keep plans' byte
 * budget, and each activation buffer within the binding limit (bertTrainBytes is linear in the rows).
 */
export function bertTapedRows(c: BertConfig, T: number): number {
  const device = webgpuBackend().device as DeviceLike;
  const half = halfActive(device);
  return rowsWithin(device, (B) => bertTrainBytes(c, B, T, half), planBound("keep"), Math.max(c.intermediate, c.hidden), T);
}

/** The bytes of a keep plan's buffers (recorded-bert.ts buildBertPlan's with a backward, and buildBertBackward's, before 16-byte rounding; the uniform slots' bound); `half`: its activations f16. */
export function bertTrainBytes(c: BertConfig, B: number, T: number, half = false): number {
  const d = c.hidden, F = c.intermediate, H = c.heads, L = c.layers, N = B * T;
  const params = (c.vocab + c.maxPositions + c.typeVocab + 2) * d + L * (4 * d * d + 2 * d * F + 9 * d + F);
  // the activations (f16 with `half`): e, x per layer and the last, per layer q k v ctx v1 mid v2 f1 f2, h (not where the residual fuses)
  const acts = N * d + (L + 1) * N * d + L * (7 * N * d + 2 * N * F) + (residualFuses(d) ? 0 : N * d);
  const forward = 3 * N + 2 * N + L * (2 * B * H * T + 4 * N) + B * d;
  // the token rows' CSR and its heavy ids' parts (recorded-backward.ts csrBuffers), the split weight gradients' partials and
  // two LayerNorms' partial sums (split-k.ts)
  const csr = Object.values(csrFloats(N, d)).reduce((a, n) => a + n, 0);
  const split = splitScratchFloats(bertGrads(d, F), N);
  const scratch = [...split.c, ...split.s].reduce((a, n) => a + n, 0) + 2 * 2 * lnParts(N, d) * d;
  const backward = params + B * d + 9 * N * d + B * H * T + N * F + csr + scratch;
  // uniform slots: per layer 8 forward programs (6 where the residual fuses) and 16 backward
  return (half ? 2 : 4) * acts + 4 * (forward + backward) + 256 * (9 + (residualFuses(d) ? 22 : 24) * L);
}

