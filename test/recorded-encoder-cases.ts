/**
 * The cases of recorded-encoder.test.ts, each run in a fresh Node process (device-case-runner.ts)
 * that prints one JSON line: the transformer's recorded no-grad forward on webgpu
 * (model/webgpu/recorded-encoder.ts) against the tfjs path it replaces, on two encoders with the
 * same weights and the same dropout Rng.
 */
import * as tf from "@tensorflow/tfjs";
import { onBackend, relDiff } from "./device-case-runner.ts";
import { TransformerEncoder } from "../server/qrag/model/transformer.ts";
import type { TokenBatch } from "../server/qrag/model/encoder.ts";
import { CONFIG, batchOf, rowsUnderBudget, lossAndGrads, readForward as forward, recordedCalls } from "./recorded-batches.ts";
import { setGpuStorage } from "../server/qrag/model/webgpu/half-storage.ts";
import { countersOn, kernelNameCounts, resetCounters, setProgramTiming } from "../server/qrag/backend/device.ts";
import { forwardBytes, forwardRows, recordJointly, recorderStats, residualFuses, setPlanBounds, tailApplies, withRecorder, type DeviceLike } from "../server/qrag/model/webgpu/recorded-encoder.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { setTinyTiles } from "../server/qrag/model/webgpu/matmul.ts";
import { setLayerTail, TAIL_MAX_ROWS } from "../server/qrag/model/webgpu/layer-tail.ts";
import { throwIfDeviceError } from "../server/qrag/backend/webgpu-errors.ts";
import { webgpuBackend } from "../server/qrag/model/webgpu/raw-program.ts";

/** Recorded vs tfjs forwards over several shapes, eval and train (dropout) mode, and the Rngs after. */
async function equalCase() {
  await onBackend("webgpu");
  // the separate programs (what forwards past TAIL_MAX_ROWS run; tailCase has the layer tail)
  setLayerTail(false);
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
  // dim 128 on 4×16 rows: the fused program's aligned (vec4) loads, the reference workload's case;
  // rows wider than one tile (dim 192): the product and the residual + LayerNorm run as two programs
  const keys: Record<number, string[]> = {};
  const embeds: Record<number, string[]> = {};
  // dim 320: the embedding and its LayerNorm as a program of their own (past embedFuses)
  for (const dim of [128, 192, 320]) {
    const cfg = { ...CONFIG, dim };
    // dim 192's QKV with the 64×64 tile (the bench's --tiny-tiles 0), dim 128's on 32×32 (few blocks)
    setTinyTiles(dim !== 192);
    const [wRec, wRef] = [new TransformerEncoder(cfg, new Rng(4)), new TransformerEncoder(cfg, new Rng(4))];
    resetCounters();
    countersOn();
    for (const training of [false, true]) {
      const batch = batchOf(4, 16, 77, cfg.vocab_size);
      diffs[`dim ${dim} ${training ? "train" : "eval"}`] = relDiff(await forward(wRec, batch, training, true), await forward(wRef, batch, training, false));
    }
    keys[dim] = kernelNameCounts().map(([k]) => k).filter((k) => /res_?ln/.test(k));
    embeds[dim] = kernelNameCounts().map(([k]) => k).filter((k) => /embed/.test(k));
  }
  setTinyTiles(true);
  const fuses = { [CONFIG.dim]: residualFuses(CONFIG.dim), 128: residualFuses(128), 192: residualFuses(192), 320: residualFuses(320) };
  // train mode vs eval mode on the same batch differ: the dropout masks were applied
  const batch = batchOf(4, 16, 9);
  const trainVsEval = relDiff(await forward(rec, batch, true, true), await forward(rec, batch, false, true));
  await forward(ref, batch, true, false);
  const rngAfter = rec.dropoutRng.nextU32() === ref.dropoutRng.nextU32();
  return { diffs, fuses, keys, embeds, rngAfter, trainVsEval, recordedCalls: recorderStats.calls - callsBefore };
}

/**
 * The layer tail (layer-tail.ts) against the separate programs it replaces: dims 4 (the counts
 * shape's: most of the workgroup's threads sit out), 32 and 128 (the reference's; hidden 4×), eval
 * and train mode with the same Rngs, rows in whole and partial blocks of 16 and the reference
 * rollout's 4 × 256; the tfjs path on one shape (the separate programs are held to it in
 * equalCase: few shapes here, since lavapipe on a fresh machine compiles every pipeline at its
 * first dispatch, up to a minute for the 64×128 tile's);
 * the programs each forward ran; the row bound past which it runs the separate programs.
 */
async function tailCase() {
  await onBackend("webgpu");
  const tfjsDiff = async (cfg: typeof CONFIG, batch: TokenBatch, training: boolean): Promise<number> => {
    const [rec, ref] = [0, 1].map(() => new TransformerEncoder(cfg, new Rng(23)));
    setLayerTail(true);
    return relDiff(await forward(rec, batch, training, true), await forward(ref, batch, training, false));
  };
  const out: { dim: number; shape: string; training: boolean; vsSeparate: number; vsTfjs: number | null; programs: string[] }[] = [];
  const programsOf = async (f: () => Promise<Float32Array>): Promise<[Float32Array, string[]]> => {
    resetCounters();
    countersOn();
    const y = await f();
    return [y, kernelNameCounts().map(([k, n]) => `${k.replace(/^fused /, "")}×${n}`)];
  };
  for (const dim of [4, 32, 128]) {
    const cfg = { ...CONFIG, dim, hidden: 4 * dim };
    const [tail, separate] = [0, 1].map(() => new TransformerEncoder(cfg, new Rng(21)));
    // d 128 on the equal case's 4 × 16 (its separate programs and tfjs kernels compiled once for both) and the rollout's 4 × 256
    for (const [B, T] of dim === 128 ? [[4, 16], [4, 256]] : [[3, 16], [1, 200], [4, 256]]) {
      for (const training of [false, true]) {
        const batch = batchOf(B, T, B * 31 + T, cfg.vocab_size);
        setLayerTail(true);
        const [a, programs] = await programsOf(() => forward(tail, batch, training, true));
        setLayerTail(false);
        const b = await forward(separate, batch, training, true);
        // the tfjs path on one shape: a pair of fresh encoders (the others' dropout Rngs have drawn for the shapes before)
        const vsTfjs = dim === 128 && T === 16 ? await tfjsDiff(cfg, batch, training) : null;
        out.push({ dim, shape: `${B}x${T}`, training, vsSeparate: relDiff(a, b, 0), vsTfjs, programs });
      }
    }
  }
  // past TAIL_MAX_ROWS the separate programs
  setLayerTail(true);
  const wide = new TransformerEncoder(CONFIG, new Rng(22));
  const rows = TAIL_MAX_ROWS / 128 + 1;
  const [, widePrograms] = await programsOf(() => forward(wide, batchOf(rows, 128, 5, CONFIG.vocab_size), false, true));
  throwIfDeviceError();
  return { out, wide: { rows: rows * 128, programs: widePrograms } };
}

/** A second call of one shape: new buffers, bind groups, pipelines; and what one call counts. */
async function cacheCase() {
  await onBackend("webgpu");
  const enc = new TransformerEncoder(CONFIG, new Rng(5));
  const batch = batchOf(6, 64, 1);
  const { created, counts } = await recordedCalls(enc, batch, true, () => forward(enc, batch, true, true));
  return { created, counts, layers: CONFIG.layers, fuses: residualFuses(CONFIG.dim) };
}

/**
 * Row counts of one padded length (a length group's): fewer rows than a cached plan's run on its
 * buffers (a plan with a uniform buffer of its own), in eval and train mode, against the tfjs
 * path; then that roomy plan evicted (a byte bound only it and its plans fit under, and a plan of
 * another length): its plans go with it, and a call of theirs builds anew.
 */
async function roomCase() {
  await onBackend("webgpu");
  const rec = new TransformerEncoder(CONFIG, new Rng(6));
  const ref = new TransformerEncoder(CONFIG, new Rng(6));
  const T = 16;
  const calls: { B: number; training: boolean; buffers: number; plans: number; diff: number }[] = [];
  const call = async (B: number, training: boolean, len = T) => {
    const before = { buffers: recorderStats.buffers, plans: recorderStats.plans };
    const batch = batchOf(B, len, B * 7 + len);
    const diff = relDiff(await forward(rec, batch, training, true), await forward(ref, batch, training, false));
    calls.push({ B, training, buffers: recorderStats.buffers - before.buffers, plans: recorderStats.plans - before.plans, diff });
  };
  for (const [B, training] of [[6, false], [4, false], [5, true], [6, false], [4, false], [3, true]] as const) await call(B, training);
  // a bound the plan of another length fits under alone: admitting it evicts the older plans, the roomy ones with theirs
  const prev = setPlanBounds({ plain: forwardBytes(CONFIG, 6, 64) * 1.1 });
  try {
    await call(6, false, 64);
    await call(4, false);
  } finally {
    setPlanBounds(prev);
  }
  const rngAfter = rec.dropoutRng.nextU32() === ref.dropoutRng.nextU32();
  throwIfDeviceError();
  return { calls, rngAfter };
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

/**
 * Calls left pending in tfjs's command encoder (no read between them): two of one shape (one
 * plan, whose inputs the second call writes), one after a weight assign, and more shapes than the
 * plan cache keeps under a small byte budget (evicted plans with pending calls). Each result against the same call read alone.
 */
async function pendingCase() {
  await onBackend("webgpu");
  const enc = new TransformerEncoder(CONFIG, new Rng(13));
  const run = (b: TokenBatch) => tf.tidy(() => enc.forward(b, false));
  const readAll = async (ys: tf.Tensor[]) => {
    const out: Float32Array[] = [];
    for (const y of ys) out.push((await y.data()) as Float32Array);
    tf.dispose(ys);
    return out;
  };
  const alone = (b: TokenBatch) => forward(enc, b, false, true);
  const a = batchOf(4, 16, 1);
  const b = batchOf(4, 16, 2);
  const shapes = Array.from({ length: 18 }, (_, i) => batchOf(i + 1, 32, 100 + i));
  const wantA = await alone(a);
  const wantB = await alone(b);
  const plans0 = recorderStats.plans;
  // one plan twice, then every variable scaled by 1.5 (tfjs kernels, pending) and the same plan again
  const [gotA, gotB, gotScaled] = await withRecorder(true, async () => {
    const ys = [run(a), run(b)];
    for (const v of enc.variables) tf.tidy(() => v.assign(tf.mul(v, 1.5)));
    ys.push(run(a));
    return readAll(ys);
  });
  const wantScaled = await alone(a);
  for (const v of enc.variables) tf.tidy(() => v.assign(tf.div(v, 1.5)));
  // a no-grad budget of about 3 of the largest shape's plans: the 18 shapes evict one another
  const bounds = setPlanBounds({ plain: 3 * forwardBytes(CONFIG, 18, 32) });
  const wantShapes: Float32Array[] = [];
  for (const x of shapes) wantShapes.push(await alone(x));
  // all 18 calls in one pending command encoder (tfjs would submit after 15)
  const batchSize = tf.env().getNumber("WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE");
  tf.env().set("WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE", 100);
  const gotShapes = await withRecorder(true, () => readAll(shapes.map(run)));
  setPlanBounds(bounds);
  // inputs past the staging ring inside one encoder (4 × 98 KiB of a 256 KiB ring: a submit
  // between), then one larger than the ring (393 KiB: a larger ring)
  const big = [...Array.from({ length: 4 }, (_, i) => batchOf(64, 128, 200 + i)), batchOf(128, 256, 300)];
  const wantBig: Float32Array[] = [];
  for (const x of big) wantBig.push(await alone(x));
  const gotBig = await withRecorder(true, () => readAll(big.map(run)));
  tf.env().set("WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE", batchSize);
  let deviceError: string | null = null;
  try {
    throwIfDeviceError();
  } catch (e) {
    deviceError = (e as Error).message;
  }
  return {
    deviceError,
    sameShape: [relDiff(gotA, wantA), relDiff(gotB, wantB)],
    distinct: relDiff(wantA, wantB),
    afterAssign: relDiff(gotScaled, wantScaled),
    assignChanged: relDiff(wantScaled, wantA),
    evicted: shapes.map((_, i) => relDiff(gotShapes[i], wantShapes[i])),
    staged: big.map((_, i) => relDiff(gotBig[i], wantBig[i])),
    plansMade: recorderStats.plans - plans0,
  };
}

/**
 * embedTextsDevice (the eval encode, packed a slice at a time) against embedDevice(packActions) of
 * the same texts: ~4,800 distinct ones (slices of 4,096 and of the rows a length holds, split where
 * rows run longer), repeats among them; and, as each slice is packed, whether anything recorded
 * before it still waits in tfjs's command encoder instead of running on the GPU.
 */
async function textsCase() {
  await onBackend("webgpu");
  const cfg = { ...CONFIG, dim: 8, hidden: 16, heads: 2, layers: 1, max_len: 128 };
  const enc = new TransformerEncoder(cfg, new Rng(17));
  const rng = new Rng(19);
  const words = ["the", "kitchen", "garden", "north", "of", "mary", "went", "to", "apple", "42"];
  const sentence = (n: number) => Array.from({ length: n }, () => rng.choice(words)).join(" ") + ".";
  // short rows first (a first slice mostly padded to 16), longer ones after (slices split), repeats throughout
  const texts = Array.from({ length: 5600 }, (_, i) => (i % 7 === 3 ? `repeat ${i % 5}` : `${i} ${sentence(i < 4400 ? rng.int(12) : rng.int(100))}`));
  const read = async (y: tf.Tensor) => {
    const v = (await y.data()) as Float32Array;
    y.dispose();
    return v;
  };
  const want = await read(enc.embedDevice(enc.packActions(texts, 64), false));
  const be = webgpuBackend() as unknown as { commandEncoder: object | null };
  const pendingAtPack: boolean[] = [];
  const calls0 = recorderStats.calls;
  const pack = enc.packActions.bind(enc);
  enc.packActions = (t, m) => {
    pendingAtPack.push(be.commandEncoder !== null);
    return pack(t, m);
  };
  const got = await read(enc.embedTextsDevice(texts, 64));
  let maxAbs = 0;
  for (let i = 0; i < want.length; i++) maxAbs = Math.max(maxAbs, Math.abs(got[i] - want[i]));
  return { maxAbs, rows: got.length / cfg.dim, pendingAtPack, forwards: recorderStats.calls - calls0, spread: relDiff(want.subarray(0, cfg.dim), want.subarray(cfg.dim * 5, cfg.dim * 6)) };
}

/**
 * gpu_storage f16 (half-storage.ts): the recorded no-grad forward with f16 activations against the
 * f32 one (same weights, same dropout Rng), eval and train mode; the plans' bytes; the programs'
 * keys; a taped forward (a backward follows) keeps f32.
 */
async function halfCase() {
  await onBackend("webgpu");
  const device = (webgpuBackend() as unknown as { device: { features: { has(f: string): boolean } } }).device;
  const f16 = new TransformerEncoder(CONFIG, new Rng(3));
  const f32 = new TransformerEncoder(CONFIG, new Rng(3));
  const diffs: Record<string, number> = {};
  const bytes: Record<string, number> = {};
  for (const [B, T] of [[3, 16], [5, 64], [7, 33]]) {
    for (const training of [false, true]) {
      const batch = batchOf(B, T, B * 1000 + T);
      setGpuStorage("f32");
      const b0 = recorderStats.bytes;
      const want = await forward(f32, batch, training, true);
      const b1 = recorderStats.bytes;
      setGpuStorage("f16");
      const got = await forward(f16, batch, training, true);
      diffs[`${B}x${T} ${training ? "train" : "eval"}`] = relDiff(got, want);
      bytes[`${B}x${T} ${training ? "train" : "eval"}`] = (recorderStats.bytes - b1) / (b1 - b0);
    }
  }
  // the same call's programs, counted by key
  resetCounters();
  countersOn();
  await forward(f16, batchOf(4, 16, 1), false, true);
  const keys = kernelNameCounts().map(([k]) => k);
  // a taped forward (its activations kept as f16 for the backward) against the f32 one: loss and
  // gradients, train mode; 5×33 odd, 5×64 with its weight gradients (Xᵀ·dY, X f16) split along K
  const taped = async (storage: "f32" | "f16", batch: TokenBatch) => {
    setGpuStorage(storage);
    const b0 = recorderStats.bytes;
    const r = await lossAndGrads(storage === "f16" ? f16 : f32, batch, true, true);
    return { ...r, bytes: recorderStats.bytes - b0 };
  };
  const t32 = await taped("f32", batchOf(5, 33, 4));
  const t16 = await taped("f16", batchOf(5, 33, 4));
  const s32 = await taped("f32", batchOf(5, 64, 5));
  const s16 = await taped("f16", batchOf(5, 64, 5));
  setGpuStorage("f32");
  return {
    shaderF16: device.features.has("shader-f16"), diffs, bytes, keys,
    tapedLossDiff: Math.max(Math.abs(t16.loss - t32.loss) / Math.abs(t32.loss), Math.abs(s16.loss - s32.loss) / Math.abs(s32.loss)),
    tapedGradDiffs: t16.grads.map((g, i) => Math.max(relDiff(g, t32.grads[i]), relDiff(s16.grads[i], s32.grads[i]))),
    tapedBytes: t16.bytes / t32.bytes,
  };
}

/**
 * No-grad plans' bytes against forwardBytes, then embedDevice under a no-grad budget of 40 rows ×
 * 32 tokens: 100 rows of 32 tokens run as forwards of 40, 40 and 20 rows, each recorded (one plan of
 * 100 rows would be over the budget and run through tfjs).
 */
async function forwardRowsCase() {
  await onBackend("webgpu");
  const enc = new TransformerEncoder(CONFIG, new Rng(21));
  const made: Record<string, [number, number]> = {};
  const tails: boolean[] = [];
  for (const [B, T] of [[3, 16], [5, 64], [9, 128]]) {
    const before = recorderStats.bytes;
    await forward(enc, batchOf(B, T, B + T), false, true);
    // these few rows take the layer tail: fewer programs, fewer uniform slots
    const tail = tailApplies(webgpuBackend().device as DeviceLike, CONFIG, B * T);
    tails.push(tail);
    made[`${B}x${T}`] = [recorderStats.bytes - before, forwardBytes(CONFIG, B, T, false, tail)];
  }
  const budget = await rowsUnderBudget(enc, (B, T) => forwardBytes(CONFIG, B, T), (T) => forwardRows(CONFIG, T), CONFIG.vocab_size);
  enc.dispose();
  throwIfDeviceError();
  return { made, tails, ...budget };
}

/**
 * Two encoders' forwards (other weights, other shapes) recorded together (recordJointly) against
 * each alone, and a tfjs op reading a forward's output inside a scope: the waiting forward is
 * recorded before it.
 */
async function jointCase() {
  await onBackend("webgpu");
  setLayerTail(false);
  const [a, b] = [new TransformerEncoder(CONFIG, new Rng(5)), new TransformerEncoder(CONFIG, new Rng(6))];
  const [ba, bb, bc] = [batchOf(3, 64, 11), batchOf(5, 16, 12), batchOf(3, 64, 13)];
  const read = async (t: tf.Tensor): Promise<Float32Array> => {
    const v = (await t.data()) as Float32Array;
    t.dispose();
    return v;
  };
  const alone = [await read(a.forward(ba, false)), await read(b.forward(bb, false))];
  const third = await read(a.forward(bc, false));
  const keys: string[] = [];
  setProgramTiming((k) => keys.push(k));
  const [ya, yb] = recordJointly(() => [a.forward(ba, false), b.forward(bb, false)]);
  const joined = [await read(ya), await read(yb)];
  const jointKeys = keys.splice(0);
  // another batch than the last forward of this shape: a buffer tfjs hands out again holds that one's values
  const plus = await read(recordJointly(() => tf.add(a.forward(bc, false), 1)));
  setProgramTiming(null);
  const differing = joined.reduce((n, v, i) => n + v.filter((x, j) => !Object.is(x, alone[i][j])).length, 0);
  a.dispose();
  b.dispose();
  return { differing, joint: jointKeys.filter((k) => k.startsWith("fz[")).length, dispatches: jointKeys.length, plusDiff: Math.max(...plus.map((x, j) => Math.abs(x - (third[j] + 1)))) };
}

const CASES: Record<string, () => Promise<unknown>> = { joint: jointCase, forwardRows: forwardRowsCase, equal: equalCase, tail: tailCase, cache: cacheCase, room: roomCase, assign: assignCase, pending: pendingCase, texts: textsCase, half: halfCase };

const name = process.argv[2] ?? "";
const fn = CASES[name];
if (!fn) throw new Error(`unknown case "${name}" (one of ${Object.keys(CASES).join(", ")})`);
process.stdout.write(JSON.stringify(await fn()) + "\n");
process.exit(0);
