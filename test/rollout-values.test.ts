/**
 * The rollout computes V_target of all its states in one batch after its last step (rollout.ts).
 * These tests replay each episode of a rollout step by step and check that every stored value is
 * the value of that state at collection time: its own availability and rotary positions, the
 * candidates of its own episode (episodes of distinct samples, some ended mid-rollout), and the bootstrap
 * values of the states after the rollout. Dropout is 0, so one state's forward is deterministic.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { QNetworks, embedActions, embedStates } from "../server/qrag/agent/networks.ts";
import { ParallelEnvs } from "../server/qrag/agent/rollout.ts";
import { rolloutSettings } from "../server/qrag/agent/iteration.ts";
import { rotaryPositions } from "../server/qrag/agent/rotary-positions.ts";
import { softValue } from "../server/qrag/agent/soft-value.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { buildSource } from "../server/qrag/data/sources.ts";
import { RetrievalEpisode } from "../server/qrag/env/episode.ts";
import { scoreCandidates } from "../server/qrag/model/rotary.ts";
import { chunkAt, type Sample, type SampleSource } from "../server/qrag/types.ts";
import { Rng } from "../server/qrag/util/rng.ts";

/**
 * The first `m` samples with distinct chunk texts (so a stored action text names its chunk), served
 * in turn: the rollout's environments take them in order, so the replay knows each episode's sample.
 */
function samplesInTurn(config: ReturnType<typeof resolveConfig>, m: number): Sample[] {
  const base = buildSource(config, "train");
  const out: Sample[] = [];
  for (let i = 0; out.length < m && i < 200; i++) {
    const s = base.sample(i);
    const texts = chunkTexts(s);
    if (new Set(texts).size === texts.length) out.push(s);
  }
  if (out.length < m) throw new Error("too few samples with distinct chunks");
  return out;
}

const chunkTexts = (s: Sample) => Array.from({ length: s.chunks.length }, (_, j) => chunkAt(s.chunks, j));

async function checkValues(heads: "per_head" | "joint") {
  const config = resolveConfig({
    preset: "tiny",
    overrides: ["envs_parallel=2", "batch_size=16", "algo.encoder.dropout=0", "envs.feedback.never_terminate=true", `algo.hyperparams.soft_value_heads=${heads}`],
  });
  const settings = rolloutSettings(config);
  const samples = samplesInTurn(config, 5);
  const source: SampleSource = { name: "in-turn", size: Infinity, sample: (i) => samples[i % samples.length] };
  const nets = new QNetworks(config.algo.encoder, new Rng(1));
  const envs = new ParallelEnvs(source, settings, new Rng(2));
  const alpha = 0.05;
  const batch = await envs.collect(nets, { random: false, alpha, exploreEps: 0, bootstrap: true });
  envs.dispose();

  const D = nets.dim;
  const candTarget = samples.map((s) => embedActions(nets.actionTarget, chunkTexts(s), settings.maxActionLength, true));
  const valueOf = (ep: RetrievalEpisode, i: number) => {
    const s = embedStates(nets.stateTarget, [ep.stateTexts(settings.sortByIndex)], settings.maxInMemory, true);
    const q1 = new Float32Array(ep.numChunks);
    const q2 = new Float32Array(ep.numChunks);
    scoreCandidates(s.subarray(0, D), candTarget[i % samples.length], rotaryPositions(ep), q1, q2);
    return softValue(q1, q2, ep.available, alpha, settings.topk, heads);
  };
  // the replay: episodes take samples in the order the rollout's environments do (t outer, e inner)
  let cursor = 0;
  const next = () => ({ i: cursor, ep: new RetrievalEpisode(samples[cursor++ % samples.length], settings.episode) });
  const cur = Array.from({ length: batch.E }, next);
  let ended = 0;
  const tol = (v: number) => 1e-5 * Math.max(1, Math.abs(v));
  for (let t = 0; t < batch.L; t++) {
    for (let e = 0; e < batch.E; e++) {
      const { i, ep } = cur[e];
      const k = e * batch.L + t;
      assert.deepEqual(batch.states[k], ep.stateTexts(settings.sortByIndex), `env ${e} step ${t}: the replay has the rollout's state`);
      const want = valueOf(ep, i);
      assert.ok(Math.abs(batch.value[k] - want) <= tol(want), `env ${e} step ${t}: V ${batch.value[k]} vs ${want} at collection time`);
      const texts = chunkTexts(ep.sample);
      const action = texts.findIndex((c, j) => ep.available[j] === 1 && c === batch.actionTexts[k]);
      assert.ok(action >= 0, `env ${e} step ${t}: the stored action is an available chunk`);
      if (ep.step(action).done) {
        ended++;
        cur[e] = next();
      }
    }
  }
  assert.equal(batch.bootstrap!.length, batch.E);
  cur.forEach(({ i, ep }, e) => {
    const want = valueOf(ep, i);
    assert.ok(Math.abs(batch.bootstrap![e] - want) <= tol(want), `env ${e}: bootstrap V ${batch.bootstrap![e]} vs ${want}`);
  });
  assert.ok(ended >= batch.E, `episodes ended mid-rollout (${ended}), so values of retired episodes were checked`);
  nets.dispose();
}

test("rollout values: each state's V_target, computed after the rollout in one batch, is its value at collection time (per-head)", async () => {
  await checkValues("per_head");
});

test("rollout values: the same for the joint soft value", async () => {
  await checkValues("joint");
});

/**
 * A never_terminate rollout of L = 9 lock-steps, episodes of 3 steps: the renewals after steps 3
 * and 6 take episodes drawn at its start, whose candidates E_a embeds with the current ones in one
 * batch; those renewed after step 9 (its end) wait for the next rollout's batch, unless this one
 * bootstraps (their states' values need them now).
 */
async function embedBatches(bootstrap: boolean): Promise<{ batches: number[][]; chunks: number[] }> {
  const config = resolveConfig({
    preset: "tiny",
    overrides: ["envs_parallel=2", "batch_size=16", "algo.encoder.dropout=0", "envs.feedback.never_terminate=true", "envs.max_steps=3"],
  });
  const settings = rolloutSettings(config);
  assert.equal(settings.stepsPerEnv, 9);
  const samples = samplesInTurn(config, 5);
  const source: SampleSource = { name: "in-turn", size: Infinity, sample: (i) => samples[i % samples.length] };
  const nets = new QNetworks(config.algo.encoder, new Rng(1));
  const sizes: number[] = [];
  const pack = nets.action.packActions.bind(nets.action);
  nets.action.packActions = (texts, maxTokens) => {
    sizes.push(texts.length);
    return pack(texts, maxTokens);
  };
  const envs = new ParallelEnvs(source, settings, new Rng(2));
  const batches: number[][] = [];
  for (let r = 0; r < 2; r++) {
    sizes.length = 0;
    await envs.collect(nets, { random: false, alpha: 0.05, exploreEps: 0, bootstrap });
    batches.push([...sizes]);
  }
  envs.dispose();
  nets.dispose();
  return { batches, chunks: samples.map((s) => s.chunks.length) };
}

/** Chunks of episodes from..to−1, episode i on sample i mod the samples (`chunks`: each sample's count). */
function chunksOf(chunks: readonly number[], from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) n += chunks[i % chunks.length];
  return n;
}

test("rollout candidates: a never_terminate rollout embeds the episodes its renewals start with its current ones, in one E_a batch at its start; those renewed at its end are embedded by the next rollout", async () => {
  const { batches, chunks } = await embedBatches(false);
  // episode i takes sample i mod 5: episodes 0–5 in the first rollout (2 + renewals after steps 3, 6), 6–11 in the second
  const sum = (from: number, to: number) => chunksOf(chunks, from, to);
  assert.deepEqual(batches, [[sum(0, 6)], [sum(6, 12)]]);
});

test("rollout candidates: a bootstrapping rollout also embeds the episodes renewed at its end, for their states' values", async () => {
  const { batches, chunks } = await embedBatches(true);
  const sum = (from: number, to: number) => chunksOf(chunks, from, to);
  assert.deepEqual(batches, [[sum(0, 6), sum(6, 8)], [sum(6, 12), sum(12, 14)]]);
});
