import { test } from "node:test";
import assert from "node:assert/strict";
import { RetrievalEpisode, type EpisodeConfig } from "../server/qrag/env/episode.ts";
import { applyPartialStart, partialStartPicks } from "../server/qrag/env/partial-start.ts";
import { ParallelEnvs } from "../server/qrag/agent/rollout.ts";
import { rolloutSettings } from "../server/qrag/agent/iteration.ts";
import { QNetworks } from "../server/qrag/agent/networks.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { buildSource } from "../server/qrag/data/sources.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import type { Sample } from "../server/qrag/types.ts";

const cfg: EpisodeConfig = { maxSteps: 6, positions: "relative", feedback: { neverTerminate: false } };
const sample = (n: number, support: number[]): Sample => ({
  id: "s",
  question: "q?",
  answer: "a",
  chunks: Array.from({ length: n }, (_, i) => `chunk ${i}`),
  supportIdx: support,
});

test("partial starts: a proper, non-empty subset of the support, the episode still open", () => {
  const rng = new Rng(5);
  const sizes = new Set<number>();
  for (let t = 0; t < 300; t++) {
    const ep = new RetrievalEpisode(sample(40, [3, 17, 29]), cfg);
    const taken = applyPartialStart(ep, rng, { prob: 1, extraProb: 0 });
    assert.equal(taken, ep.numSteps);
    assert.ok(taken >= 1 && taken <= 2, `took ${taken}`);
    for (const i of ep.selected) assert.ok([3, 17, 29].includes(i), `pre-pick ${i} is not support`);
    assert.equal(ep.done, false);
    sizes.add(taken);
  }
  assert.deepEqual([...sizes].sort(), [1, 2], "both subset sizes occur");
});

test("partial starts: extra_prob adds exactly one non-supporting chunk; one-fact and no-fact samples", () => {
  const rng = new Rng(9);
  for (let t = 0; t < 200; t++) {
    const picks = partialStartPicks(new RetrievalEpisode(sample(30, [4, 20]), cfg), rng, { prob: 1, extraProb: 1 });
    assert.equal(picks.filter((i) => i !== 4 && i !== 20).length, 1, `picks ${picks}`);
    assert.equal(picks.filter((i) => i === 4 || i === 20).length, 1, `picks ${picks}`);
    // one support fact: only the extra chunk can be pre-picked
    const one = partialStartPicks(new RetrievalEpisode(sample(30, [7]), cfg), rng, { prob: 1, extraProb: 1 });
    assert.equal(one.length, 1);
    assert.notEqual(one[0], 7);
  }
  // no support: nothing (the first pick would complete the episode)
  assert.deepEqual(partialStartPicks(new RetrievalEpisode(sample(30, []), cfg), rng, { prob: 1, extraProb: 1 }), []);
  // a haystack that is all support has no extra chunk to offer
  assert.ok(partialStartPicks(new RetrievalEpisode(sample(3, [0, 1, 2]), cfg), rng, { prob: 1, extraProb: 1 }).every((i) => i <= 2));
});

test("partial starts: extra_from related draws the extra chunk among those sharing a word with a supporting fact", () => {
  // 2 support facts, 10 chunks about the same person, 28 unrelated ones
  const chunks = [
    "Mary took the apple there.",
    "Mary went to the kitchen.",
    ...Array.from({ length: 10 }, (_, i) => `Mary moved to room ${"abcdefghij"[i]}.`),
    ...Array.from({ length: 28 }, (_, i) => `The senate passed bill ${i}.`),
  ];
  const s: Sample = { id: "r", question: "Where is the apple?", answer: "kitchen", chunks, supportIdx: [0, 1] };
  const extras = (extraFrom: "any" | "related") => {
    const rng = new Rng(11);
    return Array.from({ length: 300 }, () => partialStartPicks(new RetrievalEpisode(s, cfg), rng, { prob: 1, extraProb: 1, extraFrom }).find((i) => i > 1)!);
  };
  const related = extras("related");
  assert.ok(related.every((i) => i >= 2 && i < 12), `unrelated extra chosen: ${related.filter((i) => i >= 12)}`);
  const any = extras("any").filter((i) => i < 12).length / 300;
  assert.ok(any > 0.15 && any < 0.4, `uniform extras hit the related tenth-ish: ${any}`);
});

test("partial starts: prob 0 and undefined take nothing and leave the random stream alone; max_steps leaves a step", () => {
  const a = new Rng(3);
  const b = new Rng(3);
  assert.equal(applyPartialStart(new RetrievalEpisode(sample(30, [1, 2]), cfg), a, { prob: 0, extraProb: 1 }), 0);
  assert.equal(applyPartialStart(new RetrievalEpisode(sample(30, [1, 2]), cfg), a, undefined), 0);
  assert.equal(a.next(), b.next());
  const rng = new Rng(4);
  for (let t = 0; t < 50; t++) {
    const ep = new RetrievalEpisode(sample(30, [1, 2, 3, 4, 5]), { ...cfg, maxSteps: 2 });
    applyPartialStart(ep, rng, { prob: 1, extraProb: 1 });
    assert.ok(ep.numSteps <= 1 && !ep.done, `${ep.numSteps} pre-picks with max_steps 2`);
  }
  const one = new RetrievalEpisode(sample(30, [1, 2]), { ...cfg, maxSteps: 1 });
  assert.equal(applyPartialStart(one, rng, { prob: 1, extraProb: 1 }), 0);
});

test("envs.partial_starts: bounded in the schema, and training rollouts start from the pre-picked states", async () => {
  assert.throws(() => resolveConfig({ preset: "tiny", overrides: ["envs.partial_starts.prob=1.5"] }), /envs\.partial_starts\.prob/);
  assert.throws(() => resolveConfig({ preset: "tiny", overrides: ["envs.partial_starts.prob=0.5", "envs.partial_starts.extra_prob=-1"] }), /envs\.partial_starts\.extra_prob/);
  const run = async (overrides: string[]) => {
    const config = resolveConfig({ preset: "tiny", overrides: ["envs_parallel=4", "batch_size=8", "algo.hyperparams.drop_last_transition=false", ...overrides] });
    const nets = new QNetworks(config.algo.encoder, new Rng(1));
    const envs = new ParallelEnvs(buildSource(config, "train"), rolloutSettings(config), new Rng(2));
    const batch = await envs.collect(nets, { random: true, alpha: 0.01, exploreEps: 0 });
    envs.dispose();
    nets.dispose();
    // the state of each env's first transition: [question, ...pre-picked chunks]
    return Array.from({ length: batch.E }, (_, e) => batch.states[e * batch.L].length - 1);
  };
  assert.deepEqual(await run([]), [0, 0, 0, 0]);
  const pre = await run(["envs.partial_starts.prob=1", "envs.partial_starts.extra_prob=1"]);
  assert.ok(pre.every((k) => k >= 1), `first states hold ${pre} pre-picked chunks`);
});
