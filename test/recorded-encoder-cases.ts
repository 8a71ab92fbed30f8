/**
 * The cases of recorded-encoder.test.ts, each run in a fresh Node process (device-case-runner.ts)
 * that prints one JSON line: the transformer's recorded no-grad forward on webgpu
 * (model/webgpu/recorded-encoder.ts) against the tfjs path it replaces, on two encoders with the
 * same weights and the same dropout Rng.
 */
import * as tf from "@tensorflow/tfjs";
import { onBackend, relDiff } from "./device-case-runner.ts";
import { counterSnapshot, resetCounters, withPhase } from "../server/qrag/backend/device.ts";
import { TransformerEncoder } from "../server/qrag/model/transformer.ts";
import type { TokenBatch } from "../server/qrag/model/encoder.ts";
import { CONFIG, batchOf } from "./recorded-batches.ts";
import { recorderStats, withRecorder } from "../server/qrag/model/webgpu/recorded-encoder.ts";
import { pipelineCount, webgpuBackend } from "../server/qrag/model/webgpu/raw-program.ts";
import { Rng } from "../server/qrag/util/rng.ts";

/** forward(batch, training) on `enc` with the recorder on or off, read back. */
async function forward(enc: TransformerEncoder, batch: TokenBatch, training: boolean, recorded: boolean): Promise<Float32Array> {
  return withRecorder(recorded, async () => {
    const y = tf.tidy(() => enc.forward(batch, training));
    const v = (await y.data()) as Float32Array;
    y.dispose();
    return v;
  });
}

/** Recorded vs tfjs forwards over several shapes, eval and train (dropout) mode, and the Rngs after. */
async function equalCase() {
  await onBackend("webgpu");
  const rec = new TransformerEncoder(CONFIG, new Rng(3));
  const ref = new TransformerEncoder(CONFIG, new Rng(3));
  const diffs: Record<string, number> = {};
  const callsBefore = recorderStats.calls;
  for (const [B, T] of [[3, 16], [5, 64], [2, 256], [7, 16]]) {
    for (const training of [false, true]) {
      const batch = batchOf(B, T, B * 1000 + T);
      const a = await forward(rec, batch, training, true);
      const b = await forward(ref, batch, training, false);
      diffs[`${B}x${T} ${training ? "train" : "eval"}`] = relDiff(a, b);
    }
  }
  // train mode vs eval mode on the same batch differ: the dropout masks were applied
  const batch = batchOf(4, 16, 9);
  const trainVsEval = relDiff(await forward(rec, batch, true, true), await forward(rec, batch, false, true));
  await forward(ref, batch, true, false);
  const rngAfter = rec.dropoutRng.nextU32() === ref.dropoutRng.nextU32();
  return { diffs, rngAfter, trainVsEval, recordedCalls: recorderStats.calls - callsBefore };
}

/** A second call of one shape: new buffers, bind groups, pipelines; and what one call counts. */
async function cacheCase() {
  await onBackend("webgpu");
  const enc = new TransformerEncoder(CONFIG, new Rng(5));
  const batch = batchOf(6, 64, 1);
  const snap = () => ({ plans: recorderStats.plans, buffers: recorderStats.buffers, bindGroups: recorderStats.bindGroups, pipelines: pipelineCount(webgpuBackend().device) });
  const created: ReturnType<typeof snap>[] = [];
  const counts: { kernels: number; fused: number; dispatches: number; submits: number }[] = [];
  for (let i = 0; i < 3; i++) {
    const before = snap();
    await forward(enc, batch, true, true); // weights uploaded, everything pending submitted
    resetCounters();
    const y = withPhase("encode", () => tf.tidy(() => enc.forward(batch, true)));
    const c = counterSnapshot().encode!;
    await y.data();
    y.dispose();
    counts.push({ kernels: c.kernels, fused: c.fused, dispatches: c.dispatches, submits: c.submits });
    const after = snap();
    created.push({ plans: after.plans - before.plans, buffers: after.buffers - before.buffers, bindGroups: after.bindGroups - before.bindGroups, pipelines: after.pipelines - before.pipelines });
  }
  return { created, counts, layers: CONFIG.layers };
}

/** After weights are assigned (as training does), the recorded forward uses the new values. */
async function assignCase() {
  await onBackend("webgpu");
  const rec = new TransformerEncoder(CONFIG, new Rng(8));
  const ref = new TransformerEncoder(CONFIG, new Rng(8));
  const batch = batchOf(5, 16, 2);
  const before = await forward(rec, batch, false, true);
  const groups0 = recorderStats.bindGroups;
  // new values for every variable of both encoders (the recorded one's bind groups must follow)
  const rng = new Rng(11);
  for (let i = 0; i < rec.variables.length; i++) {
    const v = rec.variables[i];
    const vals = Float32Array.from({ length: v.size }, () => rng.normal() * 0.3);
    tf.tidy(() => {
      v.assign(tf.tensor(vals, v.shape));
      ref.variables[i].assign(tf.tensor(vals, v.shape));
    });
  }
  const after = await forward(rec, batch, false, true);
  const want = await forward(ref, batch, false, false);
  return { diff: relDiff(after, want), changed: relDiff(after, before), newBindGroups: recorderStats.bindGroups - groups0 };
}

const CASES: Record<string, () => Promise<unknown>> = { equal: equalCase, cache: cacheCase, assign: assignCase };

const name = process.argv[2] ?? "";
const fn = CASES[name];
if (!fn) throw new Error(`unknown case "${name}" (one of ${Object.keys(CASES).join(", ")})`);
process.stdout.write(JSON.stringify(await fn()) + "\n");
process.exit(0);
