/**
 * A short real training run on a tiny seeded config (qa1, 20-chunk documents): the TD loss falls,
 * eval coverage rises above the random baseline, checkpoints round-trip and a resumed run
 * continues the same curves.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { train } from "../server/qrag/training/train.ts";
import { QNetworks } from "../server/qrag/agent/networks.ts";
import { Learner } from "../server/qrag/agent/learner.ts";
import { ParallelEnvs } from "../server/qrag/agent/rollout.ts";
import { rolloutSettings, trainIteration } from "../server/qrag/agent/iteration.ts";
import { buildSource } from "../server/qrag/data/sources.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { evaluate } from "../server/qrag/evaluation/evaluate.ts";
import { loadCheckpoint } from "../server/qrag/training/checkpoint.ts";
import type { EngineEvent, EpisodeRecord } from "../server/qrag/events.ts";
import { collect, series, trainThenCancel } from "./train-helpers.ts";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-train-"));

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * An eval episode (oracle stop on) ends exactly one way: at the step whose pick completes the
 * support set (oracle_stop), or, the set never completed, truncated at max_steps or when every
 * chunk is taken. Derived from the picks alone, not from the record's own flag.
 */
function assertStopReason(r: EpisodeRecord, maxSteps: number): void {
  assert.deepEqual(r.steps.map((s) => s.index), r.pred_idx, `${r.id}: steps and pred_idx agree`);
  assert.equal(new Set(r.pred_idx).size, r.pred_idx.length, `${r.id}: no chunk picked twice`);
  const gold = new Set(r.sf_idx);
  const found = new Set<number>();
  let completedAt = -1;
  r.pred_idx.forEach((j, i) => {
    if (gold.has(j)) found.add(j);
    if (completedAt < 0 && found.size === gold.size) completedAt = i;
  });
  if (r.oracle_stop) {
    assert.equal(completedAt, r.steps.length - 1, `${r.id}: an oracle stop comes at the step that completed the support set (picks ${r.pred_idx}, gold ${r.sf_idx})`);
  } else {
    assert.equal(completedAt, -1, `${r.id}: the support set was completed at step ${completedAt} but the episode went on (picks ${r.pred_idx}, gold ${r.sf_idx})`);
    assert.equal(r.steps.length, Math.min(maxSteps, r.num_chunks), `${r.id}: truncated at max_steps or when every chunk is taken`);
  }
  assert.equal(r.metrics.coverage, completedAt >= 0 ? 1 : 0, `${r.id}: coverage`);
}

test("tiny qa1 run: loss stays bounded and coverage beats random", async () => {
  const config = resolveConfig({ preset: "tiny" });
  const { events, onEvent } = collect();
  const res = await train(config, { runDir: path.join(tmp, "run1"), onEvent });
  assert.equal(res.status, "completed");
  assert.equal(res.updates, config.steps_count);
  const start = events.find((e) => e.type === "run_start");
  assert.ok(start && start.type === "run_start" && start.meta.backend.length > 0, "backend in run metadata");
  const loss = series(events, "qf_loss").map((p) => p.value);
  assert.ok(loss.length >= 6, `qf_loss points: ${loss.length}`);
  const k = Math.max(2, Math.floor(loss.length / 3));
  // the TD loss tracks moving targets: over this short run it falls or stays level depending on the
  // dropout stream (0.095 → 0.101 with coverage 0.3 → 0.95), so it is held to "does not diverge";
  // learning itself is judged by the coverage below
  assert.ok(loss.every(Number.isFinite), "qf_loss is finite");
  assert.ok(mean(loss.slice(-k)) < 2 * mean(loss.slice(0, k)), `loss should not diverge: first ${mean(loss.slice(0, k))} last ${mean(loss.slice(-k))}`);
  const cov = series(events, "eval_coverage");
  assert.equal(cov[0].update, 0, "eval at update 0");
  // random picks with the oracle stop over 6 of 20 chunks cover one gold fact with p = 0.3
  assert.ok(cov.at(-1)!.value > 0.6, `final coverage ${cov.at(-1)!.value}`);
  assert.ok(cov.at(-1)!.value > cov[0].value + 0.2, `coverage rose from ${cov[0].value} to ${cov.at(-1)!.value}`);
  const ep = events.find((e) => e.type === "episode");
  assert.ok(ep && ep.type === "episode");
  const s0 = ep.record.steps[0];
  assert.ok(s0.topk.length > 0 && typeof s0.q1 === "number" && typeof s0.position === "number");
  // every eval episode of the run (episodes.jsonl holds all of them, the stream only some) ended
  // for the reason its record gives, and the run saw both endings
  const evalRecords = fs
    .readFileSync(path.join(res.runDir, "episodes.jsonl"), "utf8")
    .trim()
    .split("\n")
    .flatMap((l) => {
      const e = JSON.parse(l) as EngineEvent;
      return e.type === "episode" && e.phase === "eval" ? [e.record] : [];
    });
  assert.ok(evalRecords.length >= config.eval_episodes, `${evalRecords.length} eval episodes on disk`);
  for (const r of evalRecords) assertStopReason(r, config.envs.max_steps);
  const oracleStops = evalRecords.filter((r) => r.oracle_stop).length;
  assert.ok(oracleStops > 0 && oracleStops < evalRecords.length, `${oracleStops} of ${evalRecords.length} eval episodes stopped at the oracle`);
  // metrics arrive in order of update
  const ups = series(events, "qf_loss").map((p) => p.update);
  assert.deepEqual(ups, [...ups].sort((a, b) => a - b));
  assert.ok(fs.existsSync(path.join(res.runDir, "metrics.jsonl")));

  const ev = await evaluate({ checkpoint: res.runDir, numSamples: 20, neverTerminate: true });
  assert.equal(ev.records.length, 20);
  assert.ok(ev.records.every((r) => r.steps.length === 6 && !r.oracle_stop), "never_terminate runs max_steps, labelled");
  assert.ok(ev.summary.filtered.avgKept <= 6);
});

test("a cancel during the rollout stops the iteration before its update: learner and weights stay as the last update left them", async () => {
  const config = resolveConfig({ preset: "tiny", overrides: ["envs_parallel=4", "batch_size=16"] });
  const nets = new QNetworks(config.algo.encoder, new Rng(1));
  const learner = new Learner(nets, config.algo, config.steps_count, 1);
  const envs = new ParallelEnvs(buildSource(config, "train"), rolloutSettings(config), new Rng(2));
  try {
    await trainIteration(envs, learner, nets, config, false);
    assert.equal(learner.updates, 1);
    const before = JSON.stringify(nets.exportWeights(), (_k, v: unknown) => (v instanceof Float32Array ? Array.from(v) : v));
    const ac = new AbortController();
    const iteration = trainIteration(envs, learner, nets, config, false, ac.signal);
    // queued now, this runs once the rollout first lets the event loop in (a CPU rollout never awaits I/O)
    setImmediate(() => ac.abort());
    await assert.rejects(iteration, { name: "AbortError" });
    assert.equal(learner.updates, 1, "no update after the abort");
    assert.equal(JSON.stringify(nets.exportWeights(), (_k, v: unknown) => (v instanceof Float32Array ? Array.from(v) : v)), before, "weights untouched");
  } finally {
    envs.dispose();
    learner.dispose();
    nets.dispose();
  }
});

test("cancel saves a checkpoint; resume continues the same curves", async () => {
  const config = resolveConfig({ preset: "tiny", overrides: ["steps_count=24", "eval_interval=8"] });
  const runDir = path.join(tmp, "run2");
  const { res: res1, events: firstEvents } = await trainThenCancel(config, runDir, 10);
  assert.equal(res1.status, "cancelled");
  assert.ok(res1.updates >= 10 && res1.updates < 24);
  const ck = loadCheckpoint<{ learner: { updates: number; optimizer: { m: Float32Array[] } }; counters: { step: number }; weights: { state: { data: Float32Array }[] } }>(runDir);
  assert.equal(ck.state.learner.updates, res1.updates);
  assert.equal(ck.state.counters.step, res1.step);
  assert.ok(ck.state.weights.state[0].data instanceof Float32Array && ck.state.weights.state[0].data.length > 0);
  assert.ok(ck.state.learner.optimizer.m.some((m) => m.some((x) => x !== 0)), "optimizer moments saved");

  const second = collect();
  const res2 = await train(config, { runDir, resumeFrom: runDir, onEvent: second.onEvent });
  assert.equal(res2.status, "completed");
  assert.equal(res2.updates, 24);
  const before = series(firstEvents, "qf_loss");
  const after = series(second.events, "qf_loss");
  assert.ok(after[0].update > before.at(-1)!.update, "updates continue after resume");
  assert.ok(after[0].step > before.at(-1)!.step, "env steps continue after resume");
  const evalUpdates = series(second.events, "eval_return").map((p) => p.update);
  assert.ok(!evalUpdates.includes(0), "no repeated eval at update 0");
  assert.ok(evalUpdates.includes(16) && evalUpdates.includes(24));
});

test("a corrupted checkpoint is rejected with the file named", async () => {
  // its own short run (no reliance on another test's run directory)
  const config = resolveConfig({ preset: "tiny", overrides: ["steps_count=2", "eval_interval=2", "eval_episodes=2"] });
  const res = await train(config, { runDir: path.join(tmp, "run3") });
  assert.equal(res.status, "completed");
  const dir = path.join(res.runDir, "checkpoints", "last");
  assert.equal(loadCheckpoint(dir).dir, dir, "the intact checkpoint loads");
  fs.truncateSync(path.join(dir, "weights-00000.bin"), 100);
  assert.throws(() => loadCheckpoint(dir), /weights-00000\.bin is truncated \(expected \d+ bytes, found 100\)/);
});
