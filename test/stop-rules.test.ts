/**
 * Stopping rules (server/qrag/evaluation/stop-rules.ts): each rule's kept prefix on hand-made Q sequences,
 * calibration under a coverage floor, the validation split (train generator, another seed, never
 * the test split), and a tiny real run scored with every rule on the same trajectories.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { train, evalOptions } from "../server/qrag/training/train.ts";
import { evaluate, loadAgent } from "../server/qrag/evaluation/evaluate.ts";
import { buildSource, validationSource, VALIDATION_SEED_OFFSET } from "../server/qrag/data/sources.ts";
import { datasetSource } from "../server/qrag/data/registry.ts";
import { chunkAt } from "../server/qrag/types.ts";
import { applyStop, calibrate, keptCount, keptPicks, oraclePrefixScore, parseStopRule, PAPER_PRUNE_RULE, PAPER_RULE, scoreRule, type StopRule } from "../server/qrag/evaluation/stop-rules.ts";
import { benchPrecision, trajectories, PRECISION_FAMILIES } from "../server/qrag/bench/precision.ts";

/** A step as the greedy record holds it: the pick's Q, the logged top-k (pick first), V(s). */
function step(index: number, q: number, runnerUp: number, v?: number) {
  return { index, q, v, topk: [{ index, q, gold: false }, { index: 1000 + index, q: runnerUp, gold: false }] };
}

test("each rule keeps the expected prefix of a hand-made episode", () => {
  // the reference notebook's qa2 episode (docs/method.md §4.2) with made-up runner-ups and V(s)
  const qs = [0.917, 0.99, 0.032, 0.015, 0.012, 0.006];
  const runner = [0.2, 0.3, 0.03, 0.014, 0.011, 0.005];
  const vs = [0.93, 1.0, 0.04, 0.02, 0.015, 0.01];
  const steps = qs.map((q, i) => step(i, q, runner[i], vs[i]));
  const cases: [StopRule, number][] = [
    [PAPER_RULE, 2],
    [{ kind: "q-threshold", threshold: 0.95 }, 0], // 0.917 ≤ 0.95 stops at once
    [{ kind: "q-threshold", threshold: 0.917 }, 0], // ≤, as the reference: equality stops
    [{ kind: "q-threshold", threshold: -1 }, 6],
    [{ kind: "margin", delta: 0.5 }, 2], // margins 0.717, 0.69, 0.002, …
    [{ kind: "margin", delta: 0.7 }, 1],
    [{ kind: "margin", delta: 0 }, 6],
    [{ kind: "drop", ratio: 0.5 }, 2], // 0.032 < 0.5·0.99
    [{ kind: "drop", ratio: 0 }, 6],
    [{ kind: "soft-v", tau: 0.5 }, 2],
    [{ kind: "soft-v", tau: 0.95 }, 0],
    [{ kind: "q-and-drop", threshold: 0.01, ratio: 0.5 }, 2], // the drop fires first
    [{ kind: "q-and-drop", threshold: 0.95, ratio: 0.5 }, 0], // the threshold fires first
    [{ kind: "keep-all" }, 6],
    [{ kind: "first-k", k: 1 }, 1],
    [{ kind: "first-k", k: 9 }, 6],
    [{ kind: "elbow" }, 2], // 0.99 → 0.032 is the largest drop
  ];
  for (const [rule, kept] of cases) assert.equal(keptCount(steps, rule), kept, JSON.stringify(rule));
  // a gentle decline never trips the drop rule, however low it goes
  assert.equal(keptCount([0.9, 0.8, 0.7, 0.6].map((q, i) => step(i, q, 0)), { kind: "drop", ratio: 0.8 }), 4);
  // the elbow reads the shape, not the level: low but clearly separated Q-values still cut right
  assert.equal(keptCount([0.3, 0.28, 0.02, 0.01].map((q, i) => step(i, q, 0)), { kind: "elbow" }), 2);
  assert.equal(keptCount([0.9, 0.9, 0.9].map((q, i) => step(i, q, 0)), { kind: "elbow" }), 3);
  assert.equal(keptCount([], { kind: "elbow" }), 0);
  // steps without a recorded V fall back to their own Q
  assert.equal(keptCount([step(0, 0.9, 0), step(1, 0.3, 0)], { kind: "soft-v", tau: 0.5 }), 1);
  // the margin is taken against the best OTHER candidate, whatever order the log holds them in
  const shuffled = { index: 7, q: 0.8, topk: [{ index: 3, q: 0.75, gold: false }, { index: 7, q: 0.8, gold: false }] };
  assert.equal(keptCount([shuffled], { kind: "margin", delta: 0.1 }), 0);
  assert.equal(keptCount([shuffled], { kind: "margin", delta: 0.04 }), 1);
  // applyStop scores the kept prefix
  const m = applyStop({ steps, sf_idx: [0, 1] }, PAPER_RULE);
  assert.deepEqual(m, { precision: 1, recall: 1, f1: 1, coverage: 1, kept: 2 });
  // the ground-truth ceiling: a wrong pick before the gold ones caps every prefix
  const bound = oraclePrefixScore([{ steps, sf_idx: [0, 1] }, { steps, sf_idx: [1, 2] }, { steps, sf_idx: [99] }]);
  assert.ok(Math.abs(bound.f1 - (1 + 0.8 + 0) / 3) < 1e-12, `bound F1 ${bound.f1}`);
  assert.ok(Math.abs(bound.coverage - 2 / 3) < 1e-12);
  assert.ok(Math.abs(bound.avgKept - (2 + 3 + 0) / 3) < 1e-12, `bound kept ${bound.avgKept}`);
  const all = applyStop({ steps, sf_idx: [0, 1] }, { kind: "keep-all" });
  assert.equal(all.kept, 6);
  assert.ok(Math.abs(all.f1 - 0.5) < 1e-12);
});

test("prune keeps the picks of the threshold prefix whose leave-one-out Q clears tau", () => {
  // qa1-like: an earlier move of the person first (index 10), the latest one second (index 20, gold)
  const steps = [step(10, 1.02, 1.0), step(20, 0.9, 0.3), step(30, 0.2, 0.1)];
  const loo = [[1.02], [0.05, 0.9], [0.04, 0.88, 0.01]];
  const rec = { steps, sf_idx: [20], loo };
  assert.deepEqual(keptPicks(rec, PAPER_RULE), [0, 1]);
  assert.deepEqual(keptPicks(rec, PAPER_PRUNE_RULE), [1], "the earlier move is redundant once the latest is in");
  assert.deepEqual(applyStop(rec, PAPER_PRUNE_RULE), { precision: 1, recall: 1, f1: 1, coverage: 1, kept: 1 });
  assert.deepEqual(keptPicks(rec, { kind: "prune", threshold: 0.1, tau: 0.5 }), [1], "the row of the longer prefix is read");
  assert.deepEqual(keptPicks(rec, { kind: "prune", threshold: 0.95, tau: 0.5 }), [0], "a one-pick prefix is judged by its own Q");
  assert.deepEqual(keptPicks(rec, { kind: "prune", threshold: 0.5, tau: 0.95 }), []);
  // records without leave-one-out values (oracle-stopped evaluations, older files) keep the prefix
  assert.deepEqual(keptPicks({ steps, sf_idx: [20] }, PAPER_PRUNE_RULE), [0, 1]);
  assert.equal(keptCount(steps, PAPER_PRUNE_RULE), 2);
});

test("stop rules parse from the command line's text form", () => {
  assert.deepEqual(parseStopRule("q-threshold:0.36"), { kind: "q-threshold", threshold: 0.36 });
  assert.deepEqual(parseStopRule("margin:0.1"), { kind: "margin", delta: 0.1 });
  assert.deepEqual(parseStopRule("drop:0.3"), { kind: "drop", ratio: 0.3 });
  assert.deepEqual(parseStopRule("soft-v:0.3"), { kind: "soft-v", tau: 0.3 });
  assert.deepEqual(parseStopRule("q-and-drop:0.1,0.25"), { kind: "q-and-drop", threshold: 0.1, ratio: 0.25 });
  assert.deepEqual(parseStopRule("first-k:2"), { kind: "first-k", k: 2 });
  assert.deepEqual(parseStopRule("prune:0.5,0.4"), { kind: "prune", threshold: 0.5, tau: 0.4 });
  assert.deepEqual(parseStopRule("elbow"), { kind: "elbow" });
  assert.deepEqual(parseStopRule("keep-all"), { kind: "keep-all" });
  for (const bad of ["", "q-threshold", "q-threshold:x", "drop:0.1,0.2", "first-k:1.5", "elbow:1", "oracle", "q-and-drop:0.1", "prune:0.5"]) {
    assert.throws(() => parseStopRule(bad), RangeError, bad);
  }
});

test("calibration maximises F1 under the coverage floor, and says when the floor is out of reach", () => {
  // gold is the first pick; a second pick has Q between; in 1 of 10 episodes the gold pick's Q is low
  const recs = Array.from({ length: 10 }, (_, e) => ({
    sf_idx: [0],
    steps: [step(0, e === 0 ? 0.3 : 0.9, 0), step(1, 0.6, 0), step(2, 0.05, 0)],
  }));
  // highest F1 alone: a threshold in [0.6, 0.9) keeps only the gold pick (F1 0.9, coverage 0.9)
  const loose = calibrate(recs, "q-threshold", 0.9);
  assert.equal(loose.feasible, true);
  assert.equal(loose.validation.coverage, 0.9);
  assert.ok(loose.validation.f1 > 0.89, `F1 ${loose.validation.f1}`);
  // the 0.95 floor forces a threshold below 0.3, which keeps two picks
  const strict = calibrate(recs, "q-threshold", 0.95);
  assert.equal(strict.feasible, true);
  assert.equal(strict.validation.coverage, 1);
  assert.ok(strict.rule.kind === "q-threshold" && strict.rule.threshold < 0.3, JSON.stringify(strict.rule));
  assert.ok(Math.abs(strict.validation.f1 - 2 / 3) < 1e-9, `F1 ${strict.validation.f1}`);
  // a gold chunk never picked: no rule reaches the floor; the highest-coverage rule is reported
  const never = calibrate(recs.map((r) => ({ ...r, sf_idx: [99] })), "margin", 0.95);
  assert.equal(never.feasible, false);
  assert.equal(never.validation.coverage, 0);
  assert.throws(() => calibrate([], "drop"));
});

test("the validation split comes from the train generator under its own seed, never the test split", () => {
  const config = resolveConfig({ preset: "tiny" });
  const val = validationSource(config);
  const test = buildSource(config, "test");
  const trainSrc = buildSource(config, "train");
  const n = 50;
  const testIds = new Set(Array.from({ length: n }, (_, i) => test.sample(i).id));
  const texts = (s: ReturnType<typeof val.sample>) => Array.from({ length: s.chunks.length }, (_, j) => chunkAt(s.chunks, j)).join("\n");
  let sameAsTrain = 0;
  for (let i = 0; i < n; i++) {
    const v = val.sample(i);
    assert.ok(!testIds.has(v.id), `validation id ${v.id} is a test id`);
    assert.match(v.id, /-train-/);
    assert.notEqual(texts(v), texts(test.sample(i)), `validation sample ${i} equals test sample ${i}`);
    // the train generator with seed + offset, not the training samples themselves
    const again = datasetSource(config.envs, { split: "train", seed: config.seed + VALIDATION_SEED_OFFSET }).sample(i);
    assert.equal(texts(v), texts(again));
    if (texts(v) === texts(trainSrc.sample(i))) sameAsTrain++;
  }
  assert.equal(sameAsTrain, 0, "validation samples repeat training samples");
});

test("a tiny run scored with every rule: same trajectories, scores in [0, 1], calibration fitted on validation only", async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-stop-"));
  const config = resolveConfig({ preset: "tiny", overrides: ["steps_count=40"] });
  const res = await train(config, { runDir: path.join(tmp, "run") });
  assert.equal(res.status, "completed");
  const checkpoint = path.join(tmp, "run", "checkpoints", "best");
  const out = await benchPrecision(() => {}, ["qa1"], { checkpoints: { qa1: checkpoint }, lengths: [20, 60], samples: () => 12, validationSamples: 16, outDir: tmp });
  type Cal = { family: string; validation: { coverage: number; f1: number } };
  const r = out[0] as { calibrations: Cal[]; lengths: { numChunks: number; samples: number; lengthCalibration: { samples: number; calibrations: Cal[] }; rules: { name: string; coverage: number; f1: number; avgKept: number; coverageCI: { low: number; high: number } | null }[] }[] };
  assert.deepEqual(JSON.parse(fs.readFileSync(path.join(tmp, "precision-qa1.json"), "utf8")).lengths.length, 2);
  assert.deepEqual(r.calibrations.map((c) => c.family), PRECISION_FAMILIES);
  for (const len of r.lengths) {
    assert.equal(len.samples, 12);
    assert.deepEqual(len.rules.map((x) => x.name), ["paper", "paper+prune", "keep-all", ...PRECISION_FAMILIES.map((f) => `calibrated-${f}`), ...PRECISION_FAMILIES.map((f) => `length-calibrated-${f}`)]);
    for (const row of len.rules) {
      for (const v of [row.coverage, row.f1]) assert.ok(v >= 0 && v <= 1, `${len.numChunks} ${row.name}: ${v}`);
      assert.ok(row.avgKept >= 0 && row.avgKept <= config.envs.max_steps);
      assert.ok(row.coverageCI && row.coverageCI.low <= row.coverage && row.coverage <= row.coverageCI.high);
    }
  }

  // recompute by hand: the calibrations are those of the validation split's episodes
  const { nets, alpha } = await loadAgent(checkpoint);
  try {
    const gOpts = evalOptions(config, { neverTerminate: true, alpha, leaveOneOut: true });
    const val = await trajectories(nets, validationSource(config), 16, gOpts, config.max_action_length);
    for (const c of r.calibrations) {
      const mine = calibrate(val, c.family as (typeof PRECISION_FAMILIES)[number]);
      assert.deepEqual({ coverage: c.validation.coverage, f1: c.validation.f1 }, { coverage: mine.validation.coverage, f1: mine.validation.f1 }, c.family);
    }
    // the per-length calibrations come from validation samples at that length
    for (const len of r.lengths) {
      const valHere = await trajectories(nets, validationSource(config, len.numChunks), len.lengthCalibration.samples, gOpts, config.max_action_length);
      for (const c of len.lengthCalibration.calibrations) {
        const mine = calibrate(valHere, c.family as (typeof PRECISION_FAMILIES)[number]);
        assert.deepEqual({ coverage: c.validation.coverage, f1: c.validation.f1 }, { coverage: mine.validation.coverage, f1: mine.validation.f1 }, `${len.numChunks} ${c.family}`);
      }
    }
    // every rule keeps a prefix of one and the same trajectory; the paper rule is the record's own filter
    const test = buildSource(config, "test", 20);
    const { greedyEpisode } = await import("../server/qrag/agent/greedy.ts");
    for (let i = 0; i < 12; i++) {
      const a = await greedyEpisode(nets, test.sample(i), gOpts);
      const b = await greedyEpisode(nets, test.sample(i), gOpts);
      assert.deepEqual(a.pred_idx, b.pred_idx, "greedy trajectories are deterministic");
      assert.equal(a.pred_idx.length, config.envs.max_steps, "no oracle stop");
      assert.equal(a.loo?.length, a.pred_idx.length, "leave-one-out Q of every prefix");
      const { threshold: _t, ...filtered } = a.filtered;
      assert.deepEqual(applyStop(a, PAPER_RULE), filtered);
      for (const family of PRECISION_FAMILIES) {
        const rule = calibrate(val, family).rule;
        const kept = applyStop(a, rule).kept;
        assert.ok(kept >= 0 && kept <= a.pred_idx.length);
      }
    }
    // evaluate(): a stop rule re-scores the same picks; without one, the records' Q-threshold filter
    const drop: StopRule = { kind: "drop", ratio: 0.5 };
    const plain = await evaluate({ checkpoint, numSamples: 12, neverTerminate: true });
    const ruled = await evaluate({ checkpoint, numSamples: 12, neverTerminate: true, stop: drop });
    assert.deepEqual(ruled.records.map((x) => x.pred_idx), plain.records.map((x) => x.pred_idx));
    const want = scoreRule(plain.records, drop);
    assert.deepEqual({ f1: ruled.summary.filtered.f1, coverage: ruled.summary.filtered.coverage, avgKept: ruled.summary.filtered.avgKept }, { f1: want.f1, coverage: want.coverage, avgKept: want.avgKept });
    assert.equal(ruled.summary.filtered.rule, "drop ρ=0.50");
    const paperWant = scoreRule(plain.records, PAPER_RULE);
    assert.deepEqual({ f1: plain.summary.filtered.f1, coverage: plain.summary.filtered.coverage, avgKept: plain.summary.filtered.avgKept }, { f1: paperWant.f1, coverage: paperWant.coverage, avgKept: paperWant.avgKept });
    assert.equal(plain.summary.filtered.rule, undefined);
    // prune reads the leave-one-out Q that only episodes run to max_steps record
    const pruned = await evaluate({ checkpoint, numSamples: 12, neverTerminate: true, stop: PAPER_PRUNE_RULE });
    assert.ok(pruned.records.every((x) => x.loo?.length === x.pred_idx.length));
    assert.equal(pruned.summary.filtered.f1, scoreRule(pruned.records, PAPER_PRUNE_RULE).f1);
    await assert.rejects(evaluate({ checkpoint, numSamples: 2, stop: PAPER_PRUNE_RULE }), /--stop prune needs --never-terminate/);
    const len20 = r.lengths.find((l) => l.numChunks === 20)!;
    const trajs = await trajectories(nets, test, 12, gOpts, config.max_action_length);
    const paper = scoreRule(trajs, PAPER_RULE);
    assert.deepEqual({ coverage: len20.rules[0].coverage, f1: len20.rules[0].f1 }, { coverage: paper.coverage, f1: paper.f1 });
  } finally {
    nets.dispose();
  }
});
