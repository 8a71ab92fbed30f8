/**
 * The fused WebGPU kernels of server/qrag/model/webgpu/ (the device path's AdamW, Polyak, GELU,
 * LayerNorm) on Mesa's software Vulkan driver (lavapipe), against the tfjs reference ops on the
 * cpu backend with the same inputs. Each case runs in a fresh process (webgpu-fused-cases.ts);
 * a case whose process crashes (killed by a signal inside Dawn/lavapipe) fails, with no retry.
 * Machines without lavapipe skip, except under QRAG_REQUIRE_WEBGPU=1 (CI).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { webgpuSkip as skip } from "./webgpu-skip.ts";
import { runCaseFile } from "./device-case-runner.ts";

/** Runs one case of webgpu-fused-cases.ts in a fresh process and returns its JSON. */
const runCase = <T>(name: string): T => runCaseFile<T>("test/webgpu-fused-cases.ts", name);

test("fused AdamW on webgpu, in place: params and moments of 6 steps equal agent/adamw.ts's tfjs ops on cpu; its state (moments packed on the device) resumes bit for bit", { skip }, () => {
  const r = runCase<{ p: number[]; m: number[]; v: number[]; cpuSteps: number[]; gpuSteps: number[]; dispatchesPerStep: number; limit: number; variables: number; liveTensors: number[]; resumeDiffers: { cpu: number; gpu: number }; segmented: { diff: number; dispatchesPerStep: number; resumeDiffers: number } }>("adamw");
  assert.deepEqual(r.resumeDiffers, { cpu: 0, gpu: 0 });
  // packs of 128 floats (a binding's limit, made small): three segments, a program each, the same values
  assert.deepEqual(r.segmented, { diff: 0, dispatchesPerStep: 3, resumeDiffers: 0 });
  for (const [what, diffs] of [["p", r.p], ["m", r.m], ["v", r.v]] as const) {
    assert.equal(diffs.length, r.variables);
    diffs.forEach((d, i) => assert.ok(d <= 1e-6, `${what} of variable ${i}: rel. diff ${d}`));
  }
  // variable 1 had no gradient in two steps: its own step count (bias correction) stayed behind
  assert.deepEqual(r.cpuSteps, [6, 4, 6, 6, 6]);
  assert.deepEqual(r.gpuSteps, r.cpuSteps);
  // the fused path ran in place: one program per group of limit − 4 variables (each its p; the packed gradients and moments, the scale)
  const perProgram = Math.max(1, r.limit - 4);
  assert.equal(r.dispatchesPerStep, Math.ceil(r.variables / perProgram), `dispatches per step with limit ${r.limit}`);
  assert.ok(r.liveTensors.every((n) => n === r.liveTensors[0]), `live tensors before each step: ${r.liveTensors}`);
});

test("fused Polyak averaging on webgpu, in place, equals tgt·(1 − τ) + online·τ on cpu, in few programs; what shared a target's buffer keeps its values, a read before does not return stale values", { skip }, () => {
  const r = runCase<{ diffs: number[]; dispatches: number; limit: number; pairs: number; kept: { clone: number; online: number }; sameBuffers: boolean[] }>("polyak");
  assert.equal(r.diffs.length, r.pairs);
  r.diffs.forEach((d, i) => assert.ok(d <= 1e-6, `pair ${i}: rel. diff ${d}`));
  assert.equal(r.dispatches, Math.ceil(r.pairs / Math.floor(r.limit / 2)));
  assert.deepEqual(r.kept, { clone: 0, online: 0 });
  // targets 0 and 2 shared their buffers (a clone, a variable made from its online tensor): copied on write; the others written in place
  assert.deepEqual(r.sameBuffers, [false, true, false, true, true, true, true]);
});

test("the Learner on webgpu (fused clipping+AdamW+Polyak, in place) trains like the cpu path: 3 updates, every weight and each micro-step's loss within 1.5e-5 (each tensor within 1e-4 of its largest value), every variable in the buffer it had after the first; so with its gradients in several segments; the two encoders' programs joined (fused-steps.ts) give the bits of every program apart, in fewer dispatches", { skip }, () => {
  const r = runCase<{ diffs: Record<string, number>; weightDiff: number; lossDiff: number; losses: number; moved: number; gradNorms: { cpu: number[]; gpu: number[] }; steps: { cpu: number[]; gpu: number[] }; updates: number[]; keptBuffers: number; variables: number; segmented: { segments: number; diff: number }; joining: { differing: number; joint: number; dispatches: number; apartJoint: number; apartDispatches: number } }>("learner");
  assert.equal(r.losses, 6);
  assert.ok(r.weightDiff <= 1.5e-5, `largest weight difference ${r.weightDiff}`);
  assert.ok(r.lossDiff <= 1.5e-5, `losses differ by ${r.lossDiff} (relative)`);
  const j = r.joining;
  assert.equal(j.differing, 0, JSON.stringify(j));
  assert.ok(j.joint > 0 && j.apartJoint === 0 && j.dispatches + j.joint === j.apartDispatches, JSON.stringify(j));
  // gradients and moments in packs of 4,096 floats (a binding's limit, made small): the same training
  assert.ok(r.segmented.segments > 2 && r.segmented.diff <= 1e-4, JSON.stringify(r.segmented));
  // trained, target and policy variables alike: the recorded plans binding them keep their bind groups
  assert.equal(r.keptBuffers, r.variables);
  assert.deepEqual(r.updates, [3, 3]);
  assert.deepEqual(r.steps.gpu, r.steps.cpu);
  assert.ok(r.moved > 1e-3, `the trainable weights left their targets (${r.moved})`);
  for (const [k, d] of Object.entries(r.diffs)) assert.ok(d <= 1e-4, `${k}: rel. diff ${d}`);
  r.gradNorms.cpu.forEach((n, i) => assert.ok(Math.abs(r.gradNorms.gpu[i] - n) <= 1e-5 * n, `grad norm ${i}: ${r.gradNorms.gpu[i]} vs ${n}`));
});

test("fused GELU and LayerNorm on webgpu: forward and gradients within 1e-5 of ops.ts's tfjs compositions on cpu", { skip }, () => {
  const r = runCase<{ diffs: Record<string, number> }>("gelu-layernorm");
  assert.equal(Object.keys(r.diffs).length, 2 + 5 * 4, Object.keys(r.diffs).join(", "));
  for (const [k, d] of Object.entries(r.diffs)) assert.ok(d <= 1e-5, `${k}: rel. diff ${d}`);
});

test("fused residual + dropout (+ LayerNorm, BERT's sub-layer end) on webgpu: forward and gradients within 1e-5 of the tfjs composition on cpu, the same mask", { skip }, () => {
  const r = runCase<{ diffs: Record<string, number>; dropped: number }>("residual-layernorm");
  assert.equal(Object.keys(r.diffs).length, 4 * 5 + 4 * 3, Object.keys(r.diffs).join(", "));
  for (const [k, d] of Object.entries(r.diffs)) assert.ok(d <= 1e-5, `${k}: rel. diff ${d}`);
  assert.ok(r.dropped > 20, `${r.dropped} entries dropped at p 0.1 of 888`);
});

test("fused attention on webgpu (q, k, v separate and packed): forward and gradients within 1e-5 of attentionDense's tfjs ops on cpu, with PAD keys and dropout", { skip }, () => {
  const r = runCase<{ diffs: Record<string, number> }>("attention");
  assert.equal(Object.keys(r.diffs).length, 4 * (2 * 4 + 2 * 2), Object.keys(r.diffs).join(", "));
  for (const [k, d] of Object.entries(r.diffs)) assert.ok(d <= 1e-5, `${k}: rel. diff ${d}`);
});

test("fused twin-head Q, soft value and policy top-k on webgpu equal device-scoring.ts's tfjs ops on cpu (padding, rotary, ties, α 0 and > 0)", { skip }, () => {
  const r = runCase<{ diffs: Record<string, number>; padding: Record<string, boolean>; wide: { diffs: number[]; dispatches: number[] } }>("twin-q");
  // 9,000 candidates: tfjs's topk (past the fused bound), 100: one fused program; both equal cpu
  r.wide.diffs.forEach((d, i) => assert.ok(d <= 1e-5, `wide/narrow row output ${i}: rel. diff ${d}`));
  assert.ok(r.wide.dispatches[0] > 1, `9,000 candidates: ${r.wide.dispatches[0]} dispatches`);
  assert.equal(r.wide.dispatches[1], 1, "100 candidates: one program");
  assert.equal(Object.keys(r.diffs).length, 2 * 11, Object.keys(r.diffs).join(", "));
  for (const [k, d] of Object.entries(r.diffs)) assert.ok(d <= 1e-5, `${k}: rel. diff ${d}`);
  for (const [k, same] of Object.entries(r.padding)) assert.ok(same, `${k}: −∞ padding at other places`);
});

test("scores and the policy's top-k (a rollout step), scores and the soft value (the deferred targets) each as ONE program on webgpu: the same bits as the two programs (ties, padding, rotary, 150 candidates per row, α 0 and > 0)", { skip }, () => {
  const r = runCase<{ diffs: Record<string, number>; dispatches: Record<string, number> }>("score-then-row");
  assert.equal(Object.keys(r.diffs).length, 8, Object.keys(r.diffs).join(", "));
  for (const [k, d] of Object.entries(r.diffs)) assert.equal(d, 0, `${k}: differs by ${d}`);
  for (const [k, n] of Object.entries(r.dispatches)) assert.equal(n, 1, `${k}: ${n} dispatches`);
  assert.equal(Object.keys(r.dispatches).length, 4);
});

test("fused clipping norm on webgpu equals the tfjs ops' norm and factor on cpu, in few programs, also over more tensors than one finishing program takes (BERT-base's 400)", { skip }, () => {
  const r = runCase<{ cpu: number[]; gpu: number[]; dispatches: number; manyDispatches: number; limit: number; tensors: number; many: number }>("global-norm");
  const [norm, coef, norm2, coef2, norm3, coef3] = r.gpu;
  assert.ok(Math.abs(norm - r.cpu[0]) <= 1e-6 * r.cpu[0], `norm ${norm} vs ${r.cpu[0]}`);
  assert.ok(Math.abs(coef - r.cpu[1]) <= 1e-6 * r.cpu[1] && coef < 1, `factor ${coef} vs ${r.cpu[1]}`);
  assert.equal(norm2, norm);
  assert.equal(coef2, 1);
  // ceil(tensors / (limit − 1)) sum-of-squares programs, then one for the norm and the factor
  assert.equal(r.dispatches, Math.ceil(r.tensors / (r.limit - 1)) + 1);
  assert.ok(Math.abs(norm3 - r.cpu[4]) <= 1e-6 * r.cpu[4], `400 tensors: norm ${norm3} vs ${r.cpu[4]}`);
  assert.ok(Math.abs(coef3 - r.cpu[5]) <= 1e-6 * r.cpu[5] && coef3 < 1, `400 tensors: factor ${coef3} vs ${r.cpu[5]}`);
  // 400 tensors make more groups than the finishing program's limit − 2 inputs: those partials are
  // summed in groups of limit − 1 first (one level where the limit is 16)
  const groups = Math.ceil(r.many / (r.limit - 1));
  assert.ok(groups > r.limit - 2, `${groups} groups fit one finishing program: the case tests nothing`);
  assert.equal(r.manyDispatches, groups + Math.ceil(groups / (r.limit - 1)) + 1);
});

test("fused twin-head loss on webgpu: loss and gradients within 1e-5 of qfunction.ts twinLoss's tfjs ops on cpu, as a tfjs op and scaled without the tape (the learner's device pass)", { skip }, () => {
  const r = runCase<{ diffs: Record<string, number>; bitsDiffer: Record<string, number> }>("twin-loss");
  assert.equal(Object.keys(r.diffs).length, 2 * 3 * 3, Object.keys(r.diffs).join(", "));
  for (const [k, d] of Object.entries(r.diffs)) assert.ok(d <= 1e-5, `${k}: rel. diff ${d}`);
  // the rotation inside the loss's programs gives the bits of its own programs around the loss
  assert.deepEqual(r.bitsDiffer, { "B 70": 0, "B 3": 0 });
});

test("fused rotary rotation on webgpu: forward and gradient within 1e-6 of rotateTf's tfjs ops on cpu", { skip }, () => {
  const r = runCase<{ forward: number; grad: number }>("rotary");
  for (const [k, d] of Object.entries(r)) assert.ok(d <= 1e-6, `${k} rel. diff ${d}`);
});

test("GPU time per phase from timestamp queries: each phase's passes (tfjs's and our recorded ones) timed apart, growing with the work, within the wall time; nothing timed after it stops", { skip }, () => {
  const r = runCase<{ on: boolean; ms: Record<string, number>; passes: number; untimed: number; wall: number; afterPasses: number }>("gpu-timing");
  assert.equal(r.on, true, "lavapipe grants timestamp-query");
  assert.deepEqual(Object.keys(r.ms).sort(), ["encode", "target", "update"], "only the phases that ran GPU work");
  for (const [p, ms] of Object.entries(r.ms)) assert.ok(ms > 0, `${p}: ${ms} ms`);
  // eight times the matMuls: well over twice the time (timestamps are not rounded to 0.1 ms)
  assert.ok(r.ms.update > 2 * r.ms.encode, `update ${r.ms.update} ms vs encode ${r.ms.encode} ms`);
  const sum = Object.values(r.ms).reduce((x, y) => x + y, 0);
  assert.ok(sum <= r.wall, `GPU ${sum} ms inside passes > ${r.wall} ms of wall time`);
  assert.ok(r.passes >= 3, `${r.passes} passes`);
  assert.equal(r.untimed, 0);
  assert.equal(r.afterPasses, 0);
});

test("GPU timing past one query set: 2,348 passes, each timed (the last 300, the update's, in a second query set made on demand), none left untimed", { skip }, () => {
  const r = runCase<{ sum: number; ms: Record<string, number>; passes: number; untimed: number; additions: number }>("gpu-timing-many");
  assert.equal(r.sum, r.additions + 1, "the additions ran");
  assert.equal(r.untimed, 0);
  assert.ok(r.passes >= r.additions, `${r.passes} passes for ${r.additions} additions`);
  for (const p of ["encode", "eval", "update"]) assert.ok((r.ms[p] ?? 0) > 0, `${p}: ${r.ms[p]} ms`);
});

test("GPU time per program (timing byProgram): each program of ours in a pass of its own, timed under its key, the recorded forward's too; the keys and counts are the programs dispatched; without byProgram the forward's programs share a pass", { skip }, () => {
  type Timed = { ms: Record<string, number>; byProgram: Record<string, { ms: number; passes: number }>; passes: number; told: Record<string, number> };
  const { apart, together } = runCase<{ apart: Timed; together: Timed }>("gpu-timing-programs");
  // the 2-layer forward of few rows (layer 0's QKV with the embedding, per layer the layer tail
  // with its attention, the pooling: 4 programs) and GELU + LayerNorm: 6 programs, 6 passes
  assert.equal(apart.passes, 6);
  assert.deepEqual(Object.fromEntries(Object.entries(apart.byProgram).map(([k, v]) => [k, v.passes])), apart.told, "one pass per program, under its key");
  for (const [k, v] of Object.entries(apart.byProgram)) assert.ok(v.ms > 0, `${k}: ${v.ms} ms`);
  const sum = (r: Record<string, number>) => Object.values(r).reduce((x, y) => x + y, 0);
  const byProgram = sum(Object.fromEntries(Object.entries(apart.byProgram).map(([k, v]) => [k, v.ms])));
  assert.ok(Math.abs(byProgram - sum(apart.ms)) < 1e-6, `per program ${byProgram} ms vs per phase ${sum(apart.ms)} ms`);
  assert.deepEqual(together.byProgram, {});
  assert.equal(together.passes, 2, "the recorded forward's programs in one pass, GELU and LayerNorm in tfjs's pass");
  assert.deepEqual(together.told, apart.told);
});

test("joinRows on webgpu (buffer copies, no kernel) equals tf.concat on cpu: empty and one-row blocks, inputs disposed before the read, a program reading the result; joinFlat joins int32 tensors of any shape end to end and refuses mixed dtypes; gatherRows (one program, no tfjs kernel) equals tf.gather: rows out of order, repeated, none; a row outside is refused", { skip }, () => {
  const r = runCase<{ rows: number; joined: number; read: number; gatheredRows: number; gathered: number; noneShape: number[]; outside: string; gatherKernels: number; gatherDispatches: number; flat: number[]; flatCpu: number[]; mixed: string }>("join-rows");
  assert.equal(r.flat.length, 11);
  assert.deepEqual(r.flat, r.flatCpu);
  assert.equal(r.mixed, "joinFlat: float32 among int32");
  assert.equal(r.rows, 74);
  assert.equal(r.joined, 0);
  assert.equal(r.read, 0);
  assert.equal(r.gatheredRows, 90);
  assert.equal(r.gathered, 0);
  assert.deepEqual(r.noneShape, [0, 12]);
  assert.equal(r.outside, "gatherRows: row 74 outside [0, 74)");
  assert.deepEqual([r.gatherKernels, r.gatherDispatches], [0, 1]);
});

test("accumulateFused on webgpu (in place, no tfjs kernel) equals tfjs's Add on cpu: 19 tensors (a scalar, an empty one) in ⌈19 / ⌊limit/2⌋⌉ programs; a tensor sharing its buffer gets its own (its clone keeps its values), one read before returns the new sums; the added tensors are released", { skip }, () => {
  const r = runCase<{ diffs: number[]; sizes: number[]; kept: number; released: number; sameBuffers: boolean[]; dispatches: number; kernels: number; limit: number }>("accumulate");
  assert.equal(r.diffs.length, 19);
  r.diffs.forEach((d, i) => assert.equal(d, 0, `tensor ${i}: rel. diff ${d}`));
  assert.equal(r.sizes[3], 0);
  assert.equal(r.kept, 0);
  assert.equal(r.released, 19);
  // tensor 0 shared its buffer with a clone: copied; the others summed where they were
  assert.deepEqual(r.sameBuffers, [false, ...Array(18).fill(true)]);
  assert.equal(r.kernels, 0);
  // the empty tensor takes no slot
  assert.equal(r.dispatches, Math.ceil(18 / Math.floor(r.limit / 2)));
});

test("tiled matMul on webgpu (every tile of MATMUL_TILES): aligned and ragged shapes, K of 1, broadcast batches, bias, Aᵀ and Bᵀ; linear takes it only without a gradient; all within 1e-5 of the cpu ops", { skip }, () => {
  const r = runCase<{ diffs: Record<string, number>; aligned: Record<string, boolean>; programs: Record<string, string[]> }>("matmul");
  // per tile (11, four of them prefetching the next slice): 6 shapes, and the 3 two-dimensional ones with Aᵀ and with Bᵀ
  assert.equal(Object.keys(r.diffs).length, 11 * (6 + 3 * 2) + 2 * 3, Object.keys(r.diffs).join(", "));
  assert.ok(Object.keys(r.aligned).some((k) => k.split(" ")[0].endsWith("-pf") && r.aligned[k]), "a prefetching tile on an aligned shape");
  assert.deepEqual(r.programs, {
    // 24 blocks of 64×64: the tile for few blocks
    "nograd 256x128·128x384+b": ["fused matmul-32x32-k16-t8x8-aligned-bias"],
    "grad 256x128·128x384+b": ["BatchMatMul", "_FusedMatMul"],
    "nograd 37x29·29x53+b": ["_FusedMatMul"],
    "grad 37x29·29x53+b": ["BatchMatMul", "_FusedMatMul"],
  });
  for (const [k, d] of Object.entries(r.diffs)) assert.ok(d <= 1e-5, `${k}: rel. diff ${d}`);
  // both programs ran: the vec4 one for tile multiples, the checked one for the rest
  const aligned = Object.values(r.aligned).filter(Boolean).length;
  assert.ok(aligned > 0 && aligned < Object.keys(r.aligned).length, `aligned shapes: ${aligned}`);
});

test("a product that takes an activation's backward in (GELU erf and tanh, ReLU; aligned and checked tiles) gives the bits of the product and the activation's gradient program apart, within 1e-5 of the cpu gradient", { skip }, () => {
  const r = runCase<Record<string, { bitsDiffer: number; diff: number; aligned: boolean }>>("act-grad");
  assert.equal(Object.keys(r).length, 6, Object.keys(r).join(", "));
  assert.deepEqual(Object.values(r).map((c) => c.aligned), [true, false, true, false, true, false]);
  for (const [k, c] of Object.entries(r)) {
    assert.equal(c.bitsDiffer, 0, `${k}: ${c.bitsDiffer} values differ from the two programs'`);
    assert.ok(c.diff <= 1e-5, `${k}: rel. diff ${c.diff} from the cpu gradient`);
  }
});

test("dropout masks drawn on webgpu equal ops.ts dropoutMask's host masks value for value (same seeds, odd sizes, rate 0), and leave the Rng in the same state", { skip }, () => {
  const r = runCase<Record<string, { mismatches: number; dropped: number; size: number; rngAfter: boolean }>>("dropout");
  assert.equal(Object.keys(r).length, 5);
  for (const [k, c] of Object.entries(r)) {
    assert.equal(c.mismatches, 0, `${k}: ${c.mismatches} values differ`);
    assert.ok(c.rngAfter, `${k}: the Rng moved on differently`);
  }
  // the masks drop what they should (the big ones within 1 %)
  assert.equal(r["64 at 0"].dropped, 0);
  for (const k of ["100001 at 0.1", "327683 at 0.3"]) assert.ok(Math.abs(r[k].dropped / r[k].size - Number(k.split(" at ")[1])) < 0.01, `${k}: dropped ${r[k].dropped}`);
});

test("fused greedy pick on webgpu (two programs, any row length, several rows at once) equals device-scoring.ts's tfjs ops on cpu: top-K indices with ties, q, q1, q2 and V", { skip }, () => {
  const r = runCase<{ name: string; picks: number; sameIndices: boolean; diff: number; vDiff: number; v: number; dispatches: number }[]>("greedy-pick");
  assert.equal(r.length, 16 + 2 * 4 * 3);
  for (const x of r) {
    assert.ok(x.sameIndices, `${x.name}: top-K indices differ`);
    assert.ok(x.diff <= 1e-6, `${x.name}: q/q1/q2 rel. diff ${x.diff}`);
    assert.ok(x.vDiff <= 1e-5, `${x.name}: V rel. diff ${x.vDiff} (cpu ${x.v})`);
    assert.equal(x.dispatches, 2, `${x.name}: two programs`);
  }
  // the row of 7 has 2 available candidates: K 5 logs those two
  assert.equal(r.find((x) => x.name.startsWith("n 7 K 5 per_head"))?.picks, 2);
  assert.ok(r.filter((x) => x.name.startsWith("n 300000")).every((x) => x.picks === Math.min(32, Number(x.name.split(" ")[3]))), "a full top-K at 300,000");
  // each row of a batch its own: the padded row's picks all from its first 60 %, V finite in every row
  const rows = r.filter((x) => x.name.startsWith("3 rows"));
  assert.ok(rows.every((x) => x.picks > 0 && (x.name.includes("no V") || Number.isFinite(x.v))), JSON.stringify(rows.map((x) => [x.name, x.picks, x.v])));
});
