/**
 * The cases of engine-device.test.ts, each run in a fresh Node process (`node
 * --max-semi-space-size=128 --import tsx test/engine-device-cases.ts <case>`) that prints one JSON
 * line of measurements; the test file makes the assertions. A fresh process per case because
 * Dawn's Node binding (npm `webgpu`) crashes at random under frequent V8 scavenges (segfaults and
 * aborts seen on lavapipe with the default 16 MiB semi-space, none with 128 MiB), and the flag can
 * only be given at process start.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as tf from "@tensorflow/tfjs";
import { onBackend, relDiff } from "./device-case-runner.ts";
import { passesAgainstOnePass, tensorTargetsAgainstHost } from "./learner-passes-helpers.ts";
import { counterSnapshot, resetCounters, withPhaseAsync } from "../server/qrag/backend/device.ts";
import { createEncoder } from "../server/qrag/model/factory.ts";
import type { EncoderConfig, TokenBatch } from "../server/qrag/model/encoder.ts";
import type { QEncoder } from "../server/qrag/model/base.ts";
import { HfBertEncoder } from "../server/qrag/model/hf/encoder.ts";
import { QNetworks } from "../server/qrag/agent/networks.ts";
import { embedSampleChunks, greedyEpisode, disposeCandidates } from "../server/qrag/agent/greedy.ts";
import { embedGroupChunks, greedyEpisodes } from "../server/qrag/agent/greedy-batch.ts";
import { Learner } from "../server/qrag/agent/learner.ts";
import { ParallelEnvs, setDeferredReads } from "../server/qrag/agent/rollout.ts";
import { rolloutSettings, trainIteration } from "../server/qrag/agent/iteration.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { evalOptions, train } from "../server/qrag/training/train.ts";
import { sweep } from "../server/qrag/evaluation/sweep.ts";
import { loadAgent } from "../server/qrag/evaluation/evaluate.ts";
import { buildSource } from "../server/qrag/data/sources.ts";
import { denseSingleStep } from "../server/qrag/baselines/dense.ts";
import { aggregate, retrievalMetrics } from "../server/qrag/evaluation/metrics.ts";
import { workloadSource } from "../server/qrag/bench/workload.ts";
import type { EpisodeRecord } from "../server/qrag/events.ts";
import type { Sample, SampleSource } from "../server/qrag/types.ts";
import { listSource } from "../server/qrag/data/json-records.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { setGpuStorage } from "../server/qrag/model/webgpu/half-storage.ts";
import { lambdaTargetsFused } from "../server/qrag/model/webgpu/lambda-returns.ts";
import { lambdaTargets, withBootstrapColumn } from "../server/qrag/agent/lambda-returns.ts";

function maxAbs(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

const syncReads = (c: ReturnType<typeof counterSnapshot>) => Object.values(c).reduce((a, x) => a + (x?.syncReads ?? 0), 0);

const ENCODERS: Record<string, EncoderConfig> = {
  transformer: { type: "transformer", dim: 16, vocab_size: 512, hidden: 32, layers: 2, heads: 2, max_len: 32, dropout: 0, init_std: 0.2 },
  bow: { type: "bow", dim: 16, vocab_size: 512, hidden: 32, layers: 0, heads: 1, max_len: 32, dropout: 0, init_std: 0.2 },
};

/** Eval-mode forward and the gradients of Σ y ⊙ R (R fixed) w.r.t. every variable, read async. */
async function forwardAndGrads(kind: string, backend: "cpu" | "webgpu") {
  await onBackend(backend);
  const enc = createEncoder(ENCODERS[kind], new Rng(3)) as QEncoder;
  const rng = new Rng(4);
  const words = (n: number) => Array.from({ length: n }, () => `w${rng.int(500)}`).join(" ");
  // rows of different lengths, PAD included, like packed states
  const batch = enc.packStates([[words(3), words(5)], [words(9)], [words(2), words(2), words(2)], [words(1)]], 16);
  resetCounters();
  const R = tf.tensor2d(Float32Array.from({ length: batch.batch * enc.dim }, (_, i) => Math.sin(i + 1)), [batch.batch, enc.dim]);
  const y = tf.tidy(() => enc.forward(batch, false));
  const { value, grads } = tf.variableGrads(() => tf.sum(tf.mul(enc.forward(batch, false), R)) as tf.Scalar, enc.variables);
  const out = { y: (await y.data()) as Float32Array, grads: [] as Float32Array[], counts: counterSnapshot() };
  for (const v of enc.variables) out.grads.push((await grads[v.name].data()) as Float32Array);
  tf.dispose([y, value, R, ...Object.values(grads)]);
  enc.dispose();
  return out;
}

async function encoderCase(kind: string) {
  const cpu = await forwardAndGrads(kind, "cpu");
  const gpu = await forwardAndGrads(kind, "webgpu");
  return {
    forward: relDiff(gpu.y, cpu.y),
    grads: cpu.grads.map((g, i) => relDiff(gpu.grads[i], g)),
    nonZeroGrads: cpu.grads.filter((g) => g.some((x) => x !== 0)).length,
    syncReads: syncReads(gpu.counts),
    counts: gpu.counts,
  };
}

async function greedyCase() {
  const config = resolveConfig({ preset: "tiny" });
  const sample = workloadSource(60, 11).sample(0);
  const opts = { ...evalOptions(config, { neverTerminate: true }), alpha: 0.05 };
  const run = async (backend: "cpu" | "webgpu") => {
    await onBackend(backend);
    const nets = new QNetworks({ ...config.algo.encoder, type: "transformer", layers: 1, heads: 2, dim: 16, hidden: 32, max_len: 64 }, new Rng(8));
    const emb = await embedSampleChunks(nets, sample, config.max_action_length);
    resetCounters();
    const rec = await greedyEpisode(nets, sample, opts, emb);
    const counts = counterSnapshot();
    disposeCandidates(emb);
    nets.dispose();
    return { pred: rec.pred_idx, q: rec.steps.map((s) => s.q), v: rec.steps.map((s) => s.v ?? NaN), topk: rec.steps.map((s) => s.topk.map((c) => c.index)), counts };
  };
  return { cpu: await run("cpu"), gpu: await run("webgpu") };
}

/**
 * Greedy episodes of six samples of 7–60 chunks, ending on completion (different lengths): one at a
 * time (greedy.ts) and side by side (greedy-batch.ts), both on webgpu, with the reads each made.
 */
async function greedyBatchCase() {
  const config = resolveConfig({ preset: "tiny" });
  const samples = [60, 12, 45, 7, 30, 60].map((n, i) => workloadSource(n, 20 + i).sample(i));
  const opts = { ...evalOptions(config, { neverTerminate: false }), alpha: 0.05 };
  await onBackend("webgpu");
  const nets = new QNetworks({ ...config.algo.encoder, type: "transformer", layers: 1, heads: 2, dim: 16, hidden: 32, max_len: 64 }, new Rng(8));
  const view = (rec: EpisodeRecord) => ({ pred: rec.pred_idx, q: rec.steps.map((s) => s.q), v: rec.steps.map((s) => s.v ?? NaN), topk: rec.steps.map((s) => s.topk.map((c) => c.index)), ret: rec.return, oracleStop: rec.oracle_stop, id: rec.id });
  resetCounters();
  const one: EpisodeRecord[] = [];
  for (const sample of samples) one.push(await greedyEpisode(nets, sample, opts));
  const oneReads = counterSnapshot().eval?.reads ?? 0;
  resetCounters();
  const batch = await greedyEpisodes(nets, samples, opts);
  const counts = counterSnapshot();
  // leave-one-out Q (qrag eval --never-terminate, sweeps): each episode's prefixes against its own block
  const looOpts = { ...evalOptions(config, { neverTerminate: true, leaveOneOut: true }), alpha: 0.05 };
  const looOne: number[][][] = [];
  for (const sample of samples.slice(0, 3)) looOne.push((await greedyEpisode(nets, sample, looOpts)).loo ?? []);
  // the group's candidates embedded first, as a sweep does (it also reads them for its dense baseline)
  const cands = await embedGroupChunks(nets, samples.slice(0, 3), looOpts.maxActionLength);
  const looBatch = (await greedyEpisodes(nets, samples.slice(0, 3), looOpts, cands)).map((r) => r.loo ?? []);
  disposeCandidates(cands);
  nets.dispose();
  return { one: one.map(view), batch: batch.map(view), oneReads, batchReads: counts.eval?.reads ?? 0, syncReads: counts.eval?.syncReads ?? 0, looOne, looBatch };
}

async function trainingCase() {
  await onBackend("webgpu");
  const config = resolveConfig({
    preset: "tiny",
    overrides: ["envs_parallel=2", "batch_size=8", "learning_start=2", "algo.hyperparams.drop_last_transition=false", "algo.encoder.type=transformer", "algo.encoder.layers=1", "algo.encoder.heads=2", "algo.encoder.max_len=128"],
  });
  const nets = new QNetworks(config.algo.encoder, new Rng(1));
  const learner = new Learner(nets, config.algo, 10, 1);
  const envs = new ParallelEnvs(workloadSource(30, 1), rolloutSettings(config), new Rng(2));
  const before = await nets.state.exportWeightsAsync();
  let step = 0;
  resetCounters();
  const iterations = 3;
  const applied: boolean[] = [];
  let policyIterations = 0;
  for (let i = 0; i < iterations; i++) {
    const random = step < 2 * config.learning_start;
    policyIterations += random ? 0 : 1;
    const r = await trainIteration(envs, learner, nets, config, random);
    step += r.transitions;
    applied.push(Boolean(r.applied));
  }
  const counts = counterSnapshot();
  const stats = await learner.lastStats();
  const after = await nets.state.exportWeightsAsync();
  const moved = after.some((w, i) => w.data.some((x, j) => x !== before[i].data[j]));
  envs.dispose();
  learner.dispose();
  nets.dispose();
  return { counts, iterations, policyIterations, stepsPerEnv: rolloutSettings(config).stepsPerEnv, applied, ...stats, moved };
}

/**
 * gpu_storage f16 against f32: the same `updates` training iterations (same seeds, a 2-layer
 * transformer; 12 in the test, HALF_UPDATES=100 for docs/benchmarks/gpu.md's figure) with the no-grad forwards' activations stored as f16 and as f32; each update's
 * loss, and the first update whose rollout took other actions (f16 values can tip a sampled
 * action, and the runs go apart from there).
 */
async function halfTrainingCase(updates = Number(process.env.HALF_UPDATES ?? 12)) {
  await onBackend("webgpu");
  const config = resolveConfig({
    preset: "tiny",
    overrides: ["envs_parallel=2", "batch_size=8", "learning_start=2", "algo.encoder.type=transformer", "algo.encoder.layers=2", "algo.encoder.heads=2", "algo.encoder.max_len=64"],
  });
  const run = async (storage: "f32" | "f16") => {
    setGpuStorage(storage);
    const nets = new QNetworks(config.algo.encoder, new Rng(1));
    const learner = new Learner(nets, config.algo, updates, 1);
    const envs = new ParallelEnvs(workloadSource(30, 1), rolloutSettings(config), new Rng(2));
    const losses: number[] = [];
    // each update's actions (the rollout before it)
    const actions: string[] = [];
    const collect = envs.collect.bind(envs);
    envs.collect = async (n, o) => {
      const batch = await collect(n, o);
      actions.push(batch.actionTexts.join("|"));
      return batch;
    };
    let step = 0;
    while (learner.updates < updates) {
      const random = step < 2 * config.learning_start;
      const r = await trainIteration(envs, learner, nets, config, random);
      step += r.transitions;
      if (r.applied) losses.push((await learner.lastStats()).loss);
      else actions.pop();
    }
    envs.dispose();
    learner.dispose();
    nets.dispose();
    return { losses, actions };
  };
  const f32 = await run("f32");
  const f16 = await run("f16");
  const firstDiverged = f16.actions.findIndex((a, i) => a !== f32.actions[i]);
  return { f32: f32.losses, f16: f16.losses, firstDiverged, updates: f32.actions.length };
}

/** train() with gpu_storage f16: a transformer run's device label, and a bow run's warning (it keeps no activations). */
async function storageLabelCase() {
  await onBackend("webgpu");
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-device-"));
  const run = async (encoder: string) => {
    const config = resolveConfig({ preset: "tiny", overrides: ["steps_count=1", "eval_interval=1", "eval_episodes=1", "envs_parallel=2", "batch_size=4", "learning_start=1", `algo.encoder.type=${encoder}`, "gpu_storage=f16"] });
    let device = "";
    const warnings: string[] = [];
    const res = await train(config, {
      runDir: path.join(tmp, encoder),
      onEvent: (e) => {
        if (e.type === "run_start") device = e.meta.device;
        if (e.type === "log" && e.level === "warn") warnings.push(e.message);
      },
    });
    return { status: res.status, device, warnings };
  };
  try {
    return { transformer: await run("transformer"), bow: await run("bow") };
  } finally {
    setGpuStorage("f32");
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function trainRunCase() {
  await onBackend("webgpu");
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-device-"));
  const config = resolveConfig({ preset: "tiny", overrides: ["steps_count=4", "eval_interval=2", "eval_episodes=2", "envs_parallel=2", "batch_size=8", "learning_start=2"] });
  const episodes: EpisodeRecord[] = [];
  try {
    const res = await train(config, { runDir: path.join(tmp, "run"), onEvent: (e) => void (e.type === "episode" && episodes.push(e.record)) });
    return {
      status: res.status,
      updates: res.updates,
      backend: res.backend,
      episodes: episodes.length,
      allHaveSteps: episodes.every((r) => r.steps.length > 0),
      checkpoint: fs.existsSync(path.join(res.runDir, "checkpoints", "last")),
    };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * A sweep on webgpu (its short haystacks' samples side by side, greedy-batch.ts) against each
 * sample's episode one at a time with the sweep's options, on the same checkpoint and samples.
 */
async function sweepCase() {
  await onBackend("webgpu");
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-device-sweep-"));
  const config = resolveConfig({ preset: "tiny", overrides: ["steps_count=2", "eval_interval=100", "eval_episodes=1", "envs_parallel=2", "batch_size=8", "learning_start=2"] });
  try {
    const res = await train(config, { runDir: path.join(tmp, "run") });
    const epFile = path.join(tmp, "episodes.jsonl");
    let backend = "";
    const lengths = [20, 60];
    const points = await sweep({ checkpoint: res.runDir, lengths, samples: 6, threshold: 0.2, episodesFile: epFile, onEvent: (e) => void (e.type === "run_start" && (backend = e.meta.backend)) });
    const swept = fs.readFileSync(epFile, "utf8").trim().split("\n").map((l) => JSON.parse(l) as EpisodeRecord & { numChunks: number });
    const { nets, config: cfg, alpha } = await loadAgent(res.runDir);
    const gOpts = evalOptions(cfg, { neverTerminate: true, threshold: 0.2, alpha, leaveOneOut: true });
    const alone: { numChunks: number; pred: number[]; q: number[]; loo: number[][] }[] = [];
    const denseAlone: number[] = [];
    for (const n of lengths) {
      const source = buildSource(cfg, "test", n);
      const dense = [];
      for (let i = 0; i < 6; i++) {
        const sample = source.sample(i);
        const rec = await greedyEpisode(nets, sample, gOpts);
        alone.push({ numChunks: n, pred: rec.pred_idx, q: rec.q_values, loo: rec.loo ?? [] });
        // the single-step dense baseline on this sample's own candidates, read on their own
        const emb = await embedSampleChunks(nets, sample, cfg.max_action_length);
        const host = emb instanceof Float32Array ? emb : ((await emb.data()) as Float32Array);
        disposeCandidates(emb);
        const picks = await denseSingleStep(nets, sample.question, host, sample.chunks.length, cfg.envs.max_steps, { maxInMemory: cfg.max_action_length_in_memory, positions: cfg.envs.positions_processor, stepSize: cfg.envs.step_size });
        dense.push(retrievalMetrics(picks, sample.supportIdx));
      }
      denseAlone.push(aggregate(dense).f1);
    }
    nets.dispose();
    return { backend, points: points.map((p) => ({ numChunks: p.numChunks, samples: p.samples, pruned: p.qragPruned !== undefined, dense: p.dense?.f1 })), swept: swept.map((r) => ({ numChunks: r.numChunks, pred: r.pred_idx, q: r.q_values, loo: r.loo ?? [] })), alone, denseAlone };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

const BERT_TINY = path.resolve(import.meta.dirname, "fixtures/bert-tiny");

/** A data root holding bert-tiny under models/bert-tiny (its config.json's dropout rates set to `dropout` when given); the caller removes it. */
function bertTinyRoot(dropout?: number): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-hf-device-"));
  const dir = path.join(root, "models/bert-tiny");
  fs.mkdirSync(dir, { recursive: true });
  for (const f of ["config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "tokenizer_config.json"]) fs.copyFileSync(path.join(BERT_TINY, f), path.join(dir, f));
  if (dropout !== undefined) {
    const cfg = JSON.parse(fs.readFileSync(path.join(dir, "config.json"), "utf8")) as Record<string, unknown>;
    fs.writeFileSync(path.join(dir, "config.json"), JSON.stringify({ ...cfg, hidden_dropout_prob: dropout, attention_probs_dropout_prob: dropout }));
  }
  return root;
}

async function bertCase() {
  const FIXTURE = BERT_TINY;
  const REF = JSON.parse(fs.readFileSync(path.join(FIXTURE, "reference_outputs.json"), "utf8")) as {
    input_ids: number[][];
    attention_mask: number[][];
    last_hidden_state: number[][][];
    mean_pooled_div10: number[][];
    atol: number;
  };
  const root = bertTinyRoot();
  await onBackend("webgpu");
  const enc = HfBertEncoder.load({ type: "hf", path: "models/bert-tiny", dim: 32, vocab_size: 4096, hidden: 64, layers: 2, heads: 4, max_len: 256, dropout: 0.1, init_std: 0.02 }, new Rng(1), root);
  try {
    const B = REF.input_ids.length, T = REF.input_ids[0].length;
    const batch: TokenBatch = { ids: Int32Array.from(REF.input_ids.flat()), mask: Float32Array.from(REF.attention_mask.flat()), batch: B, len: T };
    resetCounters();
    const h = enc.lastHiddenState(batch);
    const hidden = maxAbs(await h.data(), REF.last_hidden_state.flat(2));
    const y = tf.tidy(() => enc.forward(batch, false));
    const pooled = maxAbs(await y.data(), REF.mean_pooled_div10.flat());
    const e = enc.embedDevice(batch);
    const device = maxAbs(await e.data(), REF.mean_pooled_div10.flat());
    tf.dispose([h, y, e]);
    return { hidden, pooled, device, atol: REF.atol, syncReads: syncReads(counterSnapshot()) };
  } finally {
    enc.dispose();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/** The update in passes of 3 against one pass, on webgpu (the fused rotary and twin loss inside). */
/**
 * One Boltzmann rollout and one random rollout (episodes ending mid-rollout, bootstrap values, the
 * values in several batches) on cpu and on webgpu with the same seeds: picks, V_target of every
 * state and the bootstrap values, and on webgpu the reads per phase. `overrides` and `source`
 * change the default (the workload's uniform chunks, episodes that run to max_steps: two runs of
 * 4 lock-steps and a lone one in a rollout of 9).
 */
async function rolloutCase(overrides: string[] = ["envs.feedback.never_terminate=true", "envs.max_steps=4"], source = () => workloadSource(30, 1), exploreEps = 0, dataRoot?: string) {
  const config = resolveConfig({
    preset: "tiny",
    overrides: ["envs_parallel=2", "batch_size=16", "algo.encoder.type=transformer", "algo.encoder.layers=1", "algo.encoder.heads=2", "algo.encoder.max_len=128", "algo.encoder.dropout=0", ...overrides],
  });
  const run = async (backend: "cpu" | "webgpu") => {
    await onBackend(backend);
    const nets = new QNetworks(config.algo.encoder, new Rng(1), { dataRoot });
    // on webgpu the deferred values in batches of 7 states (30 candidates each): slices of the states
    const envs = new ParallelEnvs(source(), { ...rolloutSettings(config), valueSlotsPerBatch: 7 * 30 }, new Rng(2));
    const out = [];
    for (const random of [false, true]) {
      resetCounters();
      const b = await withPhaseAsync("rollout", () => envs.collect(nets, { random, alpha: 0.05, exploreEps, bootstrap: true }));
      const c = counterSnapshot();
      out.push({ actions: b.actionTexts, value: Array.from(b.value), bootstrap: Array.from(b.bootstrap!), notDone: Array.from(b.notDone), reads: { rollout: c.rollout?.reads ?? 0, target: c.target?.reads ?? 0, encode: c.encode?.reads ?? 0 }, syncReads: syncReads(c) });
    }
    envs.dispose();
    nets.dispose();
    return out;
  };
  const cpu = await run("cpu");
  const gpu = await run("webgpu");
  return {
    L: rolloutSettings(config).stepsPerEnv,
    maxSteps: config.envs.max_steps,
    rollouts: cpu.map((c, i) => ({
      sameActions: JSON.stringify(gpu[i].actions) === JSON.stringify(c.actions),
      actions: c.actions.length,
      ended: c.notDone.filter((x) => x === 0).length,
      value: maxAbs(gpu[i].value, c.value),
      bootstrap: maxAbs(gpu[i].bootstrap, c.bootstrap),
      reads: gpu[i].reads,
      syncReads: gpu[i].syncReads,
    })),
  };
}

/**
 * Documents of 20 to 30 chunks (environments of different widths side by side) of 1 to 14 random
 * words, with 1 to 3 supporting chunks and a question of 2 to 9 words: states of many lengths,
 * pieces longer than the piece cap, rows past max_len.
 */
function variedSource(chunkWords = 14): SampleSource {
  const rng = new Rng(7);
  const words = (n: number) => Array.from({ length: n }, () => `v${rng.int(500)}`).join(" ");
  const samples: Sample[] = Array.from({ length: 12 }, (_, i) => {
    const n = 20 + rng.int(11);
    return {
      id: `varied-${i}`,
      question: words(2 + rng.int(8)),
      answer: "",
      chunks: Array.from({ length: n }, () => words(1 + rng.int(chunkWords))),
      supportIdx: rng.sampleWithoutReplacement(n, 1 + rng.int(3)).sort((a, b) => a - b),
    };
  });
  return listSource("varied", samples);
}

async function passesCase() {
  await onBackend("webgpu");
  return { ...(await passesAgainstOnePass(3)), tensorTargets: { onePass: await tensorTargetsAgainstHost(0), passes: await tensorTargetsAgainstHost(3) } };
}

/**
 * lambdaTargetsFused against the host's lambdaTargets on rows of 3 environments: random rewards and
 * values, not-done 0 at a few steps (episodes ending inside the rows), with the bootstrap column
 * (as iteration.ts widens them) and without, in both modes.
 */
async function lambdaTargetsCase() {
  await onBackend("webgpu");
  const rng = new Rng(17);
  const E = 3, L = 7, gamma = 0.99, lambda = 0.8;
  const reward = Float32Array.from({ length: E * L }, () => (rng.int(4) === 0 ? 1 : 0));
  const notDone = Float32Array.from({ length: E * L }, (_, i) => (i % L === 2 || i === 12 ? 0 : 1));
  const values = Float32Array.from({ length: E * L + E }, () => rng.next() * 2 - 0.5);
  const cases = [];
  for (const mode of ["intended", "reference"] as const) {
    for (const bootstrap of [false, true]) {
      const V = tf.tensor1d(bootstrap ? values : values.subarray(0, E * L));
      const t = lambdaTargetsFused({ values: V, reward, notDone, E, L, bootstrap }, gamma, lambda, mode);
      const got = (await t.data()) as Float32Array;
      tf.dispose([V, t]);
      // iteration.ts's host path: the rows widened by the bootstrap column
      const rows = { reward, notDone, value: values.subarray(0, E * L) };
      const want = bootstrap ? lambdaTargets(withBootstrapColumn(rows, values.subarray(E * L), E, L), E, L + 1, gamma, lambda, mode) : lambdaTargets(rows, E, L, gamma, lambda, mode);
      cases.push({ name: `${mode}${bootstrap ? ", bootstrap" : ""}`, n: got.length === want.length ? got.length : 0, diff: maxAbs(got, want), scale: Math.max(1, ...Array.from(want, Math.abs)) });
    }
  }
  return { cases };
}

/**
 * The device path's deferred reads against reading each run and the values (setDeferredReads),
 * with dropout on, so the masks' draws must come in the same order: a Boltzmann rollout of two
 * environments whose episodes end together (runs of 4, 4 and a lone step), and three training
 * iterations (two random, then the policy; the λ-returns on the device or the host).
 */
async function deferredReadsCase() {
  await onBackend("webgpu");
  const config = resolveConfig({
    preset: "tiny",
    overrides: ["envs_parallel=2", "batch_size=16", "learning_start=2", "algo.hyperparams.drop_last_transition=false", "algo.encoder.type=transformer", "algo.encoder.layers=1", "algo.encoder.heads=2", "algo.encoder.max_len=128", "algo.encoder.dropout=0.1", "envs.feedback.never_terminate=true", "envs.max_steps=4"],
  });
  const rollout = async (deferred: boolean) => {
    setDeferredReads(deferred);
    const nets = new QNetworks(config.algo.encoder, new Rng(1));
    const envs = new ParallelEnvs(workloadSource(30, 1), rolloutSettings(config), new Rng(2));
    try {
      resetCounters();
      const b = await withPhaseAsync("rollout", () => envs.collect(nets, { random: false, alpha: 0.05, exploreEps: 0.3, bootstrap: true }));
      return { actions: b.actionTexts, value: Array.from(b.value), bootstrap: Array.from(b.bootstrap!), reads: counterSnapshot().rollout?.reads ?? 0 };
    } finally {
      envs.dispose();
      nets.dispose();
    }
  };
  const training = async (deferred: boolean) => {
    setDeferredReads(deferred);
    const nets = new QNetworks(config.algo.encoder, new Rng(1));
    const learner = new Learner(nets, config.algo, 10, 1);
    const envs = new ParallelEnvs(workloadSource(30, 1), rolloutSettings(config), new Rng(2));
    try {
      resetCounters();
      let step = 0;
      for (let i = 0; i < 3; i++) step += (await trainIteration(envs, learner, nets, config, step < 2 * config.learning_start)).transitions;
      const c = counterSnapshot();
      return { weights: (await nets.state.exportWeightsAsync()).flatMap((w) => Array.from(w.data)), loss: (await learner.lastStats()).loss, reads: { rollout: c.rollout?.reads ?? 0, target: c.target?.reads ?? 0 } };
    } finally {
      envs.dispose();
      learner.dispose();
      nets.dispose();
    }
  };
  try {
    const [on, off] = [await rollout(true), await rollout(false)];
    const [tOn, tOff] = [await training(true), await training(false)];
    return {
      rollout: { sameActions: JSON.stringify(on.actions) === JSON.stringify(off.actions), actions: on.actions.length, value: maxAbs(on.value, off.value), bootstrap: maxAbs(on.bootstrap, off.bootstrap), reads: { on: on.reads, off: off.reads } },
      training: { weights: maxAbs(tOn.weights, tOff.weights), loss: Math.abs(tOn.loss - tOff.loss), reads: { on: tOn.reads, off: tOff.reads } },
    };
  } finally {
    setDeferredReads(true);
  }
}

const CASES: Record<string, () => Promise<unknown>> = {
  "deferred-reads": deferredReadsCase,
  "lambda-targets": lambdaTargetsCase,
  "half-training": () => halfTrainingCase(),
  "storage-label": storageLabelCase,
  passes: passesCase,
  "encoder-transformer": () => encoderCase("transformer"),
  "encoder-bow": () => encoderCase("bow"),
  greedy: greedyCase,
  "greedy-batch": greedyBatchCase,
  training: trainingCase,
  rollout: () => rolloutCase(),
  // episodes ending on completion, ε-exploration, retrieval-order states cut at the piece cap and at max_len
  // bert-tiny (without dropout): its wordpiece framing packed on the device
  "rollout-hf": async () => {
    const root = bertTinyRoot(0);
    try {
      return await rolloutCase(["algo.encoder.type=hf", "algo.encoder.path=models/bert-tiny", "max_action_length_in_memory=12", "envs.feedback.never_terminate=true", "envs.max_steps=4"], variedSource, 0.3, root);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  },
  // pieces up to 40 tokens: a queued step's bounded length passes 128 (lock-steps.ts boundLength: 192, not a power of two)
  "rollout-long": () => rolloutCase(["max_action_length_in_memory=40", "algo.encoder.max_len=256", "envs.feedback.never_terminate=true", "envs.max_steps=5"], () => variedSource(40), 0.3),
  "rollout-varied": () => rolloutCase(["envs.feedback.never_terminate=false", "envs.sort_by_index=false", "max_action_length_in_memory=8", "algo.encoder.max_len=32", "envs.max_steps=5"], variedSource, 0.3),
  "train-run": trainRunCase,
  sweep: sweepCase,
  bert: bertCase,
};

const name = process.argv[2] ?? "";
const fn = CASES[name];
if (!fn) throw new Error(`unknown case "${name}" (one of ${Object.keys(CASES).join(", ")})`);
process.stdout.write(JSON.stringify(await fn()) + "\n");
process.exit(0);
