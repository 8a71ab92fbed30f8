/**
 * The transformer encoder's forward with a gradient, recorded (issue 27): ONE tfjs op for tfjs's
 * tape, a `tf.customGrad` whose inputs are the encoder's variables (so variableGrads and the
 * optimizer see their gradients as before). Its forward is recorded-encoder.ts's program list
 * on a plan that keeps every layer's activations; its gradFunc records the whole backward
 * (recorded-backward.ts) into tfjs's command encoder as the forward is, and hands the gradients back as
 * tfjs tensors. No tfjs kernel runs inside either.
 *
 * The backward applies the forward's dropout masks again from the same keys (drawn once, in the
 * tfjs path's order). A plan holds one taped forward's activations until its backward ran: a
 * second taped forward of the same shape meanwhile takes a second plan (planFor).
 */
import * as tf from "@tensorflow/tfjs";
import { tfjsKernelCount } from "../../backend/device.ts";
import type { Rng } from "../../util/rng.ts";
import type { TapedForward } from "../encoder.ts";
import { webgpuBackend } from "./raw-program.ts";
import { copyOut, drawKeys, planFor, recordCall, recordedIntoTfjs, recorderApplies, recorderStats, recordSteps, stagedCall, submitForward, type BackendLike, type BackPlan, type BufferLike, type DeviceLike, type EncoderLike, type Plan, type RecordedConfig } from "./recorded-encoder.ts";
import { buildBackward, tokenCsr, type TokenCsr } from "./recorded-backward.ts";

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

/**
 * Runs the recorded forward that keeps its activations, or returns null (nothing drawn, nothing
 * run) where the recorder does not apply.
 */
export function recordedTaped(vars: readonly tf.Variable[], c: RecordedConfig, ids: Int32Array, mask: Float32Array, B: number, T: number, training: boolean, rng: Rng): TapedForward | null {
  const plan = tapedPlan(c, ids, B, T, training);
  return plan && runTaped(webgpuBackend() as BackendLike, plan, vars, ids, mask, rng);
}

/**
 * The pooled encoding [B, d] of a batch as one differentiable op over `vars` (transformer.ts's
 * order), or null where the recorder does not apply (the caller runs the tfjs path).
 */
export function recordedEncoderTrain(vars: readonly tf.Variable[], c: RecordedConfig, ids: Int32Array, mask: Float32Array, B: number, T: number, training: boolean, rng: Rng): tf.Tensor2D | null {
  const plan = tapedPlan(c, ids, B, T, training);
  return plan && recordedTrainOp(webgpuBackend() as BackendLike, plan, vars, ids, mask, rng);
}

/** A free keep plan for this shape (planFor), or null where the recorder does not apply. */
function tapedPlan(c: RecordedConfig, ids: Int32Array, B: number, T: number, training: boolean): Plan | null {
  if (!recorderApplies(c.vocab_size, ids, B, T)) return null;
  return planFor(webgpuBackend().device as DeviceLike, c, B, T, training && c.dropout > 0, buildBackward);
}

/**
 * The differentiable op over `vars` of a keep plan (its forward, and its `back` as the gradient):
 * runTaped inside a tf.customGrad. Also the hf BERT encoder's (recorded-bert-train.ts).
 */
export function recordedTrainOp(be: BackendLike, plan: Plan, vars: readonly tf.Variable[], ids: Int32Array, mask: Float32Array, rng: Rng): tf.Tensor2D {
  const f = tf.customGrad(((..._args: unknown[]) => {
    const h = runTaped(be, plan, vars, ids, mask, rng); // inside the op: tfjs tracks its output there
    return { value: h.y, gradFunc: (dy: tf.Tensor) => h.backward(dy) };
  }) as CustomGradFn);
  return f(...vars) as tf.Tensor2D;
}

/**
 * A keep plan's forward run now and its backward to call once: this call's dropout keys drawn now
 * (forward and backward apply the same masks), the plan owned by this call until its backward ran
 * (or `release`).
 */
export function runTaped(be: BackendLike, plan: Plan, vars: readonly tf.Variable[], ids: Int32Array, mask: Float32Array, rng: Rng): TapedForward {
  const keys = drawKeys(plan, rng);
  const csr = tokenCsr(ids);
  const token = {};
  plan.owner = token;
  recorderStats.trainCalls++;
  const y = counted(() => submitForward(be, plan, vars, ids, mask, keys));
  return {
    y,
    backward: (dy) => counted(() => submitBackward(be, plan, token, vars, dy, keys, csr)),
    backwardInto: (dy, pack, first) => void counted(() => submitBackward(be, plan, token, vars, dy, keys, csr, { pack, first })),
    release: () => {
      if (plan.owner === token) plan.owner = null;
    },
  };
}

/** Runs f, adding the tfjs kernels it ran to recorderStats.kernelsInside (0 is the point). */
function counted<T>(f: () => T): T {
  const k0 = tfjsKernelCount();
  const r = f();
  recorderStats.kernelsInside += tfjsKernelCount() - k0;
  return r;
}

/** Where a backward's gradients go in a grad-pack.ts pack: its variables from `first` on. */
type PackInto = { pack: Parameters<TapedForward["backwardInto"]>[1]; first: number };

/**
 * Records the backward of the forward `token` ran on `plan` into one command buffer; the gradients
 * in `vars`' order, or, with `into`, copied into that pack (nothing returned).
 */
function submitBackward(be: BackendLike, plan: Plan, token: object, vars: readonly tf.Variable[], dy: tf.Tensor, keys: readonly number[], csr: TokenCsr, into?: PackInto): tf.Tensor[] {
  if (plan.owner !== token || plan.dead || !plan.back) throw new Error("recorded encoder: the forward's activations were reused or freed before its backward ran");
  const back = plan.back;
  const d = vars[0].shape[1] as number;
  back.csr.tok.uniforms[0][1] = csr.dest.length * d;
  back.csr.merge.uniforms[4][1] = csr.heavy.length * d;
  const staged = [
    { dst: back.csr.dest, offset: 0, data: csr.dest },
    { dst: back.csr.jobStart, offset: 0, data: csr.jobStart },
    { dst: back.csr.pos, offset: 0, data: csr.pos },
    { dst: back.csr.heavy, offset: 0, data: csr.heavy },
    { dst: back.csr.heavyStart, offset: 0, data: csr.heavyStart },
  ];
  const enc = stagedCall(be, plan, "backward", vars, staged, back.steps, keys);
  be.commandQueueOwnedIds.add(dy.dataId);
  be.uploadToGPU(dy.dataId);
  enc.copyBufferToBuffer(be.tensorMap.get(dy.dataId).resource as BufferLike, 0, back.dy, 0, dy.size * 4);
  for (const p of back.clear) enc.clearBuffer(p.of, p.offset, p.size);
  plan.owner = null;
  // into a pack: the programs may wait in a joint scope (device-pass.ts records both encoders' backwards together)
  if (into) {
    recordCall(be, enc, { plan, part: "backward", steps: back.steps, vars, after: (e) => copyIntoPack(be, e, back, vars.length, into) });
    return [];
  }
  recordSteps(be, enc, plan, back.steps, vars);
  const grads = vars.map((v, i) => copyOut(be, enc, back.grads[i], v.shape));
  recordedIntoTfjs(be, grads);
  return grads;
}

/**
 * The gradient buffer into the pack: a copy per run of variables in one segment (the buffer's
 * layout and a segment's are both grad-pack.ts packLayout's, so such a run is contiguous in both).
 */
function copyIntoPack(be: BackendLike, enc: EncoderLike, back: BackPlan, n: number, into: PackInto): void {
  const { pack, first } = into;
  const { seg, offsets } = pack.layout;
  if (first + n > seg.length) throw new Error("recorded encoder: the gradient pack has fewer variables than the backward's gradients");
  const used = new Set<tf.Tensor>();
  for (let i = 0; i < n; ) {
    let j = i + 1;
    while (j < n && seg[first + j] === seg[first + i]) j++;
    const flat = pack.flats[seg[first + i]];
    const from = back.grads[i].offset;
    const to = j < n ? back.grads[j].offset : back.gradFloats * 4;
    if (offsets[first + i] * 4 + (to - from) > flat.size * 4) throw new Error("recorded encoder: a gradient pack's segment is too small for the backward's gradients");
    be.uploadToGPU(flat.dataId);
    enc.copyBufferToBuffer(back.gradBuf, from, be.tensorMap.get(flat.dataId).resource as BufferLike, offsets[first + i] * 4, to - from);
    used.add(flat);
    i = j;
  }
  recordedIntoTfjs(be, [...used]);
}
