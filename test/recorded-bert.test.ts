/**
 * The hf BERT encoder's no-grad forward (model/webgpu/recorded-bert.ts) and taped forward +
 * backward (recorded-bert-train.ts) recorded as our own WebGPU programs on lavapipe, against the
 * tfjs path they replace (bertDense and the masked mean, under tfjs autograd for the gradients). Each case runs in a fresh process (recorded-bert-cases.ts); machines
 * without an adapter skip, except under QRAG_REQUIRE_WEBGPU=1 (CI).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { kSplit } from "../server/qrag/model/webgpu/split-k.ts";
import { webgpuSkip as skip } from "./webgpu-skip.ts";
import { runCaseFile } from "./device-case-runner.ts";
import { assertPlanBudget, type PlanBudgetResult } from "./plan-budget.ts";

const runCase = <T>(name: string): T => runCaseFile<T>("test/recorded-bert-cases.ts", name);

test("recorded BERT forward equals the tfjs path within 1e-5: eval and train mode (same dropout masks), PAD and odd sizes, erf / tanh GELU and ReLU, bert-tiny; Q, K and V in one program (aligned and checked loads); the residual + LayerNorm in the product's epilogue (d ≤ 128; the last one pooling where T divides 64) and apart (d 192)", { skip }, () => {
  const r = runCase<{ diffs: Record<string, number>; rngAfter: Record<string, boolean>; trainVsEval: Record<string, number>; fusedKeys: string[]; recordedCalls: number }>("equal");
  // Q, K and V of few blocks on 32×32 tiles (aligned and checked), d 192's on the 64×64 tile (its cases with --tiny-tiles 0)
  assert.deepEqual(r.fusedKeys, ["fused matmul-32x32-k16-t8x8-aligned-bias-x3", "fused matmul-32x32-k16-t8x8-checked-bias-x3", "fused matmul-64x64-k16-t16x16-aligned-bias-x3", "fused matmul-64x64-k16-t16x16-checked-bias-resln", "fused matmul-64x64-k16-t16x16-checked-bias-resln-pool"]);
  assert.equal(Object.keys(r.diffs).length, 18, Object.keys(r.diffs).join(", "));
  for (const [k, d] of Object.entries(r.diffs)) assert.ok(d <= 1e-5, `${k}: rel. diff ${d}`);
  // both paths drew the same number of dropout keys, and dropout did change the output
  for (const [m, same] of Object.entries(r.rngAfter)) assert.ok(same, `${m}: the dropout Rngs differ after the same calls`);
  for (const [m, d] of Object.entries(r.trainVsEval)) assert.ok(d > 1e-2, `${m}: train vs eval mode: rel. diff ${d}`);
  // 18 compared calls and 2 per model (train vs eval), all recorded
  assert.equal(r.recordedCalls, 28);
});

test("BERT: fewer rows of one padded length run on a cached plan's buffers (a uniform buffer of their own), within 1e-5 of the tfjs path", { skip }, () => {
  const r = runCase<{ B: number; buffers: number; plans: number; diff: number }[]>("room");
  const own = r[0].buffers;
  assert.ok(own > 1, `a plan of its own made ${own} buffers`);
  assert.deepEqual(r.map((c) => `${c.B}:${c.buffers}/${c.plans}`), [`6:${own}/1`, "4:1/1", "5:1/1", "4:0/0"]);
  for (const c of r) assert.ok(c.diff <= 1e-5, `${c.B} rows: rel. diff ${c.diff}`);
});

test("no-grad plans: their bytes are bertForwardBytes' (within 1 %, never above it), and embedDevice's sub-batches hold no more rows than one plan's budget takes, so each is recorded (100 rows under a budget of 40: 40 + 40 + 20)", { skip }, () => {
  assertPlanBudget(runCase<PlanBudgetResult>("forwardRows"), 6, 48);
});

test("embedDevice runs rows of different lengths apart (shortest first, each group padded to its own length) and puts them back: the same values as one forward of the padded batch, and no tfjs kernel", { skip }, () => {
  const r = runCase<{ diff: number; rows: number; groupKernels: number; evalCalls: [number, number][]; trainCalls: [number, number][]; finite: boolean; uniformCalls: [number, number][]; fewerCalls: [number, number][] }>("lengthGroups");
  assert.equal(r.rows, 120);
  assert.equal(r.groupKernels, 0);
  assert.ok(r.diff <= 1e-6, `rel. diff ${r.diff} from the padded batch's forward`);
  // eval: the 60 short rows less 10 repeats at 16 tokens, the 60 long at 128; train: no deduplication
  assert.deepEqual(r.evalCalls, [[50, 16], [60, 128]]);
  assert.deepEqual(r.trainCalls, [[60, 16], [60, 128]]);
  assert.ok(r.finite);
  assert.deepEqual(r.uniformCalls, [[30, 128]], "one padded length: one forward");
  assert.deepEqual(r.fewerCalls, [[15, 16], [15, 128]], "15 rows × 112 positions saved: worth a forward of their own");
});

test("gpu_storage f16: the recorded BERT forward with f16 activations is within 3e-3 of f32 (erf / tanh GELU, ReLU, bert-tiny; eval and train mode); taped, its loss within 2e-3 and gradients within 3e-2", { skip }, () => {
  const r = runCase<{ diffs: Record<string, number>; taped: Record<string, { loss: number; grads: number }>; keepBytes: { made: number; estimate: number; f32: number } }>("half");
  assert.equal(Object.keys(r.diffs).length, 8);
  for (const [k, d] of Object.entries(r.diffs)) {
    assert.ok(d <= 3e-3, `${k}: rel. diff ${d} to f32`);
    assert.ok(d > 1e-5, `${k}: rel. diff ${d}: were the activations f16?`);
  }
  assert.equal(Object.keys(r.taped).length, 4);
  for (const [k, t] of Object.entries(r.taped)) {
    assert.ok(t.loss <= 2e-3, `${k} taped: loss rel. diff ${t.loss}`);
    // ReLU's gradient jumps where f16 rounding moves a value across 0: the largest differences
    assert.ok(t.grads <= 3e-2, `${k} taped: gradient rel. diff ${t.grads}`);
    assert.ok(t.grads > 1e-5, `${k} taped: gradients are f32's bits: were its activations f16?`);
  }
  // the estimate that bounds the update's passes counts f16 activations: more rows per pass
  const k = r.keepBytes;
  assert.ok(Math.abs(k.estimate - k.made) <= 0.01 * k.made, `estimated ${k.estimate} bytes, made ${k.made}`);
  assert.ok(k.made < 0.8 * k.f32, `the f16 keep plan holds ${k.made} bytes against f32's ${k.f32}`);
});

test("recorded BERT forward: one submit with its read, one dispatch per program, 0 tfjs kernels; a second call of a shape creates no buffers, bind groups or pipelines", { skip }, () => {
  type Mode = { created: { plans: number; buffers: number; bindGroups: number; pipelines: number }[]; counts: { kernels: number; fused: number; dispatches: number; submits: number }[] };
  const r = runCase<{ eval: Mode; train: Mode; layers: number }>("cache");
  for (const [mode, m] of [["eval", r.eval], ["train", r.train]] as const) {
    // embedding sum and LayerNorm, per layer 5 programs (Q, K and V in one, attention drawing its own
    // dropout mask, output + residual + LayerNorm, fc1 with GELU in its epilogue, fc2 + residual + LayerNorm), pooling
    const programs = 2 + 5 * r.layers + 1;
    for (const c of m.counts) assert.deepEqual(c, { kernels: programs, fused: programs, dispatches: programs, submits: 1 }, mode);
    assert.equal(m.created[0].plans, 1, mode);
    assert.equal(m.created[0].bindGroups, programs, mode);
    for (const c of m.created.slice(1)) assert.deepEqual(c, { plans: 0, buffers: 0, bindGroups: 0, pipelines: 0 }, mode);
  }
});

test("under a gradient tape the taped recorded BERT op runs (same value, gradients for every variable); an id outside the vocabulary takes no recorded path, taped or not", { skip }, () => {
  const r = runCase<{ tapedCalls: number; tapedTrainCalls: number; tapedRel: number; gradNames: number; vars: number; outsideCalls: number; errors: string[] }>("fallback");
  assert.equal(r.tapedCalls, 0);
  assert.equal(r.tapedTrainCalls, 1);
  assert.ok(r.tapedRel <= 1e-5, `taped forward vs tfjs path: rel. diff ${r.tapedRel}`);
  assert.equal(r.gradNames, r.vars);
  assert.equal(r.outsideCalls, 0);
  assert.equal(r.errors.length, 2);
  for (const e of r.errors) assert.match(e, /outside \[0, 300\)/);
});

test("recorded BERT backward: the loss within 1e-6 of its terms' size (Σ|y·R|) and every variable's gradient within 1e-5 of bertDense under tfjs autograd (eval and train mode with the same masks; 3×16, 5×40, 2×100, repeated ids (one in more than TOK_SEG rows), two forwards of one shape in one tape; gelu_new, relu, bert-tiny)", { skip }, () => {
  const r = runCase<{ worst: Record<string, { loss: number; grad: number; at: string }>; rngAfter: Record<string, boolean>; variables: Record<string, number>; gradNorm: Record<string, number>; trainCalls: number }>("grads");
  assert.equal(Object.keys(r.worst).length, 18, Object.keys(r.worst).join(", "));
  for (const [k, w] of Object.entries(r.worst)) {
    assert.ok(w.loss <= 1e-6, `${k}: loss diff ${w.loss} of the terms' Σ|y·R|`);
    assert.ok(w.grad <= 1e-5, `${k}: gradient of ${w.at} rel. diff ${w.grad}`);
  }
  // 5 embedding variables and 16 per layer, two layers
  for (const [m, n] of Object.entries(r.variables)) assert.equal(n, 37, m);
  for (const [m, n] of Object.entries(r.gradNorm)) assert.ok(n > 1, `${m}: the gradients are too small to compare (${n})`);
  for (const [m, same] of Object.entries(r.rngAfter)) assert.ok(same, `${m}: the dropout Rngs differ after the same calls`);
  // 18 compared calls, the "twice" pair with two forwards each
  assert.equal(r.trainCalls, 20, "the recorded path did not run for every call");
  // the random model (d 48, FFN 80) at 4×64 rows splits every weight gradient along K, Q, K and V's too: six sums, two programs
  for (const [m, n, parts] of [[48, 48, 3], [48, 48, 1], [48, 80, 1], [80, 48, 1]]) assert.ok(kSplit(m, n, 4 * 64, parts) > 1, `${m}×${n}×${parts} at 256 rows`);
});

test("recorded BERT forward+backward: one dispatch per program, 0 tfjs kernels inside, one submit; a second call creates no buffers, bind groups or pipelines; its size is the estimate that bounds it", { skip }, () => {
  const r = runCase<{ created: { plans: number; buffers: number; bindGroups: number; pipelines: number }[]; counts: { tfjsKernels: number; fused: number; submits: number }[]; kernelsInside: number; layers: number; bytes: number; estimate: number }>("trainCache");
  const L = r.layers;
  // forward (train mode): embedding sum, its LayerNorm×mask, 6 per layer (Q, K and V in one; the
  // residuals' LayerNorms in the products' epilogues; the activation a program of its own), pooling; backward:
  // 13 per layer (each LN's dx with its dγ, dβ as partial sums, the last layer's reading the pooling's gradient; dX for
  // fc2 (times the activation's gradient), fc1 and the output, their dW with db's column sums in one program; dX of Q, K,
  // V as 3 chained products, their dW and db in one; attention's 2; the sums of the layer's partials), the embedding's
  // mask, LN dx, the sums of its partials, type, positions, tokens. Independent neighbours run as one program (fused-steps.ts):
  // per layer attention's dK/dV beside Q's dX product (it reads dQ, the other attention program's); layer 0's sums beside
  // the embedding's mask program, the embedding LayerNorm's sums beside the type table's column sum
  const programs = 3 + 6 * L + (6 + 13 * L) - (L + 2);
  for (const c of r.counts) {
    assert.equal(c.fused, programs);
    // the tfjs kernels of the loss around the op: the op itself, Sum and its gradient's kernels
    assert.ok(c.tfjsKernels <= 5, `${c.tfjsKernels} tfjs kernels`);
    assert.equal(c.submits, 1);
  }
  assert.equal(r.kernelsInside, 0);
  assert.equal(r.created[0].plans, 1);
  for (const c of r.created.slice(1)) assert.deepEqual(c, { plans: 0, buffers: 0, bindGroups: 0, pipelines: 0 });
  // the estimate that refuses a plan over the cache's byte bound before making it is the plan's size
  assert.ok(Math.abs(r.estimate - r.bytes) <= 0.01 * r.bytes, `estimated ${r.estimate} bytes, made ${r.bytes}`);
});

test("the plan cache's two byte budgets: a keep plan over the no-grad bound is recorded and evicts no no-grad plan; one over the keep bound is not; one awaiting its backward is not evicted", { skip }, () => {
  const r = runCase<{ firstEval: number; evalBytes: number; keepBig: number; recorded: boolean[]; evalAgain: number; gradNorms: number[]; bigAgain: number; overKeep: boolean }>("bounds");
  assert.equal(r.firstEval, 1);
  assert.ok(r.keepBig > r.evalBytes, `the keep plan (${r.keepBig} bytes) is over the no-grad bound (${r.evalBytes})`);
  assert.deepEqual(r.recorded, [true, true]);
  assert.equal(r.evalAgain, 0, "the no-grad plan was evicted by a keep plan");
  for (const n of r.gradNorms) assert.ok(Number.isFinite(n) && n > 0, `gradient norm ${n}`);
  assert.equal(r.bigAgain, 1, "the freed keep plan was kept over the bound");
  assert.equal(r.overKeep, false);
});

test("a batch larger than the keep budget holds is split into recorded passes (pass size 0, budget for 3 rows of 6): the same update as passes of 3 asked for", { skip }, () => {
  const r = runCase<{ diffs: Record<string, number>; trainCalls: number[]; updates: number[] }>("autoPasses");
  assert.deepEqual(r.updates, [2, 2]);
  // 4 micro-steps × 2 passes × 2 encoders, every one recorded
  assert.deepEqual(r.trainCalls, [16, 16]);
  for (const [k, d] of Object.entries(r.diffs)) assert.ok(d <= 1e-6, `${k}: rel. diff ${d}`);
});

test("recorded BERT forward binds assigned weights, and a transformer of the same batch shape interleaved with it keeps its own plans: each equals its tfjs path", { skip }, () => {
  const r = runCase<{ diffs: Record<string, number>; changed: number; newBindGroups: number; plansMade: number }>("shared");
  assert.equal(Object.keys(r.diffs).length, 6);
  for (const [k, d] of Object.entries(r.diffs)) assert.ok(d <= 1e-5, `${k}: rel. diff ${d}`);
  assert.ok(r.changed > 1e-2, `the output did not change with the weights (${r.changed})`);
  assert.ok(r.newBindGroups > 0, "no bind group was made again");
  // BERT's train-mode plan and the transformer's eval and train plans (BERT's eval plan was made before)
  assert.equal(r.plansMade, 3);
});

test("the Learner with hf BERT encoders (passes of 3, 2 micro-steps an update, dropout on): every weight after 2 AdamW steps equals the tfjs path's within 1e-5 (the key biases, whose gradient is rounding noise, within 1e-4); every taped forward recorded; no tfjs kernel in a micro-step (the gradient sums our programs)", { skip }, () => {
  const r = runCase<{ diffs: Record<string, number>; keyBiasDiffs: Record<string, number>; moved: number; trainCalls: number; updates: number[]; stepKernels: number }>("learner");
  assert.equal(r.stepKernels, 0);
  assert.deepEqual(r.updates, [2, 2]);
  assert.ok(r.moved > 1e-3, `the trainable weights left their targets (${r.moved})`);
  for (const [k, d] of Object.entries(r.diffs)) assert.ok(d <= 1e-5, `${k}: rel. diff ${d}`);
  for (const [k, d] of Object.entries(r.keyBiasDiffs)) assert.ok(d <= 1e-4, `${k} key biases: rel. diff ${d}`);
  // 4 micro-steps × 2 passes × the state and action encoders
  assert.equal(r.trainCalls, 16);
});
