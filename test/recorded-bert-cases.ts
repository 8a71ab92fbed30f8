/**
 * The cases of recorded-bert.test.ts, each run in a fresh Node process (device-case-runner.ts)
 * that prints one JSON line: the hf BERT encoder's recorded no-grad forward on webgpu
 * (model/webgpu/recorded-bert.ts) against the tfjs path it replaces (bertDense + the masked mean),
 * on two encoders with the same weights and the same dropout Rng.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as tf from "@tensorflow/tfjs";
import { onBackend, relDiff } from "./device-case-runner.ts";
import { HfBertEncoder } from "../server/qrag/model/hf/encoder.ts";
import { writeRandomBert } from "../server/qrag/model/hf/random-bert.ts";
import { CONFIG, batchOf, readForward as forward, recordedCalls, type CallRecord } from "./recorded-batches.ts";
import { TransformerEncoder } from "../server/qrag/model/transformer.ts";
import { recorderStats } from "../server/qrag/model/webgpu/recorded-encoder.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { throwIfDeviceError } from "../server/qrag/backend/webgpu-errors.ts";

const FIXTURE = path.resolve(import.meta.dirname, "fixtures/bert-tiny");
const root = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-recorded-bert-"));
process.once("exit", () => fs.rmSync(root, { recursive: true, force: true }));

interface Model {
  name: string;
  vocab: number;
  /** config.json fields changed after writing. */
  patch?: Record<string, unknown>;
  size?: { hidden: number; layers: number; heads: number; intermediate: number };
}

/**
 * A random BERT (odd widths: d 48, 4 heads of 12, F 80; attention dropout 0.2 ≠ hidden 0.1, so the
 * sites' rates cannot be swapped unseen), or its gelu_new / relu variant, or the bert-tiny fixture.
 */
const RANDOM: Model = { name: "random", vocab: 300, size: { hidden: 48, layers: 2, heads: 4, intermediate: 80 }, patch: { attention_probs_dropout_prob: 0.2 } };
const TANH: Model = { ...RANDOM, name: "tanh", patch: { attention_probs_dropout_prob: 0.2, hidden_act: "gelu_new" } };
const RELU: Model = { ...RANDOM, name: "relu", patch: { hidden_act: "relu" } };
const TINY: Model = { name: "bert-tiny", vocab: 154 };

/** Two encoders of `m` (same weights, same dropout Rng); random models get weights of sd 0.3 (attention far from uniform). */
function encoders(m: Model): [HfBertEncoder, HfBertEncoder] {
  const dir = path.join(root, "models", m.name);
  if (!fs.existsSync(dir)) {
    if (m.size) {
      const words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ...Array.from({ length: m.vocab - 5 }, (_, i) => `w${i}`)];
      writeRandomBert(dir, m.size, { words, positions: 128, seed: 7 });
      const cfg = JSON.parse(fs.readFileSync(path.join(dir, "config.json"), "utf8")) as Record<string, unknown>;
      fs.writeFileSync(path.join(dir, "config.json"), JSON.stringify({ ...cfg, ...m.patch }));
    } else {
      fs.mkdirSync(dir, { recursive: true });
      for (const f of ["config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "tokenizer_config.json"]) fs.copyFileSync(path.join(FIXTURE, f), path.join(dir, f));
    }
  }
  const load = () => HfBertEncoder.load({ type: "hf", path: `models/${m.name}`, dim: 32, vocab_size: 300, hidden: 64, layers: 2, heads: 4, max_len: 128, dropout: 0.1, init_std: 0.02 }, new Rng(3), root);
  const pair: [HfBertEncoder, HfBertEncoder] = [load(), load()];
  if (m.size) {
    const rng = new Rng(11);
    for (let i = 0; i < pair[0].variables.length; i++) {
      const v = pair[0].variables[i];
      const vals = Float32Array.from({ length: v.size }, () => rng.normal() * 0.3);
      tf.tidy(() => pair.forEach((e) => e.variables[i].assign(tf.tensor(vals, v.shape))));
    }
  }
  return pair;
}

/** Recorded vs tfjs forwards over several shapes and models, eval and train (dropout) mode, and the Rngs after. */
async function equalCase() {
  await onBackend("webgpu");
  const diffs: Record<string, number> = {};
  const rngAfter: Record<string, boolean> = {};
  const trainVsEval: Record<string, number> = {};
  const callsBefore = recorderStats.calls;
  const runs: [Model, number[][]][] = [
    [RANDOM, [[3, 16], [5, 64], [2, 128], [7, 9]]],
    [TANH, [[4, 33]]],
    [RELU, [[3, 20]]],
    [TINY, [[6, 40], [1, 5]]],
  ];
  for (const [m, shapes] of runs) {
    const [rec, ref] = encoders(m);
    for (const [B, T] of shapes) {
      for (const training of [false, true]) {
        const batch = batchOf(B, T, B * 1000 + T, m.vocab);
        diffs[`${m.name} ${B}x${T} ${training ? "train" : "eval"}`] = relDiff(await forward(rec, batch, training, true), await forward(ref, batch, training, false));
      }
    }
    // train mode vs eval mode on the same batch differ: the dropout masks were applied
    const batch = batchOf(4, 16, 9, m.vocab);
    trainVsEval[m.name] = relDiff(await forward(rec, batch, true, true), await forward(rec, batch, false, true));
    await forward(ref, batch, true, false);
    rngAfter[m.name] = rec.dropoutRng.nextU32() === ref.dropoutRng.nextU32();
    rec.dispose();
    ref.dispose();
  }
  throwIfDeviceError();
  return { diffs, rngAfter, trainVsEval, recordedCalls: recorderStats.calls - callsBefore };
}

/** A second call of one shape: new buffers, bind groups, pipelines; and what one call counts (eval and train mode). */
async function cacheCase() {
  await onBackend("webgpu");
  const [enc] = encoders(RANDOM);
  const batch = batchOf(6, 24, 1, RANDOM.vocab);
  const out: Record<string, CallRecord> = {};
  for (const training of [false, true]) out[training ? "train" : "eval"] = await recordedCalls(enc, batch, training, () => forward(enc, batch, training, true));
  return { ...out, layers: RANDOM.size!.layers };
}

/** Where the recorder does not apply: under a gradient tape, and an id outside the vocabulary; both still answer (the tfjs path). */
async function fallbackCase() {
  await onBackend("webgpu");
  const [enc, ref] = encoders(RANDOM);
  const batch = batchOf(3, 12, 4, RANDOM.vocab);
  const calls0 = recorderStats.calls;
  const { value, grads } = tf.variableGrads(() => tf.sum(enc.forward(batch, false)) as tf.Scalar, enc.variables);
  const taped = (await value.data())[0];
  const gradNames = Object.keys(grads).length;
  tf.dispose([value, ...Object.values(grads)]);
  const tapedCalls = recorderStats.calls - calls0;
  const want = await forward(ref, batch, false, false);
  const wantSum = want.reduce((a, b) => a + b, 0);
  const outside = { ...batch, ids: batch.ids.slice() };
  outside.ids[0] = RANDOM.vocab + 5; // the word table has no such row: bertDense's gather throws its RangeError
  let outsideError = "";
  const calls1 = recorderStats.calls;
  try {
    await forward(enc, outside, false, true);
  } catch (e) {
    outsideError = (e as Error).message;
  }
  return { tapedCalls, tapedRel: Math.abs(taped - wantSum) / Math.max(1e-6, Math.abs(wantSum)), gradNames, vars: enc.variables.length, outsideCalls: recorderStats.calls - calls1, outsideError };
}

/**
 * After weights are assigned (as training does) the recorded forward binds the new buffers; and a
 * transformer of the same batch shape, interleaved with it, keeps a plan of its own (the keys of
 * the shared plan cache differ): each equals its tfjs path.
 */
async function sharedCase() {
  await onBackend("webgpu");
  const [rec, ref] = encoders(RANDOM);
  const batch = batchOf(5, 16, 2, RANDOM.vocab);
  const before = await forward(rec, batch, false, true);
  const groups0 = recorderStats.bindGroups;
  const rng = new Rng(12);
  for (let i = 0; i < rec.variables.length; i++) {
    const v = rec.variables[i];
    const vals = Float32Array.from({ length: v.size }, () => rng.normal() * 0.3);
    tf.tidy(() => [rec, ref].forEach((e) => e.variables[i].assign(tf.tensor(vals, v.shape))));
  }
  const plans0 = recorderStats.plans;
  const tRec = new TransformerEncoder(CONFIG, new Rng(3));
  const tRef = new TransformerEncoder(CONFIG, new Rng(3));
  const tBatch = batchOf(5, 16, 3);
  const diffs: Record<string, number> = {};
  for (const training of [false, true]) {
    const mode = training ? "train" : "eval";
    const t = await forward(tRec, tBatch, training, true);
    diffs[`bert ${mode}`] = relDiff(await forward(rec, batch, training, true), await forward(ref, batch, training, false));
    diffs[`transformer ${mode}`] = relDiff(t, await forward(tRef, tBatch, training, false));
    diffs[`transformer ${mode} again`] = relDiff(await forward(tRec, tBatch, training, true), await forward(tRef, tBatch, training, false));
  }
  const after = await forward(rec, batch, false, true);
  throwIfDeviceError();
  return { diffs, changed: relDiff(after, before), newBindGroups: recorderStats.bindGroups - groups0, plansMade: recorderStats.plans - plans0 };
}

const CASES: Record<string, () => Promise<unknown>> = { equal: equalCase, cache: cacheCase, fallback: fallbackCase, shared: sharedCase };

const name = process.argv[2] ?? "";
const fn = CASES[name];
if (!fn) throw new Error(`unknown case "${name}" (one of ${Object.keys(CASES).join(", ")})`);
process.stdout.write(JSON.stringify(await fn()) + "\n");
process.exit(0);
