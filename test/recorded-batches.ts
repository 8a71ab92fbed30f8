/** The encoder and batches the recorded-encoder and recorded-update cases compare on, and how the recorded cases count a call. */
import * as tf from "@tensorflow/tfjs";
import { counterSnapshot, resetCounters, withPhaseAsync } from "../server/qrag/backend/device.ts";
import { recorderStats, setPlanBounds, withRecorder } from "../server/qrag/model/webgpu/recorded-encoder.ts";
import { pipelineCount, webgpuBackend } from "../server/qrag/model/webgpu/raw-program.ts";
import type { EncoderConfig, TokenBatch } from "../server/qrag/model/encoder.ts";
import { Rng } from "../server/qrag/util/rng.ts";

export const CONFIG: EncoderConfig = { type: "transformer", dim: 32, vocab_size: 300, hidden: 64, layers: 2, heads: 4, max_len: 256, dropout: 0.1, init_std: 0.3 };

/** B rows of length T, row b holding 1 + (b·37 + 5) mod T real tokens (the rest PAD, id 0); ids from 1 … `vocab`−1. */
export function batchOf(B: number, T: number, seed: number, vocab = CONFIG.vocab_size): TokenBatch {
  const rng = new Rng(seed);
  const ids = new Int32Array(B * T);
  const mask = new Float32Array(B * T);
  for (let b = 0; b < B; b++) {
    const n = 1 + ((b * 37 + 5) % T);
    for (let t = 0; t < n; t++) {
      ids[b * T + t] = 1 + Math.floor(rng.next() * (vocab - 1));
      mask[b * T + t] = 1;
    }
  }
  return { ids, mask, batch: B, len: T };
}

/** forward(batch, training) on `enc` with the recorder on or off, read back. */
export async function readForward(enc: { forward(b: TokenBatch, training: boolean): tf.Tensor }, batch: TokenBatch, training: boolean, recorded: boolean): Promise<Float32Array> {
  return withRecorder(recorded, async () => {
    const y = tf.tidy(() => enc.forward(batch, training));
    const v = (await y.data()) as Float32Array;
    y.dispose();
    return v;
  });
}

/**
 * loss = Σ forward(batch)·R and its gradients for every variable, recorded or through the tfjs
 * ops under tfjs autograd; `twice`: plus Σ forward(batch)·R/2 of a second forward under the same
 * tape (its own masks, a second plan). `scale`: the first forward's Σ |forward·R|, what a
 * difference of losses is measured on: the sum cancels (at 5×64, 0.033 from terms whose sizes add
 * up to 5.5), so the terms' float32 rounding is ~170× larger relative to the loss itself.
 */
export async function lossAndGrads(enc: { dim: number; variables: readonly tf.Variable[]; forward(b: TokenBatch, training: boolean): tf.Tensor }, batch: TokenBatch, training: boolean, recorded: boolean, twice = false): Promise<{ loss: number; scale: number; grads: Float32Array[] }> {
  return withRecorder(recorded, async () => {
    const R = tf.tensor2d(Float32Array.from({ length: batch.batch * enc.dim }, (_, i) => Math.sin(i * 0.7) + 0.3), [batch.batch, enc.dim]);
    let scaleT: tf.Tensor | null = null;
    const { value, grads } = tf.variableGrads(() => {
      const terms = tf.mul(enc.forward(batch, training), R);
      scaleT = tf.keep(tf.sum(tf.abs(terms)));
      const l = tf.sum(terms);
      return (twice ? tf.add(l, tf.mul(tf.sum(tf.mul(enc.forward(batch, training), R)), 0.5)) : l) as tf.Scalar;
    }, enc.variables as tf.Variable[]);
    const loss = (await value.data())[0];
    const scale = (await scaleT!.data())[0];
    const out = await Promise.all(enc.variables.map(async (v) => (await grads[v.name].data()) as Float32Array));
    tf.dispose([R, value, scaleT!, ...Object.values(grads)]);
    return { loss, scale, grads: out };
  });
}

/** What one recorded call made (plans, buffers, bind groups, pipelines) and counted (kernels, dispatches, submits). */
export interface CallRecord {
  created: { plans: number; buffers: number; bindGroups: number; pipelines: number }[];
  counts: { kernels: number; fused: number; dispatches: number; submits: number }[];
}

/**
 * `calls` forwards of one shape, each after `warm` (a recorded forward read back: weights uploaded,
 * everything pending submitted), each counted up to its read (the forward goes out with the read's
 * submit) and what it created.
 */
export async function recordedCalls(enc: { forward(b: TokenBatch, training: boolean): tf.Tensor }, batch: TokenBatch, training: boolean, warm: () => Promise<unknown>, calls = 3): Promise<CallRecord> {
  const snap = () => ({ plans: recorderStats.plans, buffers: recorderStats.buffers, bindGroups: recorderStats.bindGroups, pipelines: pipelineCount(webgpuBackend().device) });
  const out: CallRecord = { created: [], counts: [] };
  for (let i = 0; i < calls; i++) {
    const before = snap();
    await warm();
    resetCounters();
    await withPhaseAsync("encode", async () => {
      const y = tf.tidy(() => enc.forward(batch, training));
      await y.data();
      y.dispose();
    });
    const c = counterSnapshot().encode!;
    out.counts.push({ kernels: c.kernels, fused: c.fused, dispatches: c.dispatches, submits: c.submits });
    const after = snap();
    out.created.push({ plans: after.plans - before.plans, buffers: after.buffers - before.buffers, bindGroups: after.bindGroups - before.bindGroups, pipelines: after.pipelines - before.pipelines });
  }
  return out;
}

/**
 * `calls` taped forward + backward calls of one shape (the gradients of Σ forward(batch)), each
 * after a recorded lossAndGrads (weights uploaded, everything pending submitted): what each
 * created, and what it counted up to its read (forward, loss and backward go out with its submit).
 */
export async function tapedCalls(enc: { dim: number; variables: readonly tf.Variable[]; forward(b: TokenBatch, training: boolean): tf.Tensor }, batch: TokenBatch, calls = 3): Promise<{ created: CallRecord["created"]; counts: { tfjsKernels: number; fused: number; submits: number }[] }> {
  const snap = () => ({ plans: recorderStats.plans, buffers: recorderStats.buffers, bindGroups: recorderStats.bindGroups, pipelines: pipelineCount(webgpuBackend().device) });
  const created: CallRecord["created"] = [];
  const counts: { tfjsKernels: number; fused: number; submits: number }[] = [];
  for (let i = 0; i < calls; i++) {
    const before = snap();
    await lossAndGrads(enc, batch, true, true);
    const after = snap();
    created.push({ plans: after.plans - before.plans, buffers: after.buffers - before.buffers, bindGroups: after.bindGroups - before.bindGroups, pipelines: after.pipelines - before.pipelines });
    resetCounters();
    await withPhaseAsync("update", async () => {
      const g = tf.variableGrads(() => tf.sum(enc.forward(batch, true)) as tf.Scalar, enc.variables as tf.Variable[]);
      await g.value.data();
      tf.dispose([g.value, ...Object.values(g.grads)]);
    });
    const c = counterSnapshot().update!;
    counts.push({ tfjsKernels: c.kernels - c.fused, fused: c.fused, submits: c.submits });
  }
  return { created, counts };
}

/**
 * The budget half of both encoders' forwardRows cases: the rows of 32 tokens one no-grad plan holds
 * under a budget of 40 such rows' bytes (`bytes`, the encoder's estimate), by `rows` (the
 * encoder's forwardRows), and embedUnderBudget under that budget.
 */
export async function rowsUnderBudget(enc: Parameters<typeof embedUnderBudget>[0], bytes: (B: number, T: number) => number, rows: (T: number) => number, vocab: number): Promise<{ rows: number } & Awaited<ReturnType<typeof embedUnderBudget>>> {
  const bound = bytes(40, 32) + 1;
  const bounds = setPlanBounds({ plain: bound });
  const held = rows(32);
  setPlanBounds(bounds);
  return { rows: held, ...(await embedUnderBudget(enc, bound, vocab)) };
}

/**
 * embedDevice of 100 distinct rows of 32 tokens under a no-grad plan budget of `bound` bytes: the
 * rows of each forward it ran, how many were recorded (the rest ran through tfjs), and its values.
 */
export async function embedUnderBudget(
  enc: { forward(b: TokenBatch, training: boolean): tf.Tensor2D; embedDevice(b: TokenBatch, training?: boolean): tf.Tensor2D },
  bound: number,
  vocab: number,
): Promise<{ calls: number[]; recorded: number; finite: boolean; values: number }> {
  const T = 32;
  const batch = { ids: Int32Array.from({ length: 100 * T }, (_, i) => 1 + ((i * 13 + Math.floor(i / T) * 7) % (vocab - 1))), mask: new Float32Array(100 * T).fill(1), batch: 100, len: T };
  const bounds = setPlanBounds({ plain: bound });
  const calls: number[] = [];
  const forward = enc.forward.bind(enc);
  enc.forward = (b: TokenBatch, training: boolean) => {
    calls.push(b.batch);
    return forward(b, training);
  };
  try {
    const recorded0 = recorderStats.calls;
    const y = enc.embedDevice(batch, false);
    const out = (await y.data()) as Float32Array;
    y.dispose();
    return { calls, recorded: recorderStats.calls - recorded0, finite: out.every(Number.isFinite), values: out.length };
  } finally {
    enc.forward = forward;
    setPlanBounds(bounds);
  }
}
