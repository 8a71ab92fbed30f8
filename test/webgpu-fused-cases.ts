/**
 * The cases of webgpu-fused.test.ts, each run in a fresh Node process (`node
 * --max-semi-space-size=128 --import tsx test/webgpu-fused-cases.ts <case>`, for the reason given
 * in engine-device-cases.ts) that prints one JSON line of measurements: the fused WebGPU kernels
 * of server/qrag/model/webgpu/ against the tfjs reference ops on the cpu backend, same inputs.
 */
import * as tf from "@tensorflow/tfjs";
import { onBackend, relDiff as relDiffFloor } from "./device-case-runner.ts";
import { counterSnapshot, countersOn, kernelNameCounts, resetCounters, setProgramTiming, withPhase } from "../server/qrag/backend/device.ts";
import { setJoining } from "../server/qrag/model/webgpu/recorded-encoder.ts";
import { AdamW, clipFactorDevice } from "../server/qrag/agent/adamw.ts";
import { polyakFused } from "../server/qrag/model/webgpu/fused-adamw.ts";
import { packLayout, packSegmentFloats, setPackSegmentFloats } from "../server/qrag/model/webgpu/grad-pack.ts";
import { ACT_GRAD_WGSL, geluDevice, layerNormDevice } from "../server/qrag/model/webgpu/gelu-layernorm.ts";
import { gelu, layerNorm, linear, residualDropout, residualLayerNorm } from "../server/qrag/model/ops.ts";
import { attentionFused, attentionFusedPacked } from "../server/qrag/model/webgpu/attention.ts";
import { attentionDense } from "../server/qrag/model/device-ops.ts";
import { twinLoss } from "../server/qrag/model/qfunction.ts";
import { rotaryFused, rotaryTables } from "../server/qrag/model/webgpu/rotary.ts";
import { gatherRows, joinFlat, joinRows } from "../server/qrag/model/webgpu/join-rows.ts";
import { accumulateFused } from "../server/qrag/model/webgpu/accumulate.ts";
import { gpuTimingOff, gpuTimingOn, settleGpuTimes } from "../server/qrag/backend/gpu-timing.ts";
import { rotateTf } from "../server/qrag/model/rotary.ts";
import { twinLossDevice, twinLossGrads } from "../server/qrag/model/webgpu/twin-loss.ts";
import { paddedLayout, policyTopKFused, scorePaddedFused, softValueFused } from "../server/qrag/model/webgpu/twin-q.ts";
import { availTensor, greedyPick, policyTopK, policyTopKJoined, scorePadded, scorePolicyTopKJoined, scoreRows, scoreSoftValue, softValueDevice } from "../server/qrag/agent/device-scoring.ts";
import type { PickSpec } from "../server/qrag/model/webgpu/greedy-pick.ts";
import { runRawProgram, storageBufferLimit, storageDecls, uniformStruct, webgpuBackend, WG } from "../server/qrag/model/webgpu/raw-program.ts";
import { DEFAULT_TILE, MATMUL_TILES, isAligned, matmulShader, matmulTiled, type MatmulTrans } from "../server/qrag/model/webgpu/matmul.ts";
import { dropoutMaskDevice } from "../server/qrag/model/webgpu/dropout.ts";
import { dropoutMask } from "../server/qrag/model/ops.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { QNetworks } from "../server/qrag/agent/networks.ts";
import { Learner } from "../server/qrag/agent/learner.ts";

/** max |a − b| / max |b| (no floor: these references are never all zero). */
const relDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => relDiffFloor(a, b, 1e-30);

function normals(rng: Rng, n: number, std = 1): Float32Array {
  return Float32Array.from({ length: n }, () => rng.normal() * std);
}

const SHAPES = [[7, 5], [33], [1], [3, 4, 2], [130, 70]];
const STEPS = 6;
/** Steps at which variable 1 has no gradient (torch: .grad None, its step count stays). */
const SKIP_1 = new Set([2, 3]);

/** STEPS AdamW steps of SHAPES on random gradients, the clipping scale from step 2 on; `segment`: packs of at most that many floats (grad-pack.ts). */
async function adamwRun(backend: "cpu" | "webgpu", segment: number | null = null) {
  await onBackend(backend);
  setPackSegmentFloats(segment);
  const rng = new Rng(7);
  const vars = SHAPES.map((s, i) => tf.variable(tf.tensor(normals(rng, s.reduce((a, b) => a * b, 1)), s), true, `v${i}`));
  const opt = new AdamW(vars, { beta1: 0.9, beta2: 0.98, eps: 1e-6, weightDecay: 0.01 });
  let dispatchesPerStep = 0;
  const liveTensors: number[] = [];
  for (let t = 0; t < STEPS; t++) {
    liveTensors.push(tf.memory().numTensors);
    const grads = SHAPES.map((s, i) => (i === 1 && SKIP_1.has(t) ? null : tf.tensor(normals(rng, s.reduce((a, b) => a * b, 1), 0.1 * (t + 1)), s)));
    const scale = t >= 2 ? tf.scalar(0.7) : undefined;
    resetCounters();
    withPhase("update", () => opt.step(grads, 1e-2 * (1 + t), scale));
    dispatchesPerStep = counterSnapshot().update?.dispatches ?? 0;
    tf.dispose([...grads.filter((g): g is tf.Tensor => g !== null), ...(scale ? [scale] : [])]);
  }
  const state = await opt.getStateAsync();
  const params: Float32Array[] = [];
  for (const v of vars) params.push(Float32Array.from((await v.data()) as Float32Array));
  // a resume: an optimizer given this state (and copies of the variables) takes the next step as this one does, bit for bit
  const copies = params.map((p, i) => tf.tidy(() => tf.variable(tf.tensor(p, SHAPES[i]), true, `c${i}`)));
  const resumed = new AdamW(copies, { beta1: 0.9, beta2: 0.98, eps: 1e-6, weightDecay: 0.01 });
  resumed.setState(state);
  const next = SHAPES.map((sh) => tf.tensor(normals(rng, sh.reduce((a, b) => a * b, 1), 0.3), sh));
  opt.step(next, 5e-3);
  resumed.step(next, 5e-3);
  let resumeDiffers = 0;
  for (const [i, v] of vars.entries()) {
    const [a, b] = [(await v.data()) as Float32Array, (await copies[i].data()) as Float32Array];
    resumeDiffers += a.filter((x, j) => !Object.is(x, b[j])).length;
  }
  const limit = backend === "webgpu" ? storageBufferLimit(webgpuBackend()) : 0;
  opt.dispose();
  resumed.dispose();
  tf.dispose([...vars, ...copies, ...next]);
  setPackSegmentFloats(null);
  return { params, m: state.m, v: state.v, steps: state.steps, dispatchesPerStep, limit, liveTensors, resumeDiffers };
}

async function adamwCase() {
  const cpu = await adamwRun("cpu");
  const gpu = await adamwRun("webgpu");
  // segments of 128 floats: variables 0 and 1, 2 and 3, the 130×70 one alone
  const seg = await adamwRun("webgpu", 128);
  const segmented = { diff: Math.max(...cpu.params.map((x, i) => relDiff(seg.params[i], x)), ...cpu.m.map((x, i) => relDiff(seg.m[i], x)), ...cpu.v.map((x, i) => relDiff(seg.v[i], x))), dispatchesPerStep: seg.dispatchesPerStep, resumeDiffers: seg.resumeDiffers };
  return {
    segmented,
    p: cpu.params.map((x, i) => relDiff(gpu.params[i], x)),
    m: cpu.m.map((x, i) => relDiff(gpu.m[i], x)),
    v: cpu.v.map((x, i) => relDiff(gpu.v[i], x)),
    cpuSteps: cpu.steps,
    gpuSteps: gpu.steps,
    dispatchesPerStep: gpu.dispatchesPerStep,
    liveTensors: gpu.liveTensors,
    limit: gpu.limit,
    variables: SHAPES.length,
    resumeDiffers: { cpu: cpu.resumeDiffers, gpu: gpu.resumeDiffers },
  };
}

/**
 * Polyak tgt·(1 − τ) + online·τ of 7 pairs (more than one program's worth), fused in place vs cpu
 * ops. Before it: a clone of target 0 (which shares its buffer: copy on write must keep the clone's
 * values), a read of target 1 (tfjs keeps the values it read: they must not be returned after the
 * write), and target 2 made from online 2 (a shared buffer, the online side must keep its values).
 */
async function polyakCase() {
  const shapes = [[3], [64, 3], [1], [5, 5], [200], [2, 2, 2], [65]];
  const tau = 0.05;
  const run = async (backend: "cpu" | "webgpu") => {
    await onBackend(backend);
    const rng = new Rng(11);
    const pairs = shapes.map((s, i) => {
      const n = s.reduce((a, b) => a * b, 1);
      const t = normals(rng, n);
      const online = tf.tensor(normals(rng, n), s);
      return { target: i === 2 ? tf.variable(online, false) : tf.tidy(() => tf.variable(tf.tensor(t, s), false)), online };
    });
    // on the GPU first (a read then leaves tfjs's host copy beside the buffer)
    const buffers = backend === "webgpu" ? pairs.map((p) => bufferOf(p.target)) : [];
    const clone0 = pairs[0].target.clone();
    const before0 = Float32Array.from((await clone0.data()) as Float32Array);
    await pairs[1].target.data();
    const online2 = Float32Array.from((await pairs[2].online.data()) as Float32Array);
    resetCounters();
    withPhase("update", () =>
      backend === "webgpu" ? polyakFused(pairs, tau) : pairs.forEach((p) => p.target.assign(tf.add(tf.mul(p.target, 1 - tau), tf.mul(p.online, tau)))),
    );
    const dispatches = counterSnapshot().update?.dispatches ?? 0;
    const values: Float32Array[] = [];
    for (const p of pairs) values.push(Float32Array.from((await p.target.data()) as Float32Array));
    const kept = {
      clone: relDiff((await clone0.data()) as Float32Array, before0),
      online: relDiff((await pairs[2].online.data()) as Float32Array, online2),
    };
    // in place: the targets not shared before keep their buffers (0 and 2 were shared: each got one of its own)
    const sameBuffers = backend === "webgpu" ? pairs.map((p, i) => bufferOf(p.target) === buffers[i]) : [];
    tf.dispose([clone0, ...pairs.flatMap((p) => [p.target, p.online])]);
    return { values, dispatches, kept, sameBuffers, limit: backend === "webgpu" ? storageBufferLimit(webgpuBackend()) : 0 };
  };
  const cpu = await run("cpu");
  const gpu = await run("webgpu");
  return { diffs: cpu.values.map((x, i) => relDiff(gpu.values[i], x)), dispatches: gpu.dispatches, limit: gpu.limit, pairs: shapes.length, kept: gpu.kept, sameBuffers: gpu.sameBuffers };
}

/** The GPU buffer a tensor's data is in on webgpu (tfjs-backend-webgpu's tensor map; uploaded first). */
function bufferOf(t: tf.Tensor): unknown {
  const be = webgpuBackend();
  be.uploadToGPU(t.dataId);
  return (be as unknown as { tensorMap: { get(id: object): { resource?: unknown } } }).tensorMap.get(t.dataId).resource;
}

/** Reads every tensor (async) and disposes it. */
async function readAll(ts: tf.Tensor[]): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  for (const t of ts) out.push(Float32Array.from((await t.data()) as Float32Array));
  tf.dispose(ts);
  return out;
}

/**
 * GELU and LayerNorm forward values and the gradients of Σ y ⊙ R (R random) w.r.t. every input:
 * on cpu ops.ts's tfjs compositions, on webgpu the fused programs (called directly). LayerNorm on
 * a [37, 24], a rank-3 [2, 5, 16] (eps 1e-12, BERT's), a [600, 8] input (rows not a multiple of
 * the rows per workgroup), BERT-base's width [5, 768] and [9, 130] (columns not a multiple of the
 * threads per row).
 */
async function geluLayerNormRun(backend: "cpu" | "webgpu") {
  await onBackend(backend);
  const rng = new Rng(5);
  const fused = backend === "webgpu";
  const results: { name: string; values: Float32Array[] }[] = [];
  // GELU over a wide range, exact zeros and large magnitudes included
  {
    const xv = normals(rng, 150, 2.5);
    xv[0] = 0;
    xv[1] = 7;
    xv[2] = -7;
    const x = tf.tensor2d(xv, [3, 50]);
    const R = tf.tensor2d(normals(rng, 150), [3, 50]);
    const f = (a: tf.Tensor) => (fused ? geluDevice(a) : gelu(a, "erf"));
    const { value, grads } = tf.tidy(() => ({ value: f(x), grads: tf.grads((a: tf.Tensor) => tf.sum(tf.mul(f(a), R)))([x]) }));
    results.push({ name: "gelu", values: await readAll([value, ...grads]) });
    tf.dispose([x, R]);
  }
  for (const [shape, eps] of [[[37, 24], 1e-5], [[2, 5, 16], 1e-12], [[600, 8], 1e-5], [[5, 768], 1e-12], [[9, 130], 1e-5]] as [number[], number][]) {
    const n = shape[shape.length - 1];
    const size = shape.reduce((a, b) => a * b, 1);
    const x = tf.tensor(Float32Array.from(normals(rng, size, 3), (v, i) => v + (i % 7)), shape);
    const gamma = tf.tensor1d(normals(rng, n)) as tf.Tensor1D;
    const beta = tf.tensor1d(normals(rng, n)) as tf.Tensor1D;
    const R = tf.tensor(normals(rng, size), shape);
    const f = (a: tf.Tensor, g: tf.Tensor, b: tf.Tensor) => (fused ? layerNormDevice(a, g as tf.Tensor1D, b as tf.Tensor1D, eps) : layerNorm(a, g as tf.Tensor1D, b as tf.Tensor1D, eps));
    const { value, grads } = tf.tidy(() => ({
      value: f(x, gamma, beta),
      grads: tf.grads((a: tf.Tensor, g: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(f(a, g, b), R)))([x, gamma, beta]),
    }));
    results.push({ name: `layerNorm [${shape}] eps ${eps}`, values: await readAll([value, ...grads]) });
    tf.dispose([x, gamma, beta, R]);
  }
  return { results };
}

async function geluLayerNormCase() {
  const cpu = await geluLayerNormRun("cpu");
  const gpu = await geluLayerNormRun("webgpu");
  const parts = ["forward", "grad x", "grad gamma", "grad beta"];
  const diffs: Record<string, number> = {};
  cpu.results.forEach((r, i) => r.values.forEach((v, j) => (diffs[`${r.name} ${parts[j]}`] = relDiff(gpu.results[i].values[j], v))));
  return { diffs };
}

/**
 * BERT's sub-layer end LayerNorm(x + dropout(h)): ops.ts `residualLayerNorm` on cpu (the tfjs
 * composition) and on webgpu (one fused program), with dropout 0.1 and 0, forward and the
 * gradients of Σ y ⊙ R w.r.t. x, h, γ, β. Both draw the mask from an Rng of the same seed.
 */
async function residualLayerNormRun(backend: "cpu" | "webgpu") {
  await onBackend(backend);
  const rng = new Rng(11);
  const results: { name: string; values: Float32Array[] }[] = [];
  for (const [shape, rate, training] of [[[37, 24], 0.1, true], [[2, 5, 16], 0.3, true], [[40, 32], 0.1, false], [[3, 768], 0.1, true]] as [number[], number, boolean][]) {
    const n = shape[shape.length - 1];
    const size = shape.reduce((a, b) => a * b, 1);
    const x = tf.tensor(normals(rng, size, 2), shape);
    const h = tf.tensor(Float32Array.from(normals(rng, size, 3), (v, i) => v + (i % 5)), shape);
    const gamma = tf.tensor1d(normals(rng, n)) as tf.Tensor1D;
    const beta = tf.tensor1d(normals(rng, n)) as tf.Tensor1D;
    const R = tf.tensor(normals(rng, size), shape);
    let maskRng = new Rng(100 + size);
    const f = (a: tf.Tensor, b: tf.Tensor, g: tf.Tensor, c: tf.Tensor) => residualLayerNorm(a, b, { rate, training, rng: maskRng }, g as tf.Tensor1D, c as tf.Tensor1D, 1e-12);
    const { value, grads } = tf.tidy(() => {
      const value = f(x, h, gamma, beta);
      maskRng = new Rng(100 + size); // the gradient's forward draws the same mask again
      return { value, grads: tf.grads((a: tf.Tensor, b: tf.Tensor, g: tf.Tensor, c: tf.Tensor) => tf.sum(tf.mul(f(a, b, g, c), R)))([x, h, gamma, beta]) };
    });
    results.push({ name: `[${shape}] p ${rate}${training ? "" : " eval"}`, values: await readAll([value, ...grads]) });
    // the pre-LN residual x + dropout(h): forward, grad x, grad h
    maskRng = new Rng(200 + size);
    const add = (a: tf.Tensor, b: tf.Tensor) => residualDropout(a, b, { rate, training, rng: maskRng });
    const res = tf.tidy(() => {
      const value = add(x, h);
      maskRng = new Rng(200 + size);
      return { value, grads: tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(add(a, b), R)))([x, h]) };
    });
    results.push({ name: `add [${shape}] p ${rate}${training ? "" : " eval"}`, values: await readAll([res.value, ...res.grads]) });
    tf.dispose([x, h, gamma, beta, R]);
  }
  return { results };
}

async function residualLayerNormCase() {
  const cpu = await residualLayerNormRun("cpu");
  const gpu = await residualLayerNormRun("webgpu");
  const parts = ["forward", "grad x", "grad h", "grad gamma", "grad beta"];
  const diffs: Record<string, number> = {};
  cpu.results.forEach((r, i) => r.values.forEach((v, j) => (diffs[`${r.name} ${parts[j]}`] = relDiff(gpu.results[i].values[j], v))));
  // the dropout really dropped: some h gradients are exactly 0 where x's are not
  const dropped = cpu.results[0].values[2].filter((v, i) => v === 0 && cpu.results[0].values[1][i] !== 0).length;
  return { diffs, dropped };
}

/**
 * The Learner (clipping, AdamW, Polyak targets, policy copy) over 3 optimizer steps of 2
 * accumulated micro-steps each on fixed batches, tiny transformer: all weights after, cpu path
 * (tfjs ops) against the device path (fused programs).
 */
async function learnerRun(backend: "cpu" | "webgpu", segment: number | null = null, join = true) {
  await onBackend(backend);
  setPackSegmentFloats(segment);
  setJoining(join);
  // the programs dispatched (each in a pass of its own while the hook listens: the same programs)
  const keys: string[] = [];
  if (backend === "webgpu") setProgramTiming((k) => keys.push(k));
  const config = resolveConfig({ preset: "tiny", overrides: ["algo.encoder.type=transformer", "algo.encoder.layers=1", "algo.encoder.heads=2", "algo.encoder.max_len=64", "algo.hyperparams.max_grad_norm=0.05", "algo.encoder.dropout=0"] });
  const nets = new QNetworks(config.algo.encoder, new Rng(1));
  const learner = new Learner(nets, config.algo, 10, 2);
  const rng = new Rng(2);
  const words = (n: number) => Array.from({ length: n }, () => `w${rng.int(300)}`).join(" ");
  const gradNorms: number[] = [];
  const losses: number[] = [];
  const encoders = () => [nets.state, nets.action, nets.stateTarget, nets.actionTarget, nets.policy].flatMap((e) => e.variables);
  // each variable's buffer after the first update (the clones' shared buffers split by then), to compare after the last
  let buffers: unknown[] | null = null;
  for (let k = 0; k < 6; k++) {
    const B = 4;
    const batch = {
      states: Array.from({ length: B }, (_, i) => [words(3 + i), ...(i % 2 ? [words(4)] : [])]),
      actionTexts: Array.from({ length: B }, () => words(5)),
      positions: Int32Array.from({ length: B }, () => rng.int(20)),
      targets: Float32Array.from({ length: B }, () => rng.normal()),
    };
    const r = await learner.microStep(batch, { maxActionLength: 16, maxInMemory: 16 });
    const stats = await learner.lastStats();
    losses.push(stats.loss);
    if (r.applied) gradNorms.push(stats.gradNorm);
    if (r.applied && !buffers && backend === "webgpu") buffers = encoders().map(bufferOf);
  }
  const kept = buffers ? encoders().filter((v, i) => bufferOf(v) === buffers![i]).length : 0;
  const w = await nets.exportWeightsAsync();
  const policy = await nets.policy.exportWeightsAsync();
  const steps = (await learner.getStateAsync()).optimizer.steps;
  const segments = backend === "webgpu" ? packLayout(nets.trainable.map((v) => v.size), packSegmentFloats()).totals.length : 0;
  learner.dispose();
  nets.dispose();
  setPackSegmentFloats(null);
  setJoining(true);
  setProgramTiming(null);
  return { w, policy, gradNorms, losses, steps, updates: learner.updates, kept, variables: encoders().length, segments, dispatches: keys.length, joint: keys.filter((k) => k.startsWith("fz[")).length };
}

/** The networks' encoders whose weights the learner's runs compare. */
const TRAINED = ["state", "action", "stateTarget", "actionTarget"] as const;

async function learnerCase() {
  const cpu = await learnerRun("cpu");
  const gpu = await learnerRun("webgpu");
  const diffs: Record<string, number> = {};
  for (const k of TRAINED) {
    diffs[k] = Math.max(...cpu.w[k].map((t, i) => relDiff(gpu.w[k][i].data, t.data)));
  }
  diffs.policy = Math.max(...cpu.policy.map((t, i) => relDiff(gpu.policy[i].data, t.data)));
  // the GPU issue's bar: every weight and each micro-step's loss within 1.5e-5 of the cpu path's
  const weightDiff = Math.max(...TRAINED.flatMap((k) => cpu.w[k].map((t, i) => maxAbsDiff(gpu.w[k][i].data as Float32Array, t.data as Float32Array))));
  const lossDiff = Math.max(...cpu.losses.map((l, i) => Math.abs(gpu.losses[i] - l) / Math.abs(l)));
  const moved = Math.max(...cpu.w.state.map((t, i) => relDiff(t.data, cpu.w.stateTarget[i].data)));
  // gradients and moments in segments of 4,096 floats: a backward's gradients go in a copy a run of one segment
  const seg = await learnerRun("webgpu", 4096);
  const segmented = { segments: seg.segments, diff: Math.max(...TRAINED.flatMap((k) => cpu.w[k].map((t, i) => relDiff(seg.w[k][i].data, t.data)))) };
  // every program a dispatch of its own (no joint programs, fused-steps.ts): the same bits
  const apart = await learnerRun("webgpu", null, false);
  const differing = TRAINED.reduce((n, k) => n + gpu.w[k].reduce((m, t, i) => m + t.data.filter((x, j) => !Object.is(x, apart.w[k][i].data[j])).length, 0), 0);
  const joining = { differing, joint: gpu.joint, dispatches: gpu.dispatches, apartJoint: apart.joint, apartDispatches: apart.dispatches };
  return { diffs, weightDiff, lossDiff, losses: cpu.losses.length, moved, segmented, joining, gradNorms: { cpu: cpu.gradNorms, gpu: gpu.gradNorms }, steps: { cpu: cpu.steps, gpu: gpu.steps }, updates: [cpu.updates, gpu.updates], keptBuffers: gpu.kept, variables: gpu.variables };
}

/**
 * Attention forward and the gradients of Σ y ⊙ R w.r.t. q, k, v: on cpu device-ops.ts
 * attentionDense's tfjs ops, on webgpu the fused programs (called directly); without and with
 * dropout (same Rng seed); q, k, v separate and packed as one [B·T, 3d] tensor. Shapes: 3
 * sequences of 8, 2 heads of 8 (PAD keys, one sequence all PAD); 3 of 70 positions, 2 heads of
 * 64 (BERT-base's d_head; two blocks of queries, the last part-filled, a last K/V tile of 6 rows
 * with 64-row tiles); 2 of 70, 1 head of 128 (tiles of 32 rows under lavapipe's 32 KiB, as
 * d_head 64 gets under WebGPU's default 16 KiB: three tiles, the last of 6); 5 of 1 position,
 * 3 heads of 4 (T = 1, B·H = 15).
 */
async function attentionRun(backend: "cpu" | "webgpu") {
  await onBackend(backend);
  const rng = new Rng(13);
  const out: { name: string; values: Float32Array[] }[] = [];
  for (const [B, T, H, d] of [[3, 8, 2, 16], [3, 70, 2, 128], [2, 70, 1, 128], [5, 1, 3, 12]]) {
    const mask = Float32Array.from({ length: B * T }, (_, i) => {
      const b = Math.floor(i / T);
      return b === 2 ? 0 : i % T < Math.ceil(T * (0.6 + 0.1 * b)) ? 1 : 0;
    });
    const q = tf.tensor2d(normals(rng, B * T * d), [B * T, d]);
    const k = tf.tensor2d(normals(rng, B * T * d), [B * T, d]);
    const v = tf.tensor2d(normals(rng, B * T * d), [B * T, d]);
    const R = tf.tensor2d(normals(rng, B * T * d), [B * T, d]);
    const shape = `[${B},${T},${H},${d / H}]`;
    for (const dropout of [0, 0.3]) {
      const args = () => ({ batch: B, len: T, heads: H, mask, dropout, training: dropout > 0, rng: new Rng(9) });
      const f = (a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) => (backend === "webgpu" ? attentionFused : attentionDense)(a as tf.Tensor2D, b as tf.Tensor2D, c as tf.Tensor2D, args());
      const { value, grads } = tf.tidy(() => ({ value: f(q, k, v), grads: tf.grads((a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) => tf.sum(tf.mul(f(a, b, c), R)))([q, k, v]) }));
      out.push({ name: `${shape} dropout ${dropout}`, values: await readAll([value, ...grads]) });
      // packed: q | k | v as the columns of one [B·T, 3d] tensor (the fused QKV projection)
      const qkv = tf.concat([q, k, v], 1) as tf.Tensor2D;
      const g = (x: tf.Tensor) =>
        backend === "webgpu" ? attentionFusedPacked(x as tf.Tensor2D, args()) : attentionDense(...([0, 1, 2].map((i) => tf.slice(x, [0, i * d], [B * T, d])) as [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D]), args());
      const packed = tf.tidy(() => ({ value: g(qkv), grads: tf.grads((x: tf.Tensor) => tf.sum(tf.mul(g(x), R)))([qkv]) }));
      out.push({ name: `${shape} packed dropout ${dropout}`, values: await readAll([packed.value, ...packed.grads]) });
      qkv.dispose();
    }
    tf.dispose([q, k, v, R]);
  }
  return out;
}

async function attentionCase() {
  const cpu = await attentionRun("cpu");
  const gpu = await attentionRun("webgpu");
  const parts = (name: string) => (name.includes("packed") ? ["forward", "grad qkv"] : ["forward", "grad q", "grad k", "grad v"]);
  const diffs: Record<string, number> = {};
  // floor 0.1: at T = 1 grad q and k are exactly 0 on cpu (a softmax over one key) and rounding
  // (≈ 1e-7) in the fused programs; elsewhere the gradients are O(1) (standard normal inputs)
  cpu.forEach((r, i) => r.values.forEach((v, j) => (diffs[`${r.name} ${parts(r.name)[j]}`] = relDiffFloor(gpu[i].values[j], v, 0.1))));
  return { diffs };
}

/**
 * Twin-head Q of padded candidates, the soft value V(s) and the policy's top-k: on cpu
 * device-scoring.ts's tfjs ops,
 * on webgpu the fused programs. 3 environments of 5, 1 and 7 candidates (duplicated rows: tied
 * Q values), positions past the rotary table, unavailable candidates; α 0.05, 0.5, 20 and 0 (hard
 * max), top-k 5, 3, 2 and 1; and one environment alone.
 */
async function twinQRun(backend: "cpu" | "webgpu") {
  await onBackend(backend);
  const rng = new Rng(17);
  const D = 16;
  const out: { name: string; values: Float32Array[] }[] = [];
  for (const counts of [[5, 1, 7], [4]]) {
    const R = counts.reduce((a, b) => a + b, 0);
    const E = counts.length;
    const nMax = Math.max(...counts);
    const cv = normals(rng, R * D);
    const sv = normals(rng, E * D);
    // rows 0 and 2 = 3 × state 0, unrotated (position 0): the same, largest Q of environment 0, a
    // tie that top-k must break to the lower index (row 2 is unavailable: the other pick shows)
    // and row 3 = 4 × state 0 above them, so with top-2 the tie sits at the cut
    for (const row of [0, 2, 3]) for (let c = 0; c < D; c++) cv[row * D + c] = (row === 3 ? 4 : 3) * sv[c];
    const cands = tf.tensor2d(cv, [R, D]);
    const states = tf.tensor2d(sv, [E, D]);
    const positions = Int32Array.from({ length: R }, (_, i) => (i === 1 ? 5000 : i === 0 || i === 2 || i === 3 ? 0 : rng.int(40)));
    const avails = counts.map((n, e) => Uint8Array.from({ length: n }, (_, j) => (j === (e === 0 && n > 2 ? 2 : 1) ? 0 : 1)));
    const fused = backend === "webgpu";
    const { q1, q2 } = (fused ? scorePaddedFused : scorePadded)(states, cands, positions, counts);
    const avail = availTensor(avails, nMax);
    const values: tf.Tensor[] = [q1, q2];
    for (const [alpha, k] of [[0.05, 5], [0, 5], [0.05, 3], [0.5, 1], [20, 2]]) values.push((fused ? softValueFused : softValueDevice)(q1, q2, avail, alpha, k));
    for (const k of [5, 2]) {
      const top = (fused ? policyTopKFused : policyTopK)(q1, q2, avail, k);
      values.push(top.values, tf.cast(top.indices, "float32"));
      top.indices.dispose();
    }
    out.push({ name: `counts ${counts}`, values: await readAll(values) });
    tf.dispose([cands, states, avail]);
  }
  return out;
}

/**
 * One environment with 9,000 candidates (past device-scoring's fused top-k bound): soft value and
 * policy top-k through device-scoring.ts on both backends, and the dispatches of the soft value
 * on webgpu for that row and for a row of 100.
 */
async function wideRowRun(backend: "cpu" | "webgpu") {
  await onBackend(backend);
  const rng = new Rng(31);
  const out: Float32Array[] = [];
  const dispatches: number[] = [];
  for (const n of [9000, 100]) {
    const q1 = tf.tensor2d(normals(rng, n), [1, n]);
    const q2 = tf.tensor2d(normals(rng, n), [1, n]);
    const avail = availTensor([Uint8Array.from({ length: n }, (_, j) => (j % 3 ? 1 : 0))], n);
    resetCounters();
    const v = withPhase("target", () => softValueDevice(q1, q2, avail, 0.05, 5));
    dispatches.push(counterSnapshot().target?.dispatches ?? 0);
    const top = policyTopK(q1, q2, avail, 5);
    out.push(...(await readAll([v, top.values, tf.cast(top.indices, "float32")])));
    tf.dispose([q1, q2, avail, top.indices]);
  }
  return { out, dispatches };
}

/**
 * The scores and the per-row program after them in one program (twin-q.ts scoreThenRowCode:
 * scorePolicyTopKJoined, scoreSoftValue) against the two programs (scoreRows, then
 * policyTopKJoined / softValueDevice) on webgpu, on the same inputs: environments of 5, 1 and 7
 * candidates (ties, padding, positions past the rotary table, unavailable ones) and of 150 and 3
 * (more candidates than a workgroup's 64 threads), α 0 and > 0, top-5 and top-2; the programs each
 * dispatches in the rollout and target phases.
 */
async function scoreThenRowCase() {
  await onBackend("webgpu");
  const rng = new Rng(23);
  const D = 16;
  const diffs: Record<string, number> = {};
  const dispatches: Record<string, number> = {};
  for (const counts of [[5, 1, 7], [150, 3]]) {
    const R = counts.reduce((a, b) => a + b, 0);
    const nMax = Math.max(...counts);
    const cv = normals(rng, R * D);
    const sv = normals(rng, counts.length * D);
    for (const row of [0, 2]) for (let c = 0; c < D; c++) cv[row * D + c] = 3 * sv[c];
    const cands = tf.tensor2d(cv, [R, D]);
    const states = tf.tensor2d(sv, [counts.length, D]);
    const positions = Int32Array.from({ length: R }, (_, i) => (i === 1 ? 5000 : i < 3 ? 0 : rng.int(40)));
    const layout = paddedLayout(positions, counts, R);
    const avail = availTensor(counts.map((n) => Uint8Array.from({ length: n }, (_, j) => (j % 4 === 2 ? 0 : 1))), nMax);
    const run = (phase: "rollout" | "target", f: () => tf.Tensor): tf.Tensor => {
      resetCounters();
      countersOn();
      const t = withPhase(phase, f);
      dispatches[`${counts} ${phase}`] = Math.max(dispatches[`${counts} ${phase}`] ?? 0, counterSnapshot()[phase]?.dispatches ?? 0);
      return t;
    };
    for (const k of [5, 2]) {
      const one = run("rollout", () => scorePolicyTopKJoined(states, cands, layout, avail, k));
      const two = tf.tidy(() => {
        const { q1, q2 } = scoreRows(states, cands, layout);
        return policyTopKJoined(q1, q2, avail, k);
      });
      const [a, b] = await readAll([one, two]);
      diffs[`${counts} top-${k}`] = maxAbsDiff(a, b);
    }
    for (const alpha of [0.05, 0]) {
      const one = run("target", () => scoreSoftValue(states, cands, layout, avail, alpha, 5));
      const two = tf.tidy(() => {
        const { q1, q2 } = scoreRows(states, cands, layout);
        return softValueDevice(q1, q2, avail, alpha, 5);
      });
      const [a, b] = await readAll([one, two]);
      diffs[`${counts} V α ${alpha}`] = maxAbsDiff(a, b);
    }
    tf.dispose([cands, states, avail]);
  }
  return { diffs, dispatches };
}

/** Largest |a − b| (0 where both are the same infinity). */
function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = a.length === b.length ? 0 : Infinity;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

async function twinQCase() {
  const cpuWide = await wideRowRun("cpu");
  const gpuWide = await wideRowRun("webgpu");
  const wide = { diffs: cpuWide.out.map((v, i) => relDiff(gpuWide.out[i], v)), dispatches: gpuWide.dispatches };
  const cpu = await twinQRun("cpu");
  const gpu = await twinQRun("webgpu");
  const parts = ["q1", "q2", "V α 0.05 k 5", "V α 0 k 5", "V α 0.05 k 3", "V α 0.5 k 1", "V α 20 k 2", "top-5 values", "top-5 indices", "top-2 values", "top-2 indices"];
  const diffs: Record<string, number> = {};
  const padding: Record<string, boolean> = {};
  cpu.forEach((r, i) =>
    r.values.forEach((v0, j) => {
      const name = `${r.name} ${parts[j]}`;
      // top-k indices of −∞ (padding) entries: tfjs orders those ties arbitrarily (its comparator
      // gives NaN for −∞ − −∞), so only indices of finite values are compared
      const finiteAt = name.endsWith("indices") ? r.values[j - 1] : null;
      const v = finiteAt ? v0.map((x, n) => (Number.isFinite(finiteAt[n]) ? x : -1)) : v0;
      const g = finiteAt ? gpu[i].values[j].map((x, n) => (Number.isFinite(finiteAt[n]) ? x : -1)) : gpu[i].values[j];
      padding[name] = v.every((x, n) => Number.isFinite(x) === Number.isFinite(g[n]) && (Number.isFinite(x) || x === g[n]));
      const fin = (a: Float32Array) => a.map((x) => (Number.isFinite(x) ? x : 0));
      diffs[name] = relDiff(fin(g), fin(v));
    }),
  );
  return { diffs, padding, wide };
}

/**
 * The clipping norm and factor (clipFactorDevice): on cpu the tfjs ops, on webgpu the fused
 * sum-of-squares programs. 20 tensors (more than one program's worth), one of 100,000 values (many
 * workgroups), one of a single value; max_norm below and above the norm. Then as many tensors as
 * BERT-base's gradients (400): more groups' partial sums than the finishing program takes.
 */
async function globalNormRun(backend: "cpu" | "webgpu") {
  await onBackend(backend);
  const rng = new Rng(19);
  const sizes = [100_000, 1, ...Array.from({ length: 18 }, (_, i) => 3 + 17 * i)];
  const xs = sizes.map((n, i) => tf.tensor1d(normals(rng, n, 0.01 * (i + 1))));
  resetCounters();
  const a = withPhase("update", () => clipFactorDevice(xs, 0.5));
  const dispatches = counterSnapshot().update?.dispatches ?? 0;
  const b = clipFactorDevice(xs, 1e6);
  const many = Array.from({ length: 400 }, (_, i) => tf.tensor1d(normals(rng, 1 + (i % 37) * 29, 0.001 * (1 + (i % 5)))));
  resetCounters();
  const c = withPhase("update", () => clipFactorDevice(many, 0.5));
  const manyDispatches = counterSnapshot().update?.dispatches ?? 0;
  const values = await readAll([a.norm, a.coef, b.norm, b.coef, c.norm, c.coef]);
  tf.dispose([...xs, ...many]);
  const limit = backend === "webgpu" ? storageBufferLimit(webgpuBackend()) : 0;
  return { values: values.map((v) => v[0]), dispatches, manyDispatches, limit, tensors: sizes.length, many: many.length };
}

async function globalNormCase() {
  const cpu = await globalNormRun("cpu");
  const gpu = await globalNormRun("webgpu");
  return { cpu: cpu.values, gpu: gpu.values, dispatches: gpu.dispatches, manyDispatches: gpu.manyDispatches, limit: gpu.limit, tensors: gpu.tensors, many: gpu.many };
}

/**
 * The twin-head loss and its gradients for s and aRot: on cpu qfunction.ts twinLoss's tfjs ops, on
 * webgpu the fused programs. Batches of 70 (more rows than the forward's workgroup) and 3, D 16.
 */
async function twinLossRun(backend: "cpu" | "webgpu") {
  await onBackend(backend);
  const rng = new Rng(23);
  const out: { name: string; values: Float32Array[] }[] = [];
  const bits: Record<string, number> = {};
  for (const [B, D] of [[70, 16], [3, 12]]) {
    const s = tf.tensor2d(normals(rng, B * D), [B, D]);
    const a = tf.tensor2d(normals(rng, B * D), [B, D]);
    const G = tf.tensor1d(normals(rng, B, 3));
    const positions = Int32Array.from({ length: B }, (_, i) => (i === 1 ? 5000 : rng.int(900)));
    const f = (x: tf.Tensor, y: tf.Tensor) => (backend === "webgpu" ? twinLossDevice : twinLoss)(x as tf.Tensor2D, y as tf.Tensor2D, G);
    const r = tf.tidy(() => ({ value: f(s, a), grads: tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.mul(f(x, y), 1.5))([s, a]) }));
    // the learner's tapeless pass: the loss times 1.5 and its gradients, no tape (cpu: the same ops scaled)
    const t = backend === "webgpu" ? twinLossGrads(s, a, G, 1.5) : { loss: tf.mul(r.value, 1.5), ds: tf.clone(r.grads[0]), da: tf.clone(r.grads[1]) };
    out.push({ name: `B ${B}`, values: await readAll([r.value, ...r.grads]) });
    out.push({ name: `B ${B} tapeless`, values: await readAll([t.loss, t.ds, t.da]) });
    // the rotated pass: the raw actions rotated inside the loss's programs (cpu: rotateTf under the tape)
    const rotated = tf.tidy(() => tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.mul(twinLoss(x as tf.Tensor2D, rotateTf(y as tf.Tensor2D, positions), G), 1.5))([s, a]));
    if (backend === "webgpu") {
      const rot = rotaryTables(a, positions);
      const inside = twinLossGrads(s, a, G, 1.5, rot);
      // apart: the rotation's own programs around the unrotated loss (what the pass ran before)
      const aRot = rotaryFused(a, positions);
      const apart = twinLossGrads(s, aRot, G, 1.5);
      const daRaw = tf.grad((v: tf.Tensor) => tf.sum(tf.mul(rotaryFused(v as tf.Tensor2D, positions), apart.da)))(a);
      const [x, y] = [await readAll([inside.loss, inside.ds, inside.da]), await readAll([apart.loss, apart.ds, daRaw])];
      bits[`B ${B}`] = x.reduce((n, v, i) => n + v.filter((e, j) => !Object.is(e, y[i][j])).length, 0);
      out.push({ name: `B ${B} rotated`, values: x });
      tf.dispose([rot!.rows, inside.loss, inside.ds, inside.da, aRot, apart.loss, apart.ds, apart.da, daRaw, ...rotated]);
    } else {
      out.push({ name: `B ${B} rotated`, values: [await readAll([tf.mul(twinLoss(s, rotateTf(a, positions), G), 1.5)]).then((v) => v[0]), ...(await readAll(rotated))] });
    }
    tf.dispose([s, a, G]);
  }
  return { out, bits };
}

async function twinLossCase() {
  const cpu = await twinLossRun("cpu");
  const gpu = await twinLossRun("webgpu");
  const parts = ["loss", "grad s", "grad a"];
  const diffs: Record<string, number> = {};
  cpu.out.forEach((r, i) => r.values.forEach((v, j) => (diffs[`${r.name} ${parts[j]}`] = relDiff(gpu.out[i].values[j], v))));
  return { diffs, bitsDiffer: gpu.bits };
}

/**
 * The rotary rotation and its gradient: on cpu rotary.ts rotateTf's tfjs ops, on webgpu the fused
 * programs. 9 rows of width 16, positions 0, past the table (clamped) and random.
 */
async function rotaryRun(backend: "cpu" | "webgpu") {
  await onBackend(backend);
  const rng = new Rng(29);
  const n = 9, D = 16;
  const x = tf.tensor2d(normals(rng, n * D), [n, D]);
  const R = tf.tensor2d(normals(rng, n * D), [n, D]);
  const positions = Int32Array.from({ length: n }, (_, i) => (i === 0 ? 0 : i === 1 ? 5000 : rng.int(900)));
  const f = (v: tf.Tensor) => (backend === "webgpu" ? rotaryFused(v as tf.Tensor2D, positions) : rotateTf(v as tf.Tensor2D, positions));
  const r = tf.tidy(() => ({ value: f(x), grads: tf.grads((v: tf.Tensor) => tf.sum(tf.mul(f(v), R)))([x]) }));
  const values = await readAll([r.value, ...r.grads]);
  tf.dispose([x, R]);
  return values;
}

async function rotaryCase() {
  const cpu = await rotaryRun("cpu");
  const gpu = await rotaryRun("webgpu");
  return { forward: relDiff(gpu[0], cpu[0]), grad: relDiff(gpu[1], cpu[1]) };
}

/**
 * joinRows (buffer copies in tfjs's encoder) against tf.concat on cpu: blocks of 3, 0 and 70 rows
 * and a block of 1, each disposed before the read (the copy must keep its buffer), and a program
 * reading the joined tensor in the same command buffer.
 */
async function joinRowsRun(backend: "cpu" | "webgpu") {
  await onBackend(backend);
  const rng = new Rng(41);
  const parts = [3, 0, 70, 1].map((r) => tf.tensor2d(normals(rng, r * 12), [r, 12]));
  const joined = backend === "webgpu" ? joinRows(parts) : tf.concat(parts, 0);
  tf.dispose(parts);
  // rows out of order, repeated, the last one, none
  const index = Int32Array.from({ length: 90 }, (_, i) => (i * 37 + 5) % 74);
  index[89] = 73;
  const gather = (ix: Int32Array) => (backend === "webgpu" ? gatherRows(joined, ix) : tf.gather(joined, tf.tensor1d(ix, "int32")));
  resetCounters();
  const gathered = withPhase("encode", () => gather(index));
  const counts = counterSnapshot().encode;
  const none = gather(new Int32Array(0));
  const outside = backend === "webgpu" ? errorOf(() => gatherRows(joined, Int32Array.of(2, 74))) : "";
  const doubled = tf.mul(joined, 2);
  const values = await readAll([joined, doubled, gathered]);
  none.dispose();
  // joinFlat: int32 tensors of several shapes end to end (the rollout's lock-step runs, read at once), disposed before the read
  const ints = [[2, 3], [0], [5]].map((shape, k) => tf.tensor(Int32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => (i + 1) * (k + 7) - 40), shape, "int32"));
  const flat = backend === "webgpu" ? joinFlat(ints) : tf.concat(ints.map((t) => t.flatten()), 0);
  tf.dispose(ints);
  const mixed = backend === "webgpu" ? errorOf(() => joinFlat([flat, tf.zeros([2])])) : "";
  const flatValues = Array.from(await flat.data());
  flat.dispose();
  return { values, noneShape: none.shape, outside, gatherKernels: (counts?.kernels ?? 0) - (counts?.fused ?? 0), gatherDispatches: counts?.dispatches ?? 0, flatValues, mixed };
}

function errorOf(f: () => unknown): string {
  try {
    f();
    return "";
  } catch (e) {
    return (e as Error).message;
  }
}

async function joinRowsCase() {
  const cpu = await joinRowsRun("cpu");
  const gpu = await joinRowsRun("webgpu");
  return {
    rows: gpu.values[0].length / 12, joined: relDiff(gpu.values[0], cpu.values[0]), read: relDiff(gpu.values[1], cpu.values[1]),
    gatheredRows: gpu.values[2].length / 12, gathered: relDiff(gpu.values[2], cpu.values[2]), noneShape: gpu.noneShape, outside: gpu.outside,
    gatherKernels: gpu.gatherKernels, gatherDispatches: gpu.gatherDispatches,
    flat: gpu.flatValues, flatCpu: cpu.flatValues, mixed: gpu.mixed,
  };
}

/**
 * accumulateFused against tfjs's Add on cpu: 19 tensors (a scalar, an empty one, odd sizes) in
 * ⌈19 / ⌊limit/2⌋⌉ programs; tensor 0 shares its buffer with a clone (which must keep its values),
 * tensor 1 was read before (tfjs keeps its values on the host: the sum must not read back stale).
 */
async function accumulateRun(backend: "cpu" | "webgpu") {
  await onBackend(backend);
  const rng = new Rng(43);
  const shapes = [[7, 5], [33], [], [0], [130, 70], [3, 4, 2], [65], [1], [9, 9], [200], [2, 2], [17], [31, 3], [5], [64, 3], [1, 1], [300], [11], [4, 4, 4]];
  const mk = () => shapes.map((sh) => tf.tensor(normals(rng, sh.reduce((a, b) => a * b, 1)), sh));
  const acc = mk(), add = mk();
  const clone0 = acc[0].clone();
  const before0 = Float32Array.from((await clone0.data()) as Float32Array);
  // on the GPU first (a read then leaves tfjs's host copy beside the buffer)
  const buffers = backend === "webgpu" ? acc.map(bufferOf) : [];
  await acc[1].data();
  const live = tf.memory().numTensors;
  resetCounters();
  const sums = withPhase("update", () => (backend === "webgpu" ? accumulateFused(acc, add) : acc.map((a, i) => tf.add(a, add[i]))));
  const counts = counterSnapshot().update;
  if (backend === "cpu") tf.dispose([...acc, ...add]);
  // the sums replace acc, add is released: 19 fewer tensors
  const released = live - tf.memory().numTensors;
  const sameBuffers = backend === "webgpu" ? sums.map((t, i) => bufferOf(t) === buffers[i]) : [];
  const values = await readAll(sums);
  const kept = relDiff((await clone0.data()) as Float32Array, before0);
  clone0.dispose();
  return { values, kept, released, sameBuffers, dispatches: counts?.dispatches ?? 0, kernels: (counts?.kernels ?? 0) - (counts?.fused ?? 0), limit: backend === "webgpu" ? storageBufferLimit(webgpuBackend()) : 0 };
}

async function accumulateCase() {
  const cpu = await accumulateRun("cpu");
  const gpu = await accumulateRun("webgpu");
  return { diffs: gpu.values.map((v, i) => (v.length ? relDiff(v, cpu.values[i]) : 0)), sizes: gpu.values.map((v) => v.length), kept: gpu.kept, released: gpu.released, sameBuffers: gpu.sameBuffers, dispatches: gpu.dispatches, kernels: gpu.kernels, limit: gpu.limit };
}

/**
 * More passes than one query set holds (2,048): 2,048 additions in "encode", then 300 in "update",
 * each phase change ending tfjs's pass, so a pass each; the update's passes fall in a second
 * query set, made when the first filled.
 */
async function gpuTimingManyCase() {
  await onBackend("webgpu");
  const x = tf.ones([4096]);
  const run = (phases: ("encode" | "update" | "eval")[]) => {
    let y = tf.clone(x);
    for (const p of phases) {
      const next = withPhase(p, () => tf.add(y, x));
      y.dispose();
      y = next;
    }
    return y;
  };
  // alternating with "eval" (untimed work between them would not end a pass: every addition is timed)
  type P = "encode" | "update" | "eval";
  const phases: P[] = [...Array.from({ length: 2048 }, (_, i): P => (i % 2 ? "eval" : "encode")), ...Array.from({ length: 300 }, (_, i): P => (i % 2 ? "eval" : "update"))];
  await readAll([run(phases.slice(0, 4))]);
  gpuTimingOn();
  const y = run(phases);
  gpuTimingOff();
  const sum = (await y.data())[0];
  const timed = await settleGpuTimes();
  tf.dispose([x, y]);
  return { sum, ms: timed.ms, passes: timed.passes, untimed: timed.untimed, additions: phases.length };
}

/**
 * GPU time per phase (backend/gpu-timing.ts): one 384² matMul in "encode", eight in "update" (tfjs
 * programs, back to back across the phase change), a recorded encoder forward (our own pass) in
 * "target", nothing in "rollout"; then a matMul after timing stopped.
 */
async function gpuTimingCase() {
  await onBackend("webgpu");
  const rng = new Rng(43);
  const n = 384;
  const a = tf.tensor2d(normals(rng, n * n, 1 / n), [n, n]);
  const config = resolveConfig({ preset: "tiny", overrides: ["algo.encoder.type=transformer", "algo.encoder.layers=1", "algo.encoder.heads=2", "algo.encoder.max_len=64"] });
  const nets = new QNetworks(config.algo.encoder, new Rng(1));
  const batch = nets.state.packActions(Array.from({ length: 64 }, (_, i) => `w${i} w${i + 1} w${i + 2}`), 16);
  const work = () => {
    const one = withPhase("encode", () => tf.matMul(a, a));
    const eight = withPhase("update", () => tf.tidy(() => Array.from({ length: 8 }, () => tf.matMul(a, a)).reduce((x, y) => tf.add(x, y))));
    const enc = withPhase("target", () => nets.state.embedDevice(batch, false));
    return [one, eight, enc];
  };
  await readAll(work()); // pipelines compiled, buffers allocated
  const on = gpuTimingOn();
  const t0 = performance.now();
  await readAll(work());
  const wall = performance.now() - t0;
  gpuTimingOff();
  const timed = await settleGpuTimes();
  await readAll([withPhase("eval", () => tf.matMul(a, a))]);
  const after = await settleGpuTimes();
  tf.dispose(a);
  nets.dispose();
  return { on, ms: timed.ms, passes: timed.passes, untimed: timed.untimed, wall, afterPasses: after.passes };
}

/**
 * GPU time per program: a recorded forward and two raw programs (GELU, LayerNorm) timed with
 * `byProgram` and without; the programs each was told of, by key (device.ts counters).
 */
async function gpuTimingProgramsCase() {
  await onBackend("webgpu");
  const rng = new Rng(44);
  const x = tf.tensor2d(normals(rng, 256 * 64), [256, 64]);
  const g = tf.ones([64]) as tf.Tensor1D, b = tf.zeros([64]) as tf.Tensor1D;
  const config = resolveConfig({ preset: "tiny", overrides: ["algo.encoder.type=transformer", "algo.encoder.layers=2", "algo.encoder.heads=2", "algo.encoder.max_len=64"] });
  const nets = new QNetworks(config.algo.encoder, new Rng(1));
  const batch = nets.state.packActions(Array.from({ length: 64 }, (_, i) => `w${i} w${i + 1} w${i + 2}`), 16);
  const work = () => [withPhase("encode", () => nets.state.embedDevice(batch, false)), withPhase("update", () => layerNormDevice(geluDevice(x), g, b, 1e-12))];
  await readAll(work()); // pipelines compiled, buffers allocated
  const timed = async (byProgram: boolean) => {
    resetCounters();
    gpuTimingOn({ byProgram });
    await readAll(work());
    gpuTimingOff();
    const t = await settleGpuTimes();
    const told = Object.fromEntries(kernelNameCounts().filter(([k]) => k.startsWith("fused ")).map(([k, n]) => [k.slice(6), n]));
    return { ms: t.ms, byProgram: t.byProgram, passes: t.passes, told };
  };
  const apart = await timed(true);
  const together = await timed(false);
  tf.dispose([x, g, b]);
  nets.dispose();
  return { apart, together };
}

/** [a shape, b shape]: aligned and ragged sizes, a K of 1, broadcast batches. */
const MATMUL_SHAPES: [number[], number[]][] = [
  [[128, 64], [64, 128]],
  [[37, 29], [29, 53]],
  [[130, 1], [1, 7]],
  [[3, 70, 40], [3, 40, 66]],
  [[2, 128, 16], [16, 256]],
  [[33, 16], [4, 16, 9]],
];

/** Our tiled matMul, every tile, against tf.matMul on cpu; plus which shapes took the aligned program. */
async function matmulCase() {
  const rng = new Rng(11);
  const inputs = MATMUL_SHAPES.map(([sa, sb]) => [normals(rng, sa.reduce((x, y) => x * y, 1)), normals(rng, sb.reduce((x, y) => x * y, 1))]);
  await onBackend("cpu");
  const cpu = await readAll(MATMUL_SHAPES.map(([sa, sb], i) => { const a: tf.Tensor = tf.tensor(inputs[i][0], sa); const b: tf.Tensor = tf.tensor(inputs[i][1], sb); return tf.matMul(a as tf.Tensor3D, b as tf.Tensor3D) as tf.Tensor; }));
  // transposed operands (the recorded backward's dY·Wᵀ and Xᵀ·dY) on the 2-D shapes: the same
  // values read as Aᵀ [K, M] or Bᵀ [N, K]
  const flip = (sh: number[]) => [sh[1], sh[0]];
  const TRANS = MATMUL_SHAPES.flatMap(([sa, sb], i) => (sa.length === 2 && sb.length === 2 ? [{ i, tr: { a: true } }, { i, tr: { b: true } }] : []));
  const shapesOf = (i: number, tr: MatmulTrans): [number[], number[]] => [tr.a ? flip(MATMUL_SHAPES[i][0]) : MATMUL_SHAPES[i][0], tr.b ? flip(MATMUL_SHAPES[i][1]) : MATMUL_SHAPES[i][1]];
  const cpuT = await readAll(TRANS.map(({ i, tr }) => { const [sa, sb] = shapesOf(i, tr); return tf.matMul(tf.tensor2d(inputs[i][0], sa as [number, number]), tf.tensor2d(inputs[i][1], sb as [number, number]), tr.a, tr.b); }));
  await onBackend("webgpu");
  const diffs: Record<string, number> = {};
  const aligned: Record<string, boolean> = {};
  for (const [name, tile] of Object.entries(MATMUL_TILES)) {
    const outs = MATMUL_SHAPES.map(([sa, sb], i) => matmulTiled(tf.tensor(inputs[i][0], sa), tf.tensor(inputs[i][1], sb), tile));
    const got = await readAll(outs);
    MATMUL_SHAPES.forEach(([sa, sb], i) => {
      const key = `${name} ${sa.join("x")}·${sb.join("x")}`;
      diffs[key] = relDiff(got[i], cpu[i]);
      aligned[key] = isAligned(tile, sa.at(-2)!, sb.at(-1)!, sa.at(-1)!);
    });
    const gotT = await readAll(TRANS.map(({ i, tr }) => { const [sa, sb] = shapesOf(i, tr); return matmulTiled(tf.tensor(inputs[i][0], sa), tf.tensor(inputs[i][1], sb), tile, undefined, tr); }));
    TRANS.forEach(({ i, tr }, j) => {
      const [sa, sb] = MATMUL_SHAPES[i];
      const key = `${name} ${sa.join("x")}·${sb.join("x")} ${tr.a ? "Aᵀ" : "Bᵀ"}`;
      diffs[key] = relDiff(gotT[j], cpuT[j]);
      aligned[key] = isAligned(tile, sa[0], sb[1], sa[1]);
    });
  }
  // bias in the epilogue (aligned and checked programs), and ops.ts `linear`: our program when no
  // gradient is recorded and the sizes fit the tile, tf.fused.matMul under a gradient
  const lin: [number, number, number][] = [[256, 128, 384], [37, 29, 53]];
  const linIn = lin.map(([m, k, n]) => [normals(rng, m * k), normals(rng, k * n), normals(rng, n)]);
  await onBackend("cpu");
  const linCpu = await readAll(lin.map(([m, k, n], i) => linear(tf.tensor2d(linIn[i][0], [m, k]), tf.tensor2d(linIn[i][1], [k, n]), tf.tensor1d(linIn[i][2]))));
  await onBackend("webgpu");
  const programs: Record<string, string[]> = {};
  for (const [i, [m, k, n]] of lin.entries()) {
    const [x, w, b] = [tf.tensor2d(linIn[i][0], [m, k]), tf.tensor2d(linIn[i][1], [k, n]), tf.tensor1d(linIn[i][2])];
    const key = `${m}x${k}·${k}x${n}+b`;
    diffs[`tiled ${key}`] = relDiff((await matmulTiled(x, w, DEFAULT_TILE, b).data()) as Float32Array, linCpu[i]);
    for (const tape of [false, true]) {
      resetCounters();
      const y = tape ? tf.tidy(() => { let out!: tf.Tensor; tf.grad((v: tf.Tensor) => { out = tf.keep(linear(v as tf.Tensor2D, w, b)); return tf.sum(out); })(x); return out; }) : linear(x, w, b);
      diffs[`linear ${tape ? "under a gradient" : "no gradient"} ${key}`] = relDiff((await y.data()) as Float32Array, linCpu[i]);
      programs[`${tape ? "grad" : "nograd"} ${key}`] = kernelNameCounts().map(([name]) => name).filter((name) => /matmul|MatMul/.test(name));
    }
  }
  return { diffs, aligned, programs };
}

/** Dropout masks drawn on the GPU against ops.ts's host masks from the same seeds: mismatching values per case. */
async function dropoutCase() {
  await onBackend("webgpu");
  const cases = [[1, 0.1], [7, 0.5], [100_001, 0.1], [65_536 * 5 + 3, 0.3], [64, 0]] as const;
  const out: Record<string, { mismatches: number; dropped: number; size: number; rngAfter: boolean }> = {};
  for (const [size, rate] of cases) {
    const host = new Rng(size), dev = new Rng(size);
    const want = dropoutMask(size, rate, host);
    const got = (await dropoutMaskDevice(size, rate, dev).data()) as Float32Array;
    let mismatches = 0, dropped = 0;
    for (let i = 0; i < size; i++) {
      if (got[i] !== want[i]) mismatches++;
      if (got[i] === 0) dropped++;
    }
    out[`${size} at ${rate}`] = { mismatches, dropped, size, rngAfter: host.nextU32() === dev.nextU32() };
  }
  return out;
}

/**
 * greedyPick on one row: on cpu device-scoring.ts's tfjs ops, on webgpu the two fused programs.
 * Rows of 7 (2 available), 100 (coarse values: ties), 9,000 (ties to the row's maximum spread over
 * the first program's threads, one unavailable) and 300,000 (every thread of the first program
 * busy, 256 lists per merging thread); K 5 and 32, V per head (α 0.05 and 0) and joint, and none;
 * then three rows at once (an episode each, one padded).
 */
async function greedyPickRun(backend: "cpu" | "webgpu") {
  await onBackend(backend);
  const rng = new Rng(41);
  const specs: PickSpec[] = [
    { K: 5, value: { k: 5, alpha: 0.05, heads: "per_head" } },
    { K: 32, value: { k: 3, alpha: 0, heads: "per_head" } },
    { K: 5, value: { k: 5, alpha: 0.5, heads: "joint" } },
    { K: 1, value: null },
  ];
  const out: { name: string; row: Float32Array; dispatches: number }[] = [];
  for (const n of [7, 100, 9000, 300_000]) {
    const a = normals(rng, n);
    const b = normals(rng, n);
    if (n === 100) for (let j = 0; j < n; j++) [a[j], b[j]] = [Math.round(a[j] * 4) / 4, Math.round(b[j] * 4) / 4];
    if (n === 9000) for (const j of [8999, 17, 4000, 4001]) [a[j], b[j]] = [3.5, 3.25];
    const av = Uint8Array.from({ length: n }, (_, j) => (n === 7 ? (j === 2 || j === 5 ? 1 : 0) : j % 3 === 1 || j === 4000 ? 0 : 1));
    const q1 = tf.tensor2d(a, [1, n]);
    const q2 = tf.tensor2d(b, [1, n]);
    const avail = availTensor([av], n);
    for (const spec of specs) {
      resetCounters();
      const row = withPhase("eval", () => tf.tidy(() => greedyPick(q1, q2, avail, { ...spec, K: Math.min(spec.K, n) })));
      const dispatches = counterSnapshot().eval?.dispatches ?? 0;
      out.push({ name: `n ${n} K ${spec.K} ${spec.value ? `${spec.value.heads} k ${spec.value.k} α ${spec.value.alpha}` : "no V"}`, row: (await row.data()) as Float32Array, dispatches });
      row.dispose();
    }
    tf.dispose([q1, q2, avail]);
  }
  // several rows at once (batched evaluation: an episode a row): 3 rows of 1,000 and of 50,000, the
  // second row's last 40 % padding (−∞, unavailable) as scoreRows pads a shorter episode
  for (const n of [1000, 50_000]) {
    const E = 3;
    const a = normals(rng, E * n);
    const b = normals(rng, E * n);
    const av = Array.from({ length: E }, (_, e) => Uint8Array.from({ length: n }, (_, j) => (e === 1 && j >= 0.6 * n ? 0 : (j + e) % 4 === 0 ? 0 : 1)));
    for (let j = Math.floor(0.6 * n); j < n; j++) [a[n + j], b[n + j]] = [-Infinity, -Infinity];
    const q1 = tf.tensor2d(a, [E, n]);
    const q2 = tf.tensor2d(b, [E, n]);
    const avail = availTensor(av, n);
    for (const spec of specs) {
      resetCounters();
      const rows = withPhase("eval", () => tf.tidy(() => greedyPick(q1, q2, avail, spec)));
      const dispatches = counterSnapshot().eval?.dispatches ?? 0;
      const flat = (await rows.data()) as Float32Array;
      const w = flat.length / E;
      for (let e = 0; e < E; e++) out.push({ name: `${E} rows of ${n}, row ${e}, K ${spec.K} ${spec.value ? `${spec.value.heads} k ${spec.value.k} α ${spec.value.alpha}` : "no V"}`, row: flat.slice(e * w, (e + 1) * w), dispatches });
      rows.dispose();
    }
    tf.dispose([q1, q2, avail]);
  }
  return out;
}

async function greedyPickCase() {
  const cpu = await greedyPickRun("cpu");
  const gpu = await greedyPickRun("webgpu");
  return cpu.map((c, i) => {
    const g = gpu[i].row;
    const K = (c.row.length - 1) / 4;
    let picks = 0;
    let sameIndices = true;
    let diff = 0;
    for (let k = 0; k < K; k++) {
      const finite = Number.isFinite(c.row[K + k]);
      if (finite !== Number.isFinite(g[K + k])) sameIndices = false;
      if (!finite) continue;
      picks++;
      if (c.row[k] !== g[k]) sameIndices = false;
      for (const o of [K, 2 * K, 3 * K]) diff = Math.max(diff, Math.abs(g[o + k] - c.row[o + k]) / Math.max(1, Math.abs(c.row[o + k])));
    }
    const v = c.row[4 * K];
    const vDiff = v === g[4 * K] ? 0 : Math.abs(g[4 * K] - v) / Math.max(1, Math.abs(v));
    return { name: c.name, picks, sameIndices, diff, vDiff, v, dispatches: gpu[i].dispatches };
  });
}

/**
 * A product that takes an activation's backward in (matmul.ts actGrad: dY·Wᵀ times f′(P), a
 * backward's fc2 dX) against the plain product and then gelu-layernorm.ts's actGrad per element
 * in a program of its own (the two programs the recorded backwards ran before): values that
 * differ in any bit, per activation and shape (aligned and checked tiles), and the relative
 * difference from the cpu tfjs gradient of the activation.
 */
async function actGradCase() {
  const rng = new Rng(5);
  const shapes: [number, number, number][] = [[64, 32, 128], [37, 29, 53]];
  const inputs = shapes.map(([m, k, n]) => ({ g: normals(rng, m * k), w: normals(rng, n * k), p: normals(rng, m * n, 2) }));
  const acts = ["gelu", "gelu_tanh", "relu"] as const;
  await onBackend("cpu");
  const ref = (act: (typeof acts)[number], x: tf.Tensor) => (act === "relu" ? tf.relu(x) : gelu(x, act === "gelu" ? "erf" : "tanh"));
  const cpu = await readAll(acts.flatMap((act) => shapes.map(([m, k, n], i) => {
    const dy = tf.matMul(tf.tensor2d(inputs[i].g, [m, k]), tf.tensor2d(inputs[i].w, [n, k]), false, true);
    return tf.grad((x: tf.Tensor) => ref(act, x))(tf.tensor2d(inputs[i].p, [m, n]), dy);
  })));
  await onBackend("webgpu");
  const be = webgpuBackend();
  const tile = MATMUL_TILES["64x64-k16"];
  const out: Record<string, { bitsDiffer: number; diff: number; aligned: boolean }> = {};
  let j = 0;
  for (const act of acts) {
    for (const [i, [m, k, n]] of shapes.entries()) {
      const [g, w, p] = [tf.tensor2d(inputs[i].g, [m, k]), tf.tensor2d(inputs[i].w, [n, k]), tf.tensor2d(inputs[i].p, [m, n])];
      const aligned = isAligned(tile, m, n, k);
      const product = (fold: boolean) => runRawProgram(be, {
        key: `test-act-grad-${act}-${aligned}-${fold}`,
        code: () => matmulShader(tile, aligned, { trans: { b: true }, ...(fold ? { actGrad: act } : {}) }),
        inputs: fold ? [g, w, p] : [g, w],
        outputs: [{ shape: [m, n] }],
        uniforms: [m, n, k, 0, 0].map((x) => ({ type: "uint32" as const, data: [x] })),
        threads: m * n,
        workgroups: [Math.ceil(n / 64), Math.ceil(m / 64), 1],
      })[0];
      const folded = tf.engine().makeTensorFromTensorInfo(product(true));
      const dy = product(false);
      const [apart] = runRawProgram(be, {
        key: `test-act-grad-${act}-apart`,
        code: () => `${uniformStruct(["n: u32"])}\n${storageDecls(["x", "dy"], ["y"])}\n${ACT_GRAD_WGSL[act]}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = threadIndex(gid);
  if (i < u.n) { y[i] = actGrad(x[i], dy[i]); }
}`,
        inputs: [p, tf.engine().makeTensorFromTensorInfo(dy)],
        outputs: [{ shape: [m, n] }],
        uniforms: [{ type: "uint32", data: [m * n] }],
        threads: m * n,
      });
      const [a, b] = await readAll([folded, tf.engine().makeTensorFromTensorInfo(apart)]);
      let bitsDiffer = 0;
      for (let e = 0; e < a.length; e++) if (!Object.is(a[e], b[e])) bitsDiffer++;
      out[`${act} ${m}x${k}·${n}x${k}ᵀ`] = { bitsDiffer, diff: relDiff(a, cpu[j++]), aligned };
    }
  }
  return out;
}

const CASES: Record<string, () => Promise<unknown>> = {
  "act-grad": actGradCase,
  "greedy-pick": greedyPickCase,
  "residual-layernorm": residualLayerNormCase,
  dropout: dropoutCase,
  matmul: matmulCase,
  rotary: rotaryCase,
  "twin-loss": twinLossCase,
  "join-rows": joinRowsCase,
  accumulate: accumulateCase,
  "gpu-timing": gpuTimingCase,
  "gpu-timing-many": gpuTimingManyCase,
  "gpu-timing-programs": gpuTimingProgramsCase,
  "global-norm": globalNormCase,
  "twin-q": twinQCase,
  "score-then-row": scoreThenRowCase,
  attention: attentionCase,
  learner: learnerCase,
  adamw: adamwCase,
  polyak: polyakCase,
  "gelu-layernorm": geluLayerNormCase,
};

const name = process.argv[2] ?? "";
const fn = CASES[name];
if (!fn) throw new Error(`unknown case "${name}" (one of ${Object.keys(CASES).join(", ")})`);
process.stdout.write(JSON.stringify(await fn()) + "\n");
process.exit(0);
