/**
 * The engine's device path (device.ts onDevice(): dense batched attention, tf.gather embeddings,
 * top-k and soft values on the device, async reads only) on the webgpu backend over Mesa's software
 * Vulkan driver (lavapipe), against the cpu backend's host path: encoder forwards and gradients
 * (transformer, bow), greedy picks, bert-tiny against Hugging Face, and training with no
 * synchronous read and at most one read per environment step. Each case runs in a fresh process
 * (engine-device-cases.ts says why); a case whose process crashes (killed by a signal inside
 * Dawn/lavapipe) fails like any other error, with no retry. Machines without lavapipe skip,
 * except under QRAG_REQUIRE_WEBGPU=1 (CI), where its absence is a failure.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { webgpuSkip as skip } from "./webgpu-skip.ts";
import { runCaseFile } from "./device-case-runner.ts";
import type { PhaseCounters } from "../server/qrag/backend/device.ts";

/** Runs one case of engine-device-cases.ts in a fresh process and returns its JSON. */
const runCase = <T>(name: string): T => runCaseFile<T>("test/engine-device-cases.ts", name);

type Counts = Partial<Record<string, PhaseCounters>>;

for (const kind of ["transformer", "bow"] as const) {
  test(`${kind} encoder on webgpu: forward and gradients equal the cpu path, no synchronous read`, { skip }, () => {
    const r = runCase<{ forward: number; grads: number[]; nonZeroGrads: number; syncReads: number }>(`encoder-${kind}`);
    assert.ok(r.forward < 1e-4, `forward rel. diff ${r.forward}`);
    r.grads.forEach((d, i) => assert.ok(d < 1e-3, `gradient of variable ${i}: rel. diff ${d}`));
    assert.ok(r.grads.length > 0 && r.nonZeroGrads === r.grads.length, `${r.nonZeroGrads}/${r.grads.length} gradients non-zero`);
    assert.equal(r.syncReads, 0, "synchronous reads on the device path");
  });
}

test("the update in passes (pass_batch_size 3) equals the one-pass update on webgpu; targets given as a tensor (the iteration's, never read) train as the same numbers given from the host, in one pass and gathered by state length in passes", { skip }, () => {
  const r = runCase<{ lossDiff: number; weightDiff: number; moved: number; tensorTargets: { onePass: number; passes: number } }>("passes");
  assert.ok(r.lossDiff <= 1e-5, `loss differs by ${r.lossDiff} (relative)`);
  assert.ok(r.weightDiff <= 1e-5, `largest weight difference ${r.weightDiff}`);
  assert.ok(r.moved > 1e-3, `the updates moved the weights by ${r.moved}`);
  assert.deepEqual(r.tensorTargets, { onePass: 0, passes: 0 }, "weights apart with the targets as a tensor");
});

test("λ-return targets on webgpu (one thread per environment, float32) equal the host's (float64 sums) within 1e-6: both modes, with and without the bootstrap column, episodes ending inside the rows", { skip }, () => {
  const r = runCase<{ cases: { name: string; n: number; diff: number; scale: number }[] }>("lambda-targets");
  assert.equal(r.cases.length, 4);
  for (const c of r.cases) {
    assert.ok(c.n > 0, `${c.name}: no targets`);
    assert.ok(c.diff <= 1e-6 * c.scale, `${c.name}: max |Δ| ${c.diff} (targets up to ${c.scale})`);
  }
});

interface GreedyRun {
  pred: number[];
  q: number[];
  v: number[];
  topk: number[][];
  counts: Counts;
}

test("greedy episodes on webgpu pick what the cpu path picks, with one read per step", { skip }, () => {
  const { cpu, gpu } = runCase<{ cpu: GreedyRun; gpu: GreedyRun }>("greedy");
  assert.ok(cpu.pred.length >= 3, "several steps");
  assert.deepEqual(gpu.pred, cpu.pred, "same picks");
  cpu.q.forEach((q, i) => assert.ok(Math.abs(gpu.q[i] - q) < 1e-4, `step ${i}: Q ${gpu.q[i]} vs ${q}`));
  cpu.v.forEach((v, i) => assert.ok(Math.abs(gpu.v[i] - v) < 1e-4, `step ${i}: V ${gpu.v[i]} vs ${v}`));
  assert.deepEqual(gpu.topk, cpu.topk, "logged top-k");
  const ev = gpu.counts.eval;
  assert.ok(ev, "eval phase counted");
  assert.equal(ev.syncReads, 0, "no synchronous read");
  assert.equal(ev.reads, gpu.pred.length, `one read per step: ${JSON.stringify(gpu.counts)}`);
});

test("greedy episodes side by side on webgpu (greedy-batch.ts) record what one at a time records, with one read per step for them all", { skip }, () => {
  type Rec = Omit<GreedyRun, "counts"> & { ret: number; oracleStop: boolean; id: string };
  const r = runCase<{ one: Rec[]; batch: Rec[]; oneReads: number; batchReads: number; syncReads: number; looOne: number[][][]; looBatch: number[][][] }>("greedy-batch");
  assert.equal(r.batch.length, r.one.length);
  const lengths = new Set(r.one.map((e) => e.pred.length));
  assert.ok(lengths.size > 1, `episodes of different lengths: ${[...lengths]}`);
  r.one.forEach((e, i) => {
    const b = r.batch[i];
    assert.equal(b.id, e.id, "in the samples' order");
    assert.deepEqual(b.pred, e.pred, `${e.id}: same picks`);
    assert.deepEqual(b.topk, e.topk, `${e.id}: logged top-k`);
    e.q.forEach((q, k) => assert.ok(Math.abs(b.q[k] - q) < 1e-5, `${e.id} step ${k}: Q ${b.q[k]} vs ${q}`));
    e.v.forEach((v, k) => assert.ok(Math.abs(b.v[k] - v) < 1e-5, `${e.id} step ${k}: V ${b.v[k]} vs ${v}`));
    assert.equal(b.ret, e.ret);
    assert.equal(b.oracleStop, e.oracleStop);
  });
  assert.equal(r.oneReads, r.one.reduce((a, e) => a + e.pred.length, 0), "one at a time: a read per episode-step");
  assert.equal(r.batchReads, Math.max(...lengths), "side by side: a read per step of the longest episode");
  assert.equal(r.syncReads, 0);
  // leave-one-out Q of every prefix, side by side as one at a time
  assert.equal(r.looBatch.length, 3);
  r.looOne.forEach((rows, i) => {
    assert.ok(rows.length >= 3, `episode ${i}: ${rows.length} prefixes`);
    assert.equal(r.looBatch[i].length, rows.length);
    rows.forEach((row, k) => row.forEach((q, j) => assert.ok(Math.abs(r.looBatch[i][k][j] - q) < 1e-5, `episode ${i} prefix ${k + 1} pick ${j}: ${r.looBatch[i][k][j]} vs ${q}`)));
  });
});

test("training iterations on webgpu: no synchronous read, fewer reads than policy lock-steps, none for the values (the λ-returns taken on the device) nor in the update", { skip }, () => {
  const r = runCase<{ counts: Counts; iterations: number; policyIterations: number; stepsPerEnv: number; applied: boolean[]; loss: number; gradNorm: number; moved: boolean }>("training");
  for (const [p, c] of Object.entries(r.counts)) assert.equal(c?.syncReads, 0, `${p}: synchronous reads`);
  assert.ok(r.policyIterations > 0 && r.policyIterations < r.iterations, `random and Boltzmann rollouts (${r.policyIterations} of ${r.iterations})`);
  // the policy's picks: lock-steps run on the device, at least one read per rollout and fewer than one per lock-step; random picks need none
  const reads = r.counts.rollout?.reads ?? 0;
  assert.ok(reads >= r.policyIterations && reads < r.policyIterations * r.stepsPerEnv, `${reads} reads: ${JSON.stringify(r.counts)}`);
  // V_target of every state and the bootstrap values stay on the device: the λ-returns are taken there, no read
  assert.equal(r.counts.target?.reads ?? 0, 0, JSON.stringify(r.counts));
  assert.ok((r.counts.target?.dispatches ?? 0) > 0, "the values and the λ-returns ran in the target phase");
  assert.equal(r.counts.other?.reads ?? 0, 0, JSON.stringify(r.counts));
  assert.equal(r.counts.update?.reads ?? 0, 0, "no read in the update");
  assert.equal(r.counts.encode?.reads ?? 0, 0, "no read while embedding candidates");
  assert.ok(r.applied.every(Boolean), "an optimizer step per iteration");
  assert.ok(Number.isFinite(r.loss) && r.loss >= 0, `loss ${r.loss}`);
  assert.ok(Number.isFinite(r.gradNorm) && r.gradNorm > 0, `grad norm ${r.gradNorm}`);
  assert.ok(r.moved, "the weights moved");
});

type RolloutCase = { L: number; maxSteps: number; rollouts: { sameActions: boolean; actions: number; ended: number; value: number; bootstrap: number; reads: { rollout: number; target: number; encode: number }; syncReads: number }[] };

/** Both rollouts of a rollout case: the cpu path's picks and values, no synchronous read; the Boltzmann one back. */
function checkRollouts(r: RolloutCase) {
  const [policy, random] = r.rollouts;
  for (const [name, x] of [["Boltzmann", policy], ["random", random]] as const) {
    assert.ok(x.sameActions, `${name}: same picks`);
    assert.equal(x.actions, 2 * r.L, `${name}: every lock-step's picks`);
    assert.ok(x.ended >= 2, `${name}: episodes ended mid-rollout (${x.ended})`);
    assert.ok(x.value <= 1e-4, `${name}: V_target max |Δ| ${x.value}`);
    assert.ok(x.bootstrap <= 1e-4, `${name}: bootstrap max |Δ| ${x.bootstrap}`);
    assert.equal(x.syncReads, 0, `${name}: no synchronous read`);
    assert.equal(x.reads.target, Math.ceil((2 * r.L + 2) / 7), `${name}: one read per batch of 7 states' values`);
    assert.equal(x.reads.encode, 0, `${name}: no read while embedding candidates`);
  }
  assert.equal(random.reads.rollout, 0, "random: no read before the values");
  return policy;
}

test("a rollout on webgpu picks what the cpu path picks, and V_target of every state (computed after the rollout) and the bootstrap values agree; lock-steps run on the device, one read per rollout", { skip }, () => {
  const r = runCase<RolloutCase>("rollout");
  const policy = checkRollouts(r);
  // the episodes start together and run max_steps each (never_terminate): every episode surely
  // ends with its run, so the next episodes' runs are queued behind it and all are read at once
  assert.ok(r.L > 2 * r.maxSteps && r.L % r.maxSteps === 1, `runs of max_steps, then a lone step (L ${r.L}, max_steps ${r.maxSteps})`);
  assert.equal(policy.reads.rollout, 1, "Boltzmann: one read for the rollout's runs of lock-steps");
});

test("rollout lock-steps on the device for a Hugging Face BERT (bert-tiny, its wordpiece framing packed on the device, ε-exploration): the cpu path's picks and values, one read per rollout", { skip }, () => {
  const r = runCase<RolloutCase>("rollout-hf");
  const policy = checkRollouts(r);
  assert.ok(r.L > 2 * r.maxSteps && r.L % r.maxSteps === 1, `runs of max_steps, then a lone step (L ${r.L}, max_steps ${r.maxSteps})`);
  assert.equal(policy.reads.rollout, 1, "Boltzmann: one read for the rollout's runs of lock-steps");
});

test("rollout lock-steps with pieces up to 40 tokens, so queued steps pad to bounded lengths past 128 that are multiples of 64, not powers of two: the cpu path's picks and values", { skip }, () => {
  const r = runCase<RolloutCase>("rollout-long");
  const policy = checkRollouts(r);
  assert.equal(policy.reads.rollout, 1, "Boltzmann: one read for the rollout's runs of lock-steps");
});

test("deferred reads (the rollout's runs back to back, the values left on the device) against a read each run and the values read, with dropout on: the same picks and values bit for bit, the same weights after three training iterations within 1e-6, and fewer reads", { skip }, () => {
  type Reads = { rollout: number; target: number };
  const r = runCase<{ rollout: { sameActions: boolean; actions: number; value: number; bootstrap: number; reads: { on: number; off: number } }; training: { weights: number; loss: number; reads: { on: Reads; off: Reads } } }>("deferred-reads");
  assert.ok(r.rollout.sameActions && r.rollout.actions === 16, "the same picks");
  // the masks' draws in the same order: the same numbers, not merely close ones
  assert.equal(r.rollout.value, 0);
  assert.equal(r.rollout.bootstrap, 0);
  assert.deepEqual(r.rollout.reads, { on: 1, off: 2 });
  // the λ-returns in float32 on the device, in float64 on the host
  assert.ok(r.training.weights <= 1e-6, `weights apart by ${r.training.weights}`);
  assert.ok(r.training.loss <= 1e-6, `losses apart by ${r.training.loss}`);
  assert.deepEqual(r.training.reads, { on: { rollout: 2, target: 0 }, off: { rollout: 4, target: 3 } });
});

test("rollout lock-steps on the device with environments of different widths, episodes ending on completion, ε-exploration, states in retrieval order cut at the piece cap and at max_len: the cpu path's picks, fewer reads than lock-steps", { skip }, () => {
  const r = runCase<RolloutCase>("rollout-varied");
  const policy = checkRollouts(r);
  assert.ok(policy.reads.rollout < r.L && policy.reads.rollout > 0, `Boltzmann: ${policy.reads.rollout} reads for ${r.L} lock-steps`);
});

test("gpu_storage f16: 12 training updates (2-layer transformer) take the f32 run's actions, and each update's loss is within 1e-3 (relative) of the f32 run's", { skip }, () => {
  const r = runCase<{ f32: number[]; f16: number[]; firstDiverged: number; updates: number }>("half-training");
  assert.equal(r.f16.length, 12);
  assert.equal(r.f32.length, 12);
  // f16 values could tip a sampled action (then the runs go apart): on lavapipe the first one tips at update 17
  assert.equal(r.firstDiverged, -1, `the f16 run took other actions from update ${r.firstDiverged}`);
  const rel = r.f32.map((l, i) => Math.abs(r.f16[i] - l) / Math.abs(l));
  rel.forEach((d, i) => assert.ok(d <= 1e-3, `update ${i + 1}: loss ${r.f16[i]} vs ${r.f32[i]} (rel. ${d})`));
  assert.ok(Math.max(...rel) > 0, "the losses are the same bits: were the activations f16?");
});

test("train() with gpu_storage f16: a transformer run's device label ends in \"f16 activations\"; a bow run says why it stays f32", { skip }, () => {
  const r = runCase<Record<"transformer" | "bow", { status: string; device: string; warnings: string[] }>>("storage-label");
  assert.equal(r.transformer.status, "completed");
  assert.match(r.transformer.device, /^webgpu: .*, f16 activations$/);
  assert.deepEqual(r.transformer.warnings, []);
  assert.equal(r.bow.status, "completed");
  assert.doesNotMatch(r.bow.device, /f16/);
  assert.deepEqual(r.bow.warnings, ["gpu_storage f16: the bow encoder keeps no activations; activations stay f32"]);
});

test("a tiny train() run end to end on webgpu (bow): updates, greedy evals, checkpoint", { skip }, () => {
  const r = runCase<{ status: string; updates: number; backend: string; episodes: number; allHaveSteps: boolean; checkpoint: boolean }>("train-run");
  assert.equal(r.status, "completed");
  assert.equal(r.updates, 4);
  assert.equal(r.backend, "webgpu");
  assert.ok(r.episodes > 0 && r.allHaveSteps, `eval episodes: ${r.episodes}`);
  assert.ok(r.checkpoint, "checkpoint written");
});

test("a sweep on webgpu runs its short haystacks' samples side by side: each episode as one at a time records it (picks, Q, leave-one-out Q), the dense baseline on each sample's own candidates", { skip }, () => {
  const r = runCase<{ backend: string; points: { numChunks: number; samples: number; pruned: boolean; dense: number }[]; swept: { numChunks: number; pred: number[]; q: number[]; loo: number[][] }[]; alone: { numChunks: number; pred: number[]; q: number[]; loo: number[][] }[]; denseAlone: number[] }>("sweep");
  assert.equal(r.backend, "webgpu");
  assert.deepEqual(r.points.map((p) => [p.numChunks, p.samples, p.pruned]), [[20, 6, true], [60, 6, true]]);
  assert.equal(r.swept.length, r.alone.length);
  r.alone.forEach((a, i) => {
    const b = r.swept[i];
    assert.equal(b.numChunks, a.numChunks, "in the samples' order");
    assert.deepEqual(b.pred, a.pred, `episode ${i}: same picks`);
    a.q.forEach((q, k) => assert.ok(Math.abs(b.q[k] - q) < 1e-5, `episode ${i} step ${k}: Q ${b.q[k]} vs ${q}`));
    assert.ok(a.loo.length > 0 && b.loo.length === a.loo.length, `episode ${i}: leave-one-out rows ${b.loo.length} vs ${a.loo.length}`);
    a.loo.forEach((row, k) => row.forEach((q, j) => assert.ok(Math.abs(b.loo[k][j] - q) < 1e-5, `episode ${i} prefix ${k + 1} pick ${j}`)));
  });
  r.points.forEach((p, i) => assert.ok(Math.abs(p.dense - r.denseAlone[i]) < 1e-9, `${p.numChunks} chunks: dense F1 ${p.dense} vs ${r.denseAlone[i]}`));
});

test("bert-tiny on webgpu: last hidden states and the ÷10 mean pool within atol of Hugging Face", { skip }, () => {
  const r = runCase<{ hidden: number; pooled: number; device: number; atol: number; syncReads: number }>("bert");
  assert.ok(r.hidden <= r.atol, `last_hidden_state max |Δ| ${r.hidden} > ${r.atol}`);
  assert.ok(r.pooled <= r.atol, `forward mean_pooled_div10 max |Δ| ${r.pooled} > ${r.atol}`);
  assert.ok(r.device <= r.atol, `embedDevice max |Δ| ${r.device} > ${r.atol}`);
  assert.equal(r.syncReads, 0, "no synchronous read");
});
