/**
 * The maths of the review tools, against independently worked values: the Q-threshold view of an
 * episode (equal to the engine's own filtered scores at the episode's threshold), Wilson
 * intervals, group bands of runs of unequal length, and the config diff.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { configDiff, flattenConfig, groupBy } from "../lib/analysis/config-diff.ts";
import { groupBand } from "../lib/analysis/bands.ts";
import { meanThresholdView, pickFate, thresholdView } from "../lib/analysis/threshold.ts";
import { wilsonInterval } from "../lib/contracts/intervals.ts";
import { Rng } from "../server/qrag/util/rng.ts";

const close = (a: number, b: number, tol = 1e-4) => assert.ok(Math.abs(a - b) <= tol, `${a} ≉ ${b}`);

test("the threshold view keeps the prefix before the first Q ≤ threshold and scores it", () => {
  // gold {3, 7}; picks 3 (Q .9), 5 (Q .7), 7 (Q .4), 1 (Q .8)
  const rec = { pred_idx: [3, 5, 7, 1], q_values: [0.9, 0.7, 0.4, 0.8], sf_idx: [3, 7] };
  const at5 = thresholdView(rec, 0.5);
  assert.equal(at5.kept, 2, "stops at the first Q ≤ 0.5 even though a later Q is higher");
  assert.deepEqual([at5.precision, at5.recall, at5.coverage], [0.5, 0.5, 0]);
  close(at5.f1, 0.5);
  const at3 = thresholdView(rec, 0.3);
  assert.equal(at3.kept, 4);
  assert.deepEqual([at3.precision, at3.recall, at3.coverage], [0.5, 1, 1]);
  close(at3.f1, 2 / 3);
  const at95 = thresholdView(rec, 0.95);
  assert.equal(at95.kept, 0);
  assert.deepEqual([at95.precision, at95.recall, at95.f1, at95.coverage], [0, 0, 0, 0]);
  assert.equal(thresholdView(rec, 0.9).kept, 0, "Q equal to the threshold stops (≤, as the reference)");
  const mean = meanThresholdView([rec, { pred_idx: [7, 3], q_values: [0.8, 0.6], sf_idx: [3, 7] }], 0.5);
  assert.equal(mean.episodes, 2);
  close(mean.coverage, 0.5);
  close(mean.kept, 2);
  close(mean.f1, (0.5 + 1) / 2);
});

test("a pick's fate: kept inside the threshold prefix, pruned there only while pruning is on, dropped after it", () => {
  const view = { kept: 3 };
  const pruned = { keep: [0, 2] };
  assert.deepEqual([0, 1, 2, 3].map((i) => pickFate(i, view, pruned, true)), ["kept", "pruned", "kept", "dropped"]);
  assert.deepEqual([0, 1, 2, 3].map((i) => pickFate(i, view, pruned, false)), ["kept", "kept", "kept", "dropped"]);
  assert.deepEqual([0, 1, 2, 3].map((i) => pickFate(i, view, null, true)), ["kept", "kept", "kept", "dropped"]);
});

test("Wilson 95 % intervals match worked values and stay inside [0, 1]", () => {
  const i1 = wilsonInterval(8, 10)!;
  close(i1.low, 0.4902);
  close(i1.high, 0.9433);
  const i0 = wilsonInterval(0, 10)!;
  assert.equal(i0.low, 0);
  close(i0.high, 0.2775);
  const iAll = wilsonInterval(100, 100)!;
  close(iAll.low, 0.9630);
  assert.equal(iAll.high, 1);
  const i3 = wilsonInterval(2, 3)!;
  close(i3.low, 0.2077);
  close(i3.high, 0.9385);
  assert.equal(wilsonInterval(0, 0), null);
  assert.equal(wilsonInterval(4, 3), null);
  // wider for fewer samples at the same proportion
  const w = (k: number, n: number) => wilsonInterval(k, n)!.high - wilsonInterval(k, n)!.low;
  assert.ok(w(3, 10) > w(30, 100) && w(30, 100) > w(300, 1000));
});

test("group bands align runs by step, use the sample std, and end where fewer than 2 runs remain", () => {
  const a = [{ step: 0, value: 1 }, { step: 10, value: 2 }, { step: 20, value: 3 }];
  const b = [{ step: 0, value: 3 }, { step: 10, value: 4 }, { step: 20, value: 5 }, { step: 30, value: 9 }, { step: 40, value: 9 }];
  const c = [{ step: 0, value: 5 }, { step: 5, value: 0 }, { step: 10, value: 6 }];
  const band = groupBand([a, b, c]);
  assert.deepEqual(band.points.map((p) => p.step), [0, 10, 20], "step 5 (one run) is skipped; 30, 40 are past the end");
  assert.equal(band.endsAt, 30);
  assert.equal(band.runs, 3);
  const p0 = band.points[0];
  assert.deepEqual([p0.mean, p0.std, p0.min, p0.max, p0.runs], [3, 2, 1, 5, 3]);
  const p20 = band.points[2];
  assert.deepEqual([p20.mean, p20.min, p20.max, p20.runs], [4, 3, 5, 2]);
  close(p20.std, Math.SQRT2);
  assert.equal(groupBand([a, b]).endsAt, 30);
  assert.equal(groupBand([a, a]).endsAt, null, "runs of equal length: the band goes to the end");
  assert.deepEqual(groupBand([a]).points, [], "one run is no band");

  // random runs: every band point is the mean of exactly the runs that logged that step
  const rng = new Rng(7);
  const runs = Array.from({ length: 6 }, () => Array.from({ length: 20 + Math.floor(rng.next() * 30) }, (_, i) => ({ step: i * 10, value: rng.next() })));
  for (const p of groupBand(runs).points) {
    const vs = runs.map((r) => r.find((q) => q.step === p.step)?.value).filter((v): v is number => v !== undefined);
    assert.equal(p.runs, vs.length);
    close(p.mean, vs.reduce((x, y) => x + y, 0) / vs.length, 1e-12);
  }
});

test("the config diff lists only differing keys; group by a key", () => {
  const base = { seed: 1, envs: { name: "babilong", task: "qa1", num_sentences: [50, 100] }, algo: { encoder: { type: "bow", dim: 128 } } };
  const configs = {
    r1: base,
    r2: { ...base, seed: 2 },
    r3: { ...base, envs: { ...base.envs, task: "qa2", num_sentences: [50, 100] }, algo: { encoder: { type: "bow", dim: 64 } } },
    r4: { ...base, envs: { ...base.envs, noise: "/books" } },
  };
  const rows = configDiff(configs);
  assert.deepEqual(rows.map((r) => r.key), ["algo.encoder.dim", "envs.noise", "envs.task", "seed"]);
  assert.deepEqual(rows.find((r) => r.key === "envs.noise")!.values, { r1: undefined, r2: undefined, r3: undefined, r4: "/books" });
  assert.equal(flattenConfig(base).get("envs.num_sentences"), base.envs.num_sentences, "arrays are leaves");
  assert.deepEqual([...groupBy(configs, "envs.task")], [['"qa1"', ["r1", "r2", "r4"]], ['"qa2"', ["r3"]]]);
  assert.deepEqual(configDiff({ r1: base, r2: structuredClone(base) }), []);
});
