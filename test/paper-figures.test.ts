/** The paper's reference curves and the reader's accuracy series on the sweep chart (lib/analysis). */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { SweepPoint } from "../lib/contracts/index.ts";
import { BABILONG_PAPER_CURVES, PAPER_LENGTHS, paperCurves, paperLengthTokens, paperRows } from "../lib/analysis/paper-figures.ts";
import { readerCurve, readerModels } from "../lib/analysis/sweep-series.ts";

const scores = { precision: 0.5, recall: 1, f1: 0.6, coverage: 1 };
const point = (numChunks: number, tokens: number, extra: Partial<SweepPoint> = {}): SweepPoint => ({
  numChunks, label: "", tokens, samples: 10, oracle_stop: false, threshold: 0.5, qrag: scores, qragFiltered: { ...scores, avgKept: 1 },
  baselineK: 3, episodeSeconds: 0.1, encodeSeconds: 0.05, ...extra,
});
const reader = (accuracy: number, n: number) => ({
  model: "gguf:tiny.gguf", n, correct: accuracy * n, accuracy, ci: { low: accuracy - 0.1, high: Math.min(1, accuracy + 0.1) }, failures: 0, failureKinds: {},
  promptTokens: 400, completionTokens: 3, msPerAnswer: 60, retries: 0,
});

test("a paper length sits at our point of the same BabiLong config, else at its sentences × our median tokens per chunk", () => {
  // our 50- and 1200-chunk points measured 35 and 36 tokens per chunk; median of [35, 36, 40] = 36
  const x = paperLengthTokens([point(50, 1750), point(1200, 43_200), point(300, 12_000)]);
  assert.equal(x["1K"], 1750, "the 1K config is our 50-chunk point, wherever our text put it");
  assert.equal(x["32K"], 43_200);
  assert.equal(x["4K"], 160 * 36, "not swept here: 160 sentences at our median 36 tokens per chunk");
  assert.equal(x["10M"], 400_000 * 36);
  assert.equal(paperLengthTokens([])["128K"], 128_000, "no points at all: the paper's nominal size");
});

test("rows are clipped to the chart's range and skip lengths the paper does not report", () => {
  const x = Object.fromEntries(PAPER_LENGTHS.map((l) => [l.label, l.chunks * 35])) as ReturnType<typeof paperLengthTokens>;
  const mamba = BABILONG_PAPER_CURVES.find((c) => c.id === "mamba-avg")!;
  assert.deepEqual(paperRows(mamba, x, 1, 1e9).map((r) => r.length), ["1K", "4K", "32K", "128K"], "Mamba has no 1M/10M figure");
  const qrag = BABILONG_PAPER_CURVES.find((c) => c.id === "qrag-avg")!;
  assert.deepEqual(paperRows(qrag, x, 1000, 50_000), [{ x: 1750, y: 0.965, length: "1K" }, { x: 5600, y: 0.965, length: "4K" }, { x: 42_000, y: 0.967, length: "32K" }]);
});

test("which curves: Q-RAG's qa3 figure only when every sweep is qa3; 'all' adds the comparisons once", () => {
  assert.deepEqual(paperCurves("qrag", ["qa3", "qa3"]).map((c) => c.id), ["qrag-qa3"]);
  assert.deepEqual(paperCurves("qrag", ["qa3", "qa1"]).map((c) => c.id), ["qrag-avg"]);
  assert.deepEqual(paperCurves("none", ["qa1"]), []);
  const all = paperCurves("all", ["qa2"]).map((c) => c.id);
  assert.equal(all[0], "qrag-avg");
  assert.equal(new Set(all).size, all.length);
  assert.ok(!all.includes("qrag-qa3") && all.includes("titans-avg") && all.includes("multistep-avg"));
  for (const c of BABILONG_PAPER_CURVES) for (const v of Object.values(c.values)) assert.ok(v > 0 && v <= 1, `${c.id}: a share`);
});

test("the reader's accuracy series follows measured tokens, carries its stored interval and n, and skips lengths without a reader", () => {
  const pts = [point(1200, 43_000, { reader: reader(0.6, 20) }), point(50, 1750, { reader: reader(0.9, 20) }), point(160, 5600)];
  assert.deepEqual(readerCurve(pts).map((f) => [f.tokens, f.value, f.samples, f.interval]), [
    [1750, 0.9, 20, { low: 0.9 - 0.1, high: 1 }],
    [43_000, 0.6, 20, { low: 0.6 - 0.1, high: 0.7 }],
  ]);
  assert.deepEqual(readerModels(pts), ["gguf:tiny.gguf"]);
  assert.deepEqual(readerModels([point(50, 1750)]), []);
});
