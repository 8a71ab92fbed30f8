/** Sweep chart maths: Wilson for coverage, normal interval for F1, token labels. */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { AcrossSampleDto, SweepPoint } from "../lib/contracts/index.ts";
import { distinctLabels, fmtTokens, sweepCurve, sweepInterval } from "../lib/analysis/sweep-series.ts";
import { wilsonInterval } from "../lib/contracts/intervals.ts";

const scores = (coverage: number, f1: number) => ({ precision: 0.5, recall: coverage, f1, coverage });
const point = (numChunks: number, tokens: number, samples: number, coverage: number, extra: Partial<SweepPoint> = {}): SweepPoint => ({
  numChunks, label: "", tokens, samples, oracle_stop: false, threshold: 0.5, qrag: scores(coverage, 0.6), qragFiltered: { ...scores(coverage, 0.8), avgKept: 1 },
  baselineK: 3, episodeSeconds: 0.1, encodeSeconds: 0.05, f1Sd: { qrag: 0.2, qragFiltered: 0.1 }, ...extra,
});

test("coverage gets the Wilson interval of its successes over samples; F1 gets mean ± 1.96·sd/√n, clamped", () => {
  const p = point(50, 1700, 20, 0.85);
  assert.deepEqual(sweepInterval(p, "qrag", "coverage"), wilsonInterval(17, 20));
  const f1 = sweepInterval(p, "qragFiltered", "f1")!;
  assert.ok(Math.abs(f1.low - (0.8 - (1.96 * 0.1) / Math.sqrt(20))) < 1e-12);
  assert.ok(Math.abs(f1.high - (0.8 + (1.96 * 0.1) / Math.sqrt(20))) < 1e-12);
  const wide = sweepInterval(point(50, 1700, 4, 1, { f1Sd: { qrag: 0.9, qragFiltered: 0.9 } }), "qrag", "f1")!;
  assert.equal(wide.high, 1, "an F1 interval never leaves [0, 1]");
  assert.equal(sweepInterval(p, "bm25", "coverage"), null, "a sweep without baselines has no BM25 figure");
  assert.equal(sweepInterval({ ...p, f1Sd: undefined }, "qrag", "f1"), null, "no spread stored (an old upload): no F1 interval");
});

test("curves follow measured tokens and skip methods a sweep lacks", () => {
  const pts = [point(1200, 41_000, 10, 0.5), point(50, 1700, 10, 1, { bm25: scores(0.3, 0.2) })];
  assert.deepEqual(sweepCurve(pts, "qrag", "coverage").map((f) => [f.tokens, f.value]), [[1700, 1], [41_000, 0.5]]);
  assert.deepEqual(sweepCurve(pts, "bm25", "coverage").map((f) => f.numChunks), [50]);
});

test("token labels", () => {
  assert.deepEqual([1700, 4100, 33_000, 131_000, 1_340_000, 13_400_000, 950].map(fmtTokens), ["1.7K", "4.1K", "33K", "131K", "1.3M", "13.4M", "950"]);
});

test("across lengths: failures, outcome changes and the first break", async () => {
  const { filterAcross } = await import("../lib/analysis/across.ts");
  const cell = (found: number) => ({ episodeId: 1, coverage: found >= 2 ? 1 : 0, f1: 0, steps: [], found, gold: 2 });
  const samples: AcrossSampleDto[] = [
    { sample: "a", question: "", cells: { 50: cell(2), 160: cell(2), 1200: cell(1) } },
    { sample: "b", question: "", cells: { 50: cell(2), 160: cell(2), 1200: cell(2) } },
    { sample: "c", question: "", cells: { 50: cell(0), 160: cell(2) } },
    { sample: "d", question: "", cells: { 50: cell(1), 1200: cell(1) } },
  ];
  const lengths = [50, 160, 1200];
  assert.deepEqual(filterAcross(samples, lengths, "failures").map((r) => r.sample.sample), ["a", "c", "d"]);
  assert.deepEqual(filterAcross(samples, lengths, "changes").map((r) => r.sample.sample), ["a", "c"]);
  assert.deepEqual(filterAcross(samples, lengths, "all").map((r) => r.firstBreak), [1200, null, null, null], "c fails first then recovers: no break; d never succeeded");
});

test("overlaid sweeps with one label (two sweeps of one checkpoint) get distinct legend labels; distinct ones stay as they are", () => {
  const at = ["2026-11-26T10:00:00.000Z", "2026-11-26T11:30:00.000Z", "2026-11-26T12:00:00.000Z"];
  assert.deepEqual(distinctLabels(["best @ update 60, Q ≥ 0.5", "last @ update 80, Q ≥ 0.5", "uploaded x"], at), ["best @ update 60, Q ≥ 0.5", "last @ update 80, Q ≥ 0.5", "uploaded x"]);
  assert.deepEqual(distinctLabels(["best @ update 60, Q ≥ 0.5", "best @ update 60, Q ≥ 0.5", "other"], at), [
    "best @ update 60, Q ≥ 0.5, created 2026-11-26 10:00",
    "best @ update 60, Q ≥ 0.5, created 2026-11-26 11:30",
    "other",
  ]);
  // the same minute too: numbered
  const same = distinctLabels(["a", "a"], [at[0], at[0]]);
  assert.equal(new Set(same).size, 2);
  assert.deepEqual(same, ["a, created 2026-11-26 10:00 #1", "a, created 2026-11-26 10:00 #2"]);
});
