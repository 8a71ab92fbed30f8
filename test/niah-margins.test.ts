import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { keyWordsOf, marginClass, niahMargins, spread } from "../server/qrag/bench/niah-margins.ts";
import { benchNiah, SWEEP_SEED_OFFSET } from "../server/qrag/bench/niah.ts";
import { niahSource } from "../server/qrag/data/niah/generate.ts";
import { loadAgent } from "../server/qrag/evaluation/evaluate.ts";
import { evalOptions } from "../server/qrag/training/train.ts";
import { greedyEpisode } from "../server/qrag/agent/greedy.ts";
import { chunkAt } from "../server/qrag/types.ts";
import { InputError } from "../server/qrag/errors.ts";

test("keyWordsOf / marginClass on generated multi-key samples: the question's key is the gold needle's, distractors share fewer words", () => {
  for (const [task, parts] of [["niah_multikey_2", 2], ["niah_multikey_3", 5]] as const) {
    const s = niahSource({ task, maxSeqLength: 1024, seed: 5, split: "test" }).sample(0);
    const q = keyWordsOf(s.question)!;
    assert.equal(q.length, parts, s.question);
    const gold = chunkAt(s.chunks, s.supportIdx[0]);
    assert.deepEqual(keyWordsOf(gold), q);
    assert.equal(marginClass(q, gold, true), "gold");
    const classes = new Set<string>();
    for (let j = 0; j < s.chunks.length; j++) {
      if (s.supportIdx.includes(j)) continue;
      const c = marginClass(q, chunkAt(s.chunks, j), false);
      classes.add(c);
      if (c.startsWith("shares ")) assert.ok(Number(c.slice(7)) < parts, c);
    }
    assert.ok(classes.has("shares 0"), [...classes].join());
    assert.ok(classes.has("not a needle"), "the instruction sentences are not needles");
  }
  assert.equal(keyWordsOf("The grass is green."), undefined);
  assert.equal(marginClass(["ripe", "arch"], "One of the special magic numbers for ripe-crown is: 123.", false), "shares 1");
});

test("spread: population mean, sd and max", () => {
  assert.deepEqual(spread([1, 3]), { n: 2, mean: 2, sd: 1, max: 3 });
  assert.equal(spread([]).n, 0);
});

test("niahMargins on a tiny trained checkpoint: every chunk classed once, the gold's Q and rank are the agent's", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "niah-margins-"));
  await benchNiah(() => {}, {
    variants: ["niah_multikey_2"], lengths: [1024], samples: [1], runsDir: dir,
    overrides: ["steps_count=2", "eval_episodes=2", "envs_parallel=2", "batch_size=4", "learning_start=4", "envs.max_seq_length=1024"],
  });
  const checkpoint = path.join(dir, "bench-niah-multikey", "checkpoints", "best");
  await assert.rejects(niahMargins(checkpoint, { variant: "niah_multiquery", maxSeqLength: 1024, samples: 1 }), InputError);
  await assert.rejects(niahMargins(checkpoint, { variant: "niah_bogus", maxSeqLength: 1024, samples: 1 }), /--variant: unknown NIAH variant niah_bogus/);
  const r = await niahMargins(checkpoint, { variant: "niah_multikey_2", maxSeqLength: 1024, samples: 2 });
  const total = r.perSample.reduce((a, p) => a + p.chunks, 0);
  assert.equal(Object.values(r.classes).reduce((a, c) => a + c.n, 0), total);
  assert.equal(r.classes.gold.n, 2);
  assert.ok(r.classes["shares 0"].n > 0);
  assert.equal(r.firstPickMisses, r.perSample.filter((p) => p.goldRank > 0).length);
  // the same samples through the agent's own greedy episode: the gold's step-0 Q and rank agree
  const { nets, config } = await loadAgent(checkpoint);
  try {
    const src = niahSource({ task: "niah_multikey_2", maxSeqLength: 1024, seed: config.seed + SWEEP_SEED_OFFSET, split: "sweep", numSamples: Infinity });
    for (let i = 0; i < 2; i++) {
      const rec = await greedyEpisode(nets, src.sample(i), evalOptions(config, { neverTerminate: true }));
      const top = rec.steps[0].topk;
      const at = top.findIndex((c) => c.gold);
      if (at >= 0) {
        assert.ok(Math.abs(top[at].q - r.perSample[i].gold) < 1e-5, `${top[at].q} vs ${r.perSample[i].gold}`);
        assert.equal(r.perSample[i].goldRank, at);
      } else assert.ok(r.perSample[i].goldRank >= top.length);
    }
  } finally {
    nets.dispose();
  }
  fs.rmSync(dir, { recursive: true, force: true });
});
