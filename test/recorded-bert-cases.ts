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
import { bertSpecs, type BertConfig } from "../server/qrag/model/hf/bert.ts";
import { writeRandomBert } from "../server/qrag/model/hf/random-bert.ts";
import { CONFIG, batchOf, rowsUnderBudget, lossAndGrads, readForward as forward, recordedCalls, tapedCalls, type CallRecord } from "./recorded-batches.ts";
import { TransformerEncoder } from "../server/qrag/model/transformer.ts";
import { recorderStats, setPlanBounds, withRecorder } from "../server/qrag/model/webgpu/recorded-encoder.ts";
import { bertTrainBytes } from "../server/qrag/model/webgpu/recorded-bert-train.ts";
import { bertForwardBytes, bertForwardRows } from "../server/qrag/model/webgpu/recorded-bert.ts";
import type { TokenBatch } from "../server/qrag/model/encoder.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { QNetworks } from "../server/qrag/agent/networks.ts";
import { Learner } from "../server/qrag/agent/learner.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { throwIfDeviceError } from "../server/qrag/backend/webgpu-errors.ts";
import { setGpuStorage } from "../server/qrag/model/webgpu/half-storage.ts";
import { countersOn, kernelNameCounts, resetCounters, tfjsKernelCount } from "../server/qrag/backend/device.ts";
import { setTinyTiles } from "../server/qrag/model/webgpu/matmul.ts";

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
/** Rows wider than one tile (d 192): each sub-layer's output product and its residual + LayerNorm are two programs (residualFuses). */
const WIDE: Model = { ...RANDOM, name: "wide", size: { hidden: 192, layers: 1, heads: 4, intermediate: 80 } };
/** The random model's layout (bertSpecs: which variable is which). */
const RANDOM_CONFIG = { ...RANDOM.size!, vocab: RANDOM.vocab, maxPositions: 128, typeVocab: 2, eps: 1e-12, hiddenDropout: 0.1, attnDropout: 0.2, act: "gelu", initStd: 0.02 } satisfies BertConfig;

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
    [WIDE, [[4, 16]]],
  ];
  resetCounters();
  countersOn();
  for (const [m, shapes] of runs) {
    // d 192 with the 64×64 tile (the bench's --tiny-tiles 0), the others' few blocks on 32×32 tiles
    setTinyTiles(m !== WIDE);
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
  setTinyTiles(true);
  throwIfDeviceError();
  // the fused programs taken: Q, K and V in one (aligned loads for d 192 on 4×16 rows), the residual + LayerNorm epilogue (d ≤ 128), with the pooling (T 16, 64)
  const fusedKeys = kernelNameCounts().map(([k]) => k).filter((k) => /-x3|-resln/.test(k)).sort();
  return { diffs, rngAfter, trainVsEval, fusedKeys, recordedCalls: recorderStats.calls - callsBefore };
}

/**
 * embedDevice over rows of mixed lengths (length-groups.ts): 60 short rows (5–14 tokens) and 60
 * long ones (100–128) of a [120, 128] batch, 10 of the short ones repeated. Eval mode against one
 * forward of the whole padded batch; the forwards it ran (rows × padded length); train mode's
 * groups too; a batch of one padded length runs as one forward, in its own order.
 */
/** Fewer rows of one padded length (a length group's): on a cached plan's buffers, against the tfjs path. */
async function roomCase() {
  await onBackend("webgpu");
  const [rec, ref] = encoders(RANDOM);
  const calls: { B: number; buffers: number; plans: number; diff: number }[] = [];
  for (const B of [6, 4, 5, 4]) {
    const before = { buffers: recorderStats.buffers, plans: recorderStats.plans };
    const batch = batchOf(B, 16, B * 13, RANDOM.vocab);
    const diff = relDiff(await forward(rec, batch, false, true), await forward(ref, batch, false, false));
    calls.push({ B, buffers: recorderStats.buffers - before.buffers, plans: recorderStats.plans - before.plans, diff });
  }
  throwIfDeviceError();
  return calls;
}

async function lengthGroupsCase() {
  await onBackend("webgpu");
  const [enc] = encoders(RANDOM);
  const rng = new Rng(17);
  const B = 120, T = 128;
  const ids = new Int32Array(B * T);
  const mask = new Float32Array(B * T);
  for (let b = 0; b < B; b++) {
    // rows alternate short and long, so the groups are not the batch's own halves
    const n = b % 2 ? 100 + rng.int(29) : 5 + rng.int(10);
    for (let t = 0; t < n; t++) {
      ids[b * T + t] = 1 + rng.int(RANDOM.vocab - 1);
      mask[b * T + t] = 1;
    }
  }
  for (let b = 40; b < 60; b += 2) {
    // ten repeats of row 0 (a short row, as every even one)
    ids.copyWithin(b * T, 0, T);
    mask.copyWithin(b * T, 0, T);
  }
  const batch = { ids, mask, batch: B, len: T };
  const calls: [number, number][] = [];
  const forward = enc.forward.bind(enc);
  enc.forward = (b: TokenBatch, training: boolean) => {
    calls.push([b.batch, b.len]);
    return forward(b, training);
  };
  const read = async (y: tf.Tensor) => {
    const v = (await y.data()) as Float32Array;
    y.dispose();
    return v;
  };
  const whole = await read(tf.tidy(() => forward(batch, false)));
  countersOn();
  const k0 = tfjsKernelCount();
  const groupedT = enc.embedDevice(batch, false);
  // the groups' forwards, their join and the gather back into order: our programs and copies only
  const groupKernels = tfjsKernelCount() - k0;
  const grouped = await read(groupedT);
  const evalCalls = calls.splice(0);
  const trained = await read(enc.embedDevice(batch, true));
  const trainCalls = calls.splice(0);
  const fewer = { ...batch, batch: 30, ids: ids.subarray(60 * T, 90 * T), mask: mask.subarray(60 * T, 90 * T) }; // 15 short, 15 long
  const longOnly = { ids: Int32Array.from({ length: 30 * T }, (_, i) => 1 + ((i * 7) % (RANDOM.vocab - 1))), mask: new Float32Array(30 * T).fill(1), batch: 30, len: T };
  await read(enc.embedDevice(longOnly, false));
  const uniformCalls = calls.splice(0);
  await read(enc.embedDevice(fewer, false));
  const fewerCalls = calls.splice(0);
  const rows = grouped.length / enc.dim;
  enc.dispose();
  throwIfDeviceError();
  return { diff: relDiff(grouped, whole), rows, groupKernels, evalCalls, trainCalls, finite: trained.every(Number.isFinite), uniformCalls, fewerCalls };
}

/**
 * No-grad plans' bytes against bertForwardBytes (erf GELU, its epilogue; ReLU, a program of its
 * own), then embedDevice under a no-grad budget of 40 rows × 32 tokens: 100 rows of 32 tokens run
 * as forwards of 40, 40 and 20 rows, each recorded (one plan of 100 rows would be over the budget
 * and run through tfjs).
 */
async function forwardRowsCase() {
  await onBackend("webgpu");
  const made: Record<string, [number, number]> = {};
  for (const m of [RANDOM, RELU]) {
    const [enc] = encoders(m);
    for (const [B, T] of [[3, 16], [5, 64], [9, 128]]) {
      const before = recorderStats.bytes;
      await forward(enc, batchOf(B, T, B + T, m.vocab), false, true);
      made[`${m.name} ${B}x${T}`] = [recorderStats.bytes - before, bertForwardBytes(enc.model.bert, B, T)];
    }
    enc.dispose();
  }
  const [enc] = encoders(RANDOM);
  const bert = enc.model.bert;
  const budget = await rowsUnderBudget(enc, (B, T) => bertForwardBytes(bert, B, T), (T) => bertForwardRows(bert, T), RANDOM.vocab);
  enc.dispose();
  throwIfDeviceError();
  return { made, ...budget };
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

/**
 * Under a gradient tape the no-grad forward stays off (the taped one, recorded-bert-train.ts, runs
 * instead: same value); an id outside the vocabulary takes neither, taped or not (bertDense throws).
 */
async function fallbackCase() {
  await onBackend("webgpu");
  const [enc, ref] = encoders(RANDOM);
  const batch = batchOf(3, 12, 4, RANDOM.vocab);
  const calls0 = recorderStats.calls, train0 = recorderStats.trainCalls;
  const { value, grads } = tf.variableGrads(() => tf.sum(enc.forward(batch, false)) as tf.Scalar, enc.variables);
  const taped = (await value.data())[0];
  const gradNames = Object.keys(grads).length;
  tf.dispose([value, ...Object.values(grads)]);
  const tapedCalls = recorderStats.calls - calls0, tapedTrainCalls = recorderStats.trainCalls - train0;
  const want = await forward(ref, batch, false, false);
  const wantSum = want.reduce((a, b) => a + b, 0);
  const outside = { ...batch, ids: batch.ids.slice() };
  outside.ids[0] = RANDOM.vocab + 5; // the word table has no such row: bertDense's gather throws its RangeError
  const errors: string[] = [];
  const calls1 = recorderStats.calls, train1 = recorderStats.trainCalls;
  try {
    await forward(enc, outside, false, true);
  } catch (e) {
    errors.push((e as Error).message);
  }
  try {
    tf.variableGrads(() => tf.sum(enc.forward(outside, false)) as tf.Scalar, enc.variables);
  } catch (e) {
    errors.push((e as Error).message);
  }
  return { tapedCalls, tapedTrainCalls, tapedRel: Math.abs(taped - wantSum) / Math.max(1e-6, Math.abs(wantSum)), gradNames, vars: enc.variables.length, outsideCalls: recorderStats.calls - calls1 + recorderStats.trainCalls - train1, errors };
}


/**
 * Recorded vs tfjs loss and every variable's gradient, eval and train mode: the random BERT (3×16,
 * 5×40, 2×100 (two blocks of queries and of key tiles), repeated ids 1–4 and 1–2 (each used more
 * than TOK_SEG times: its token row summed in parts), two taped forwards of
 * one shape in one tape), its gelu_new and relu
 * variants, bert-tiny; and the Rngs after.
 */
async function gradsCase() {
  await onBackend("webgpu");
  const worst: Record<string, { loss: number; grad: number; at: string }> = {};
  const rngAfter: Record<string, boolean> = {};
  const variables: Record<string, number> = {};
  const gradNorm: Record<string, number> = {};
  const calls0 = recorderStats.trainCalls;
  const runs: [Model, [string, TokenBatch][]][] = [
    [RANDOM, [["3x16", batchOf(3, 16, 1, RANDOM.vocab)], ["5x40", batchOf(5, 40, 2, RANDOM.vocab)], ["2x100", batchOf(2, 100, 3, RANDOM.vocab)], ["4x16 ids 1-4", batchOf(4, 16, 4, 5)], ["4x64 ids 1-2", batchOf(4, 64, 6, 3)], ["3x16 twice", batchOf(3, 16, 1, RANDOM.vocab)]]],
    [TANH, [["4x20", batchOf(4, 20, 5, TANH.vocab)]]],
    [RELU, [["3x20", batchOf(3, 20, 6, RELU.vocab)]]],
    [TINY, [["6x24", batchOf(6, 24, 7, TINY.vocab)]]],
  ];
  for (const [m, batches] of runs) {
    const [rec, ref] = encoders(m);
    const names = rec.variables.map((v) => v.name);
    let norm = 0;
    for (const [name, batch] of batches) {
      for (const training of [false, true]) {
        const twice = name.endsWith("twice");
        const a = await lossAndGrads(rec, batch, training, true, twice);
        const b = await lossAndGrads(ref, batch, training, false, twice);
        const w = { loss: Math.abs(a.loss - b.loss) / b.scale, grad: 0, at: "" };
        b.grads.forEach((g, i) => {
          // Q's and K's gradients pass through the softmax's p·(dp − D), which cancels where the
          // attention is near one-hot (layer 1 of the tanh model: 1e-4 against 0.1 elsewhere) and
          // gives the key bias's exact 0 (a score added to every key of a query): measured on
          // the scale of the same layer's V gradient (the same probabilities, no cancellation)
          const qk = /\.(q|k)\.(w|b)$/.exec(rec.variables[i].name);
          const floor = qk ? maxAbs(b.grads[names.indexOf(rec.variables[i].name.replace(/\.(q|k)\./, ".v."))]) : 1e-6;
          const d = relDiff(a.grads[i], g, floor);
          if (!(d <= w.grad)) Object.assign(w, { grad: d, at: rec.variables[i].name });
          for (const x of g) norm += x * x;
        });
        worst[`${m.name} ${name} ${training ? "train" : "eval"}`] = w;
      }
    }
    rngAfter[m.name] = rec.dropoutRng.nextU32() === ref.dropoutRng.nextU32();
    variables[m.name] = rec.variables.length;
    gradNorm[m.name] = Math.sqrt(norm);
    rec.dispose();
    ref.dispose();
  }
  throwIfDeviceError();
  return { worst, rngAfter, variables, gradNorm, trainCalls: recorderStats.trainCalls - calls0 };
}

const maxAbs = (a: Float32Array): number => a.reduce((m, x) => Math.max(m, Math.abs(x)), 0);

/** Repeated update-shaped calls (train mode): what each creates, and what one forward + backward counts. */
async function trainCacheCase() {
  await onBackend("webgpu");
  const [enc] = encoders(RANDOM);
  const batch = batchOf(6, 24, 1, RANDOM.vocab);
  const inside0 = recorderStats.kernelsInside, bytes0 = recorderStats.bytes;
  const { created, counts } = await tapedCalls(enc, batch);
  throwIfDeviceError();
  const bert = enc.model.bert;
  return { created, counts, kernelsInside: recorderStats.kernelsInside - inside0, layers: bert.layers, bytes: recorderStats.bytes - bytes0, estimate: bertTrainBytes(bert, batch.batch, batch.len) };
}

/**
 * The plan cache's two byte budgets, small here in place of GiBs: a keep plan over the no-grad
 * plans' bound is made and evicts no no-grad plan; one over the keep bound is not made (the caller
 * falls back); a keep plan whose activations wait for their backward is not evicted when the next
 * one comes in over the bound, and is once its backward ran.
 */
async function boundsCase() {
  await onBackend("webgpu");
  const [enc] = encoders(RANDOM);
  const bert = enc.model.bert;
  const small = batchOf(2, 8, 1, RANDOM.vocab), big = batchOf(6, 24, 2, RANDOM.vocab), other = batchOf(3, 16, 3, RANDOM.vocab);
  const plansMade = async (f: () => Promise<unknown> | unknown) => {
    const p0 = recorderStats.plans;
    await f();
    return recorderStats.plans - p0;
  };
  const evalForward = () => forward(enc, small, false, true);
  const bytes0 = recorderStats.bytes;
  const firstEval = await plansMade(evalForward);
  const evalBytes = recorderStats.bytes - bytes0;
  // room for that one no-grad plan; the keep plans get the room of the largest one alone (its
  // estimate is within 1% of its buffers)
  const keepBig = bertTrainBytes(bert, big.batch, big.len);
  setPlanBounds({ plain: evalBytes, keep: 1.02 * keepBig });
  const t1 = enc.tapedForward(big, true);
  const t2 = enc.tapedForward(other, true);
  const recorded = [t1 !== null, t2 !== null];
  const evalAgain = await plansMade(evalForward);
  // t1's plan is over the bound with t2's in, but waits for its backward
  const gradNorms: number[] = [];
  for (const t of [t1, t2]) {
    if (!t) continue;
    const g = t.backward(tf.onesLike(t.y));
    const sq = tf.addN(g.map((x) => tf.sum(tf.square(x))));
    gradNorms.push(Math.sqrt((await sq.data())[0]));
    tf.dispose([...g, t.y, sq]);
  }
  // t1's plan, now free, is evicted by the next keep plan: the big shape makes a plan again
  const t3 = enc.tapedForward(small, true);
  t3?.release();
  t3?.y.dispose();
  const bigAgain = await plansMade(() => {
    const t = enc.tapedForward(big, true);
    t?.release();
    t?.y.dispose();
  });
  setPlanBounds({ keep: bertTrainBytes(bert, 5, 24) - 1 });
  const overKeep = enc.tapedForward(batchOf(5, 24, 4, RANDOM.vocab), true);
  throwIfDeviceError();
  return { firstEval, evalBytes, keepBig, recorded, evalAgain, gradNorms, bigAgain, overKeep: overKeep !== null };
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

/**
 * The Learner (AdamW, clipping, Polyak targets) over 2 optimizer steps of 2 micro-steps, in passes
 * of 3 transitions, with hf BERT state and action encoders (the random model, dropout on), the
 * recorder on against off: every weight after, and how many taped forwards were recorded.
 */
/** The learner cases' config: hf BERT state and action encoders of the random model, dropout on. */
function learnerConfig() {
  encoders(RANDOM); // writes the model folder
  return resolveConfig({ preset: "tiny", overrides: ["algo.encoder.type=hf", `algo.encoder.path=models/${RANDOM.name}`, "algo.encoder.max_length=32", "algo.hyperparams.max_grad_norm=0.5"] });
}

/** 4 micro-steps of B transitions (2 optimizer steps) in passes of `passSize` (0: whole batches); the weights after, and the taped forwards recorded. */
async function learnerRun(config: ReturnType<typeof learnerConfig>, recorded: boolean, passSize: number, B = 5) {
  const train0 = recorderStats.trainCalls;
  countersOn();
  // tfjs kernels inside the micro-steps (the passes' and micro-steps' gradient sums among them)
  let stepKernels = 0;
  const out = await withRecorder(recorded, async () => {
    const nets = new QNetworks(config.algo.encoder, new Rng(1), { dataRoot: root });
    const learner = new Learner(nets, config.algo, 10, 2, passSize);
    const rng = new Rng(2);
    const words = (n: number) => Array.from({ length: n }, () => `w${rng.int(RANDOM.vocab - 5)}`).join(" ");
    for (let k = 0; k < 4; k++) {
      const batch = {
        states: Array.from({ length: B }, (_, i) => [words(3 + i), ...(i % 2 ? [words(4)] : [])]),
        actionTexts: Array.from({ length: B }, () => words(5)),
        positions: Int32Array.from({ length: B }, () => rng.int(20)),
        targets: Float32Array.from({ length: B }, () => rng.normal()),
      };
      const k0 = tfjsKernelCount();
      await learner.microStep(batch, { maxActionLength: 16, maxInMemory: 16 });
      stepKernels += tfjsKernelCount() - k0;
    }
    const w = await nets.exportWeightsAsync();
    const updates = learner.updates;
    const stateLen = nets.state.packStates([[words(3 + B - 1), words(4)]], 16).len;
    learner.dispose();
    nets.dispose();
    return { w, updates, stateLen };
  });
  return { ...out, trainCalls: recorderStats.trainCalls - train0, stepKernels };
}

async function learnerCase() {
  await onBackend("webgpu");
  const config = learnerConfig();
  const rec = await learnerRun(config, true, 3);
  const trainCalls = rec.trainCalls;
  const ref = await learnerRun(config, false, 3);
  // the key biases apart: their gradient is rounding noise around 0 on both paths (recorded-bert-
  // backward.ts), which AdamW's g/√v turns into steps of about the learning rate either way
  const keyBias = new Set(bertSpecs(RANDOM_CONFIG).flatMap((p, i) => (p.name.endsWith(".k.b") ? [i] : [])));
  const diffs: Record<string, number> = {};
  const keyBiasDiffs: Record<string, number> = {};
  for (const k of ["state", "action", "stateTarget", "actionTarget"] as const) {
    const d = ref.w[k].map((t, i) => relDiff(rec.w[k][i].data, t.data));
    diffs[k] = Math.max(...d.filter((_, i) => !keyBias.has(i)));
    keyBiasDiffs[k] = Math.max(...d.filter((_, i) => keyBias.has(i)));
  }
  const moved = Math.max(...ref.w.state.map((t, i) => relDiff(t.data, ref.w.stateTarget[i].data)));
  throwIfDeviceError();
  return { diffs, keyBiasDiffs, moved, trainCalls, updates: [rec.updates, ref.updates], stepKernels: rec.stepKernels };
}

/**
 * Whole batches of 6 (pass size 0) with a keep budget that holds 3 rows of the states: the learner
 * runs them in recorded passes of 3 (QEncoder.tapedRows), the same update as passes of 3 asked for.
 */
async function autoPassesCase() {
  await onBackend("webgpu");
  const config = learnerConfig();
  const asked = await learnerRun(config, true, 3, 6);
  setPlanBounds({ keep: bertTrainBytes(RANDOM_CONFIG, 3.5, asked.stateLen) });
  const auto = await learnerRun(config, true, 0, 6);
  const names = Object.keys(asked.w) as (keyof typeof asked.w)[];
  const diffs = Object.fromEntries(names.map((k) => [k, Math.max(...asked.w[k].map((t, i) => relDiff(auto.w[k][i].data, t.data)))]));
  throwIfDeviceError();
  return { diffs, trainCalls: [asked.trainCalls, auto.trainCalls], updates: [asked.updates, auto.updates], stateLen: asked.stateLen };
}

/** gpu_storage f16 (half-storage.ts): the recorded forward with f16 activations against the f32 one, per model (erf, tanh, relu; bert-tiny): no-grad in eval and train mode, and taped (loss, gradients). */
async function halfCase() {
  await onBackend("webgpu");
  const diffs: Record<string, number> = {};
  const taped: Record<string, { loss: number; grads: number }> = {};
  const runs: [Model, number[]][] = [[RANDOM, [5, 33]], [TANH, [4, 16]], [RELU, [3, 20]], [TINY, [6, 40]]];
  for (const [m, [B, T]] of runs) {
    const [f16, f32] = encoders(m);
    for (const training of [false, true]) {
      const batch = batchOf(B, T, B * 1000 + T, m.vocab);
      setGpuStorage("f32");
      const want = await forward(f32, batch, training, true);
      setGpuStorage("f16");
      diffs[`${m.name} ${B}x${T} ${training ? "train" : "eval"}`] = relDiff(await forward(f16, batch, training, true), want);
    }
    // a taped forward (activations kept as f16 for the backward) against the f32 one, train mode
    const batch = batchOf(B, T, 77, m.vocab);
    setGpuStorage("f32");
    const t32 = await lossAndGrads(f32, batch, true, true);
    setGpuStorage("f16");
    const t16 = await lossAndGrads(f16, batch, true, true);
    // K's bias has a zero gradient in exact arithmetic (it shifts every key's score alike): rounding noise only, left out
    const names = f16.variableNames;
    const diffs16 = t16.grads.map((g, i) => (names[i].endsWith(".k.b") ? 0 : relDiff(g, t32.grads[i])));
    taped[m.name] = { loss: Math.abs(t16.loss - t32.loss) / Math.abs(t32.loss), grads: Math.max(...diffs16) };
    f16.dispose();
    f32.dispose();
  }
  // an f16 keep plan's bytes against the estimate that bounds the update's passes
  const [enc] = encoders(RANDOM);
  setGpuStorage("f16");
  const bytes0 = recorderStats.bytes;
  await tapedCalls(enc, batchOf(6, 24, 1, RANDOM.vocab));
  const keepBytes = { made: recorderStats.bytes - bytes0, estimate: bertTrainBytes(enc.model.bert, 6, 24, true), f32: bertTrainBytes(enc.model.bert, 6, 24) };
  setGpuStorage("f32");
  throwIfDeviceError();
  return { diffs, taped, keepBytes };
}

const CASES: Record<string, () => Promise<unknown>> = { forwardRows: forwardRowsCase, room: roomCase, lengthGroups: lengthGroupsCase, half: halfCase, equal: equalCase, cache: cacheCase, fallback: fallbackCase, shared: sharedCase, grads: gradsCase, trainCache: trainCacheCase, learner: learnerCase, bounds: boundsCase, autoPasses: autoPassesCase };

const name = process.argv[2] ?? "";
const fn = CASES[name];
if (!fn) throw new Error(`unknown case "${name}" (one of ${Object.keys(CASES).join(", ")})`);
process.stdout.write(JSON.stringify(await fn()) + "\n");
process.exit(0);
