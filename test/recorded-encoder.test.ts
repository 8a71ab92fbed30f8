/**
 * The transformer's no-grad forward recorded as our own WebGPU programs (into tfjs's command
 * encoder, no submit of its own; model/webgpu/recorded-encoder.ts) on lavapipe, against the tfjs path it replaces. Each
 * case runs in a fresh process (recorded-encoder-cases.ts); machines without an adapter skip,
 * except under QRAG_REQUIRE_WEBGPU=1 (CI).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { webgpuSkip as skip } from "./webgpu-skip.ts";
import { runCaseFile } from "./device-case-runner.ts";
import { assertPlanBudget, type PlanBudgetResult } from "./plan-budget.ts";

const runCase = <T>(name: string): T => runCaseFile<T>("test/recorded-encoder-cases.ts", name);

test("no-grad plans: their bytes are forwardBytes' (within 1 %, never above it), and embedDevice's sub-batches hold no more rows than one plan's budget takes, so each is recorded (100 rows under a budget of 40: 40 + 40 + 20)", { skip }, () => {
  const r = runCase<PlanBudgetResult & { tails: boolean[] }>("forwardRows");
  assert.deepEqual(r.tails, [true, true, true], "few rows: the layer tail's plans");
  assertPlanBudget(r, 3, 32);
});

test("recorded encoder forward equals the tfjs path within 1e-5: eval and train mode (same dropout masks), T 16/64/256, odd B; the residual + LayerNorm fused into the product before it (dim 32; dim 128, aligned), the pooling with the last one (T ≤ 64), and apart (dim 192, T 256); the embedding in layer 0's QKV (to dim 256) and apart (dim 320)", { skip }, () => {
  const r = runCase<{ diffs: Record<string, number>; fuses: Record<string, boolean>; keys: Record<string, string[]>; embeds: Record<string, string[]>; rngAfter: boolean; trainVsEval: number; recordedCalls: number }>("equal");
  assert.deepEqual(r.fuses, { 32: true, 128: true, 192: false, 320: false });
  // the embedding and its LayerNorm: layer 0's QKV prologue up to d 256, a program of their own past it
  // (on the 32×32 tile for dim 128's few blocks, the 64×64 one for dim 192's, run with --tiny-tiles 0)
  assert.deepEqual(r.embeds, { 128: ["fused matmul-32x32-k16-t8x8-aligned-bias-embed-ln"], 192: ["fused matmul-64x64-k16-t16x16-aligned-bias-embed-ln"], 320: ["fused qrag_embed_ln_fwd_64"] });
  // dim 128, 64 rows: the fused program with aligned loads (the last one pooling too); dim 192: residual-layernorm.ts's program
  assert.deepEqual(r.keys[128], ["fused matmul-64x128-k8-t16x8-aligned-bias-resln", "fused matmul-64x128-k8-t16x8-aligned-bias-resln-pool"]);
  assert.deepEqual(r.keys[192], ["fused qrag_res_ln_fwd_64"]);
  assert.deepEqual(r.keys[320], ["fused qrag_res_ln_fwd_64"]);
  assert.equal(Object.keys(r.diffs).length, 14, Object.keys(r.diffs).join(", "));
  for (const [k, d] of Object.entries(r.diffs)) assert.ok(d <= 1e-5, `${k}: rel. diff ${d}`);
  // both paths drew the same number of dropout keys, and dropout did change the output
  assert.ok(r.rngAfter, "the dropout Rngs differ after the same calls");
  assert.ok(r.trainVsEval > 1e-2, `train vs eval mode: rel. diff ${r.trainVsEval}`);
  assert.equal(r.recordedCalls, 16);
});

test("the layer tail (one program a layer after its QKV, the attention with it, for few rows) gives the separate programs' bits, eval and train mode, dims 4/32/128 (one thread a query; 4 key lanes), whole and partial row blocks, and is within 1e-5 of the tfjs path; a forward of 2 layers runs 4 programs; past TAIL_MAX_ROWS the separate ones", { skip }, () => {
  const r = runCase<{ out: { dim: number; shape: string; training: boolean; vsSeparate: number; vsTfjs: number | null; programs: string[] }[]; wide: { rows: number; programs: string[] } }>("tail");
  assert.equal(r.out.length, 16);
  for (const c of r.out) {
    const at = `dim ${c.dim} ${c.shape} ${c.training ? "train" : "eval"}`;
    assert.equal(c.vsSeparate, 0, `${at}: the tail differs from the separate programs (rel. ${c.vsSeparate})`);
    if (c.vsTfjs !== null) assert.ok(c.vsTfjs <= 1e-5, `${at}: rel. diff ${c.vsTfjs} from the tfjs path`);
    // heads of d/4 (4 heads); key lanes where attention.ts splits a query's keys (d_head ≥ 2: here all but d 4's)
    const head = `qrag_layer_tail_${c.dim}_${4 * c.dim}_${c.dim / 4}${c.dim > 4 ? "_l4" : ""}`;
    assert.deepEqual(c.programs.filter((p) => p.startsWith("qrag_layer_tail_")), [`${head}×1`, `${head}_last×1`], at);
    assert.ok(!c.programs.some((p) => p.startsWith("qrag_attn_fwd")), `${at}: an attention program of its own`);
    const total = c.programs.reduce((a, p) => a + Number(p.split("×").at(-1)), 0);
    assert.equal(total, 4, `${at}: ${c.programs.join(", ")}`);
  }
  assert.equal(r.out.filter((c) => c.vsTfjs !== null).length, 2, "the tfjs path on one shape, both modes");
  assert.ok(r.wide.rows > 2048);
  assert.ok(!r.wide.programs.some((p) => p.includes("layer_tail")) && r.wide.programs.some((p) => p.includes("resln")), r.wide.programs.join(", "));
});

test("fewer rows of one padded length run on a cached plan's buffers (a uniform buffer of their own), eval and train mode, within 1e-5 of the tfjs path; evicting that plan takes the plans on its buffers along, and their shape then builds anew", { skip }, () => {
  const r = runCase<{ calls: { B: number; training: boolean; buffers: number; plans: number; diff: number }[]; rngAfter: boolean }>("room");
  const own = r.calls[0].buffers;
  assert.ok(own > 1, `a plan of its own made ${own} buffers`);
  const made = r.calls.map((c) => `${c.B}${c.training ? "t" : "e"}:${c.buffers === own ? "own" : c.buffers}/${c.plans}`);
  // 6 rows; 4 on its buffers; 5 in train mode (another family) its own; both again cached; 3 in
  // train mode on 5's; a plan of 64 tokens evicting the others; 4 rows of 16 again: its own
  assert.deepEqual(made, ["6e:own/1", "4e:1/1", "5t:own/1", "6e:0/0", "4e:0/0", "3t:1/1", "6e:own/1", "4e:own/1"]);
  for (const c of r.calls) assert.ok(c.diff <= 1e-5, `${c.B} rows (${c.training ? "train" : "eval"}): rel. diff ${c.diff}`);
  assert.ok(r.rngAfter, "the dropout Rngs differ after the same calls");
});

test("recorded encoder forward: one submit with its read, one dispatch per program, 0 tfjs kernels; a second call of a shape creates no buffers, bind groups or pipelines", { skip }, () => {
  const r = runCase<{ created: { plans: number; buffers: number; bindGroups: number; pipelines: number }[]; counts: { kernels: number; fused: number; dispatches: number; submits: number }[]; layers: number; fuses: boolean }>("cache");
  // 384 rows, few enough for the layer tail: layer 0's QKV with the embedding and its LayerNorm
  // as its prologue, then per layer the tail (its attention drawing its own dropout mask, the
  // next layer's QKV), then the pooling
  assert.ok(r.fuses, "dim 32: the residual + LayerNorm is the product's epilogue");
  const programs = r.layers + 2;
  for (const c of r.counts) assert.deepEqual(c, { kernels: programs, fused: programs, dispatches: programs, submits: 1 });
  assert.equal(r.created[0].plans, 1);
  assert.equal(r.created[0].bindGroups, programs);
  for (const c of r.created.slice(1)) assert.deepEqual(c, { plans: 0, buffers: 0, bindGroups: 0, pipelines: 0 });
});

test("recorded encoder forward follows assigned weights (new GPU buffers): equal to the tfjs path after every variable is assigned", { skip }, () => {
  const r = runCase<{ diff: number; changed: number; newBindGroups: number }>("assign");
  assert.ok(r.diff <= 1e-5, `rel. diff ${r.diff}`);
  assert.ok(r.changed > 1e-2, `the output did not change with the weights (${r.changed})`);
  assert.ok(r.newBindGroups > 0, "no bind group was made again");
});

test("recorded calls left pending in tfjs's command encoder: two of one shape, one after a weight assign, more shapes than the plan cache keeps, and inputs past the staging ring (a submit between; a larger ring) each equal the call read alone", { skip }, () => {
  const r = runCase<{ deviceError: string | null; sameShape: number[]; distinct: number; afterAssign: number; assignChanged: number; evicted: number[]; staged: number[]; plansMade: number }>("pending");
  assert.equal(r.deviceError, null, "no WebGPU validation error (a plan's buffers destroyed under a pending call)");
  assert.ok(r.distinct > 1e-2, `the two batches differ (${r.distinct})`);
  r.sameShape.forEach((d, i) => assert.ok(d <= 1e-6, `same shape, call ${i + 1}: rel. diff ${d}`));
  assert.ok(r.assignChanged > 1e-2, `the assign changed the output (${r.assignChanged})`);
  assert.ok(r.afterAssign <= 1e-6, `after the assign: rel. diff ${r.afterAssign}`);
  assert.equal(r.evicted.length, 18);
  r.evicted.forEach((d, i) => assert.ok(d <= 1e-6, `shape ${i + 1}×32 pending with evictions: rel. diff ${d}`));
  assert.equal(r.staged.length, 5);
  r.staged.forEach((d, i) => assert.ok(d <= 1e-6, `inputs through the staging ring, call ${i + 1}: rel. diff ${d}`));
  assert.ok(r.plansMade >= 2, `plans evicted and made again while calls were pending (${r.plansMade})`);
});

test("eval encode of texts, streamed (embedTextsDevice): the same values as packing them all first (0 difference), each slice packed with nothing recorded still waiting for the GPU", { skip }, () => {
  const r = runCase<{ maxAbs: number; rows: number; pendingAtPack: boolean[]; forwards: number; spread: number }>("texts");
  assert.equal(r.rows, 5600);
  assert.equal(r.maxAbs, 0, "embeddings differ from embedDevice(packActions(texts))");
  assert.ok(r.spread > 0.1, `distinct texts gave near-equal embeddings (${r.spread})`);
  // 4,805 distinct texts: the first slice of 4,096, then 512 (the rows 65,536 tokens hold at 128), then the last 197
  assert.equal(r.pendingAtPack.length, 3, `packed in ${r.pendingAtPack.length} slice(s)`);
  assert.deepEqual(r.pendingAtPack, r.pendingAtPack.map(() => false), "a slice was packed while recorded work still waited in tfjs's encoder");
  assert.ok(r.forwards >= r.pendingAtPack.length, `${r.forwards} recorded forwards`);
});

test("gpu_storage f16: the recorded forward stores its activations as f16 (shader-f16 on lavapipe): no-grad within 3e-3 of f32 in about half the plan bytes; taped (5×33, and 5×64 with its weight gradients split along K), loss and gradients within 2e-2", { skip }, () => {
  const r = runCase<{ shaderF16: boolean; diffs: Record<string, number>; bytes: Record<string, number>; keys: string[]; tapedLossDiff: number; tapedGradDiffs: number[]; tapedBytes: number }>("half");
  assert.ok(r.shaderF16, "the device was made without shader-f16 although the adapter offers it");
  assert.equal(Object.keys(r.diffs).length, 6);
  for (const [k, d] of Object.entries(r.diffs)) {
    assert.ok(d <= 3e-3, `${k}: rel. diff ${d} to f32`);
    // f16 rounding shows (the f32 programs give the same bits on the same weights)
    assert.ok(d > 1e-5, `${k}: rel. diff ${d}: were the activations f16?`);
  }
  for (const [k, ratio] of Object.entries(r.bytes)) assert.ok(ratio < 0.6, `${k}: the f16 plan holds ${ratio.toFixed(2)}× the f32 plan's bytes`);
  assert.equal(r.keys.length, 6, r.keys.join(", "));
  for (const k of r.keys) assert.match(k, /-h16$/);
  // the taped forward keeps f16 activations for its backward (the gradients' arithmetic f32)
  assert.ok(r.tapedLossDiff <= 2e-2 && r.tapedLossDiff > 0, `taped: loss rel. diff ${r.tapedLossDiff}`);
  assert.equal(r.tapedGradDiffs.length, 28);
  r.tapedGradDiffs.forEach((d, i) => assert.ok(d <= 2e-2, `taped: gradient of variable ${i}: rel. diff ${d}`));
  assert.ok(Math.max(...r.tapedGradDiffs) > 1e-5, "taped: the gradients are f32's bits: were its activations f16?");
  assert.ok(r.tapedBytes < 0.8, `taped: the f16 keep plan holds ${r.tapedBytes.toFixed(2)}× the f32 one's bytes`);
});

test("two encoders' forwards recorded together (recordJointly, fused-steps.ts): their programs joined where they may be, every output bit as each alone; a tfjs op inside the scope reading a waiting forward's output sees its values (the forward is recorded first)", { skip }, () => {
  const r = runCase<{ differing: number; joint: number; dispatches: number; plusDiff: number }>("joint");
  assert.equal(r.differing, 0);
  // the two 2-layer forwards: 10 programs each alone (embedding + QKV; per layer attention, proj + LN, fc1, fc2 + LN; layer 1's QKV; the last LN pools)
  assert.ok(r.joint >= 4 && r.dispatches === 20 - r.joint, JSON.stringify(r));
  assert.ok(r.plusDiff <= 1e-6, `a tfjs op read the forward's output before it was recorded (off by ${r.plusDiff})`);
});
