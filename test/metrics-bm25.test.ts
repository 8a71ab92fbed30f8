import { test } from "node:test";
import assert from "node:assert/strict";
import { aggregate, qThresholdFilter, retrievalMetrics } from "../server/qrag/evaluation/metrics.ts";
import { Bm25Index } from "../server/qrag/baselines/bm25.ts";
import type { ChunkList } from "../server/qrag/types.ts";
import { Rng } from "../server/qrag/util/rng.ts";

const close = (a: number, b: number, tol = 1e-12) => assert.ok(Math.abs(a - b) <= tol, `${a} vs ${b}`);

test("retrieval metrics: precision, recall, F1, coverage (= reference em)", () => {
  // P = {1,2,3}, G = {2,5}: tp 1 → P 1/3, R 1/2, F1 = 2·(1/6)/(5/6) = 0.4, not covered
  const m = retrievalMetrics([1, 2, 3], [2, 5]);
  close(m.precision, 1 / 3);
  close(m.recall, 0.5);
  close(m.f1, 0.4);
  assert.equal(m.coverage, 0);
  // all gold found with one extra: P 2/3, R 1, F1 0.8, coverage 1 (em is coverage, not equality)
  const c = retrievalMetrics([5, 7, 2], [2, 5]);
  close(c.precision, 2 / 3);
  close(c.f1, 0.8);
  assert.equal(c.coverage, 1);
  assert.deepEqual(retrievalMetrics([2, 2], [2]), { precision: 1, recall: 1, f1: 1, coverage: 1 });
});

test("retrieval metrics: empty cases", () => {
  assert.deepEqual(retrievalMetrics([], []), { precision: 1, recall: 1, f1: 1, coverage: 1 });
  assert.deepEqual(retrievalMetrics([], [1]), { precision: 0, recall: 0, f1: 0, coverage: 0 });
  // nothing to find: the empty gold set is covered, but no prediction is correct
  assert.deepEqual(retrievalMetrics([1], []), { precision: 0, recall: 0, f1: 0, coverage: 1 });
  assert.deepEqual(retrievalMetrics([1], [2]), { precision: 0, recall: 0, f1: 0, coverage: 0 });
});

test("aggregate: means over episodes, NaN when empty", () => {
  const a = aggregate([retrievalMetrics([1, 2, 3], [2, 5]), retrievalMetrics([5, 7, 2], [2, 5])]);
  assert.equal(a.count, 2);
  close(a.f1, 0.6);
  close(a.coverage, 0.5);
  close(a.precision, 0.5);
  close(a.recall, 0.75);
  const e = aggregate([]);
  assert.equal(e.count, 0);
  assert.ok(Number.isNaN(e.f1));
});

test("Q-threshold filter cuts at the first q ≤ threshold", () => {
  assert.equal(qThresholdFilter([0.917, 0.99, 0.032, 0.015, 0.012, 0.006]), 2); // docs/method.md §4.2 example
  assert.equal(qThresholdFilter([0.917, 0.99, 0.032, 0.015, 0.012, 0.006], 0.95), 0);
  assert.equal(qThresholdFilter([0.917, 0.99, 0.032, 0.015, 0.012, 0.006], -Infinity), 6);
  assert.equal(qThresholdFilter([0.9, 0.5, 0.8]), 1); // equal to the threshold is cut
  assert.equal(qThresholdFilter([0.9, 0.4, 0.8]), 1); // no resumption after a low step
  assert.equal(qThresholdFilter([]), 0);
});

test("BM25 agrees with a hand-computed score on a 3-document corpus", () => {
  const docs = ["The cat sat on the mat.", "The dog barked", "a cat and a dog played"];
  const idx = Bm25Index.build(docs);
  // |d| = 6, 3, 6 → avgdl 5. df(cat) 2, df(mat) 1, N 3.
  // idf(cat) = ln(1 + (3 − 2 + .5)/(2 + .5)) = ln 1.6;  idf(mat) = ln(1 + 2.5/1.5) = ln(8/3)
  // norm(d0) = 1.2·(.25 + .75·6/5) = 1.38, each tf-1 term weighs 2.2/(1 + 1.38)
  close(idx.avgDocLength, 5);
  close(idx.idf("cat"), Math.log(1.6));
  const s0 = (Math.log(1.6) + Math.log(8 / 3)) * (2.2 / 2.38);
  const s2 = Math.log(1.6) * (2.2 / 2.38);
  close(idx.score("cat mat", 0), s0, 1e-6);
  close(idx.score("Cat? MAT!", 0), s0, 1e-6);
  close(idx.score("cat mat", 2), s2, 1e-6);
  assert.equal(idx.score("cat mat", 1), 0);
  const hits = idx.topK("cat mat", 3);
  assert.deepEqual(hits.map((h) => h.index), [0, 2, 1]); // chunk 1 pads with score 0
  close(hits[0].score, s0, 1e-6);
  assert.equal(hits[2].score, 0);
  // tf = 2 and a short document: "the" in d0 (tf 2, norm 1.38) vs d1 (tf 1, norm 1.2·(.25 + .75·.6) = .84)
  close(idx.score("the the", 0), (Math.log(1.6) * 2 * 2.2) / (2 + 1.38), 1e-6); // repeated query words count once
  close(idx.score("the", 1), (Math.log(1.6) * 2.2) / (1 + 0.84), 1e-6);
  // the available mask excludes chunks
  assert.deepEqual(idx.topK("cat mat", 2, Uint8Array.from([0, 1, 1])).map((h) => h.index), [2, 1]);
  assert.deepEqual(idx.topK("unknown words", 2).map((h) => h.index), [0, 1]);
});

test("BM25 ranks the obviously matching chunk first in a 50,000-chunk lazy haystack", () => {
  const vocab = ["river", "stone", "window", "paper", "garden", "music", "engine", "silver", "forest", "letter", "market", "candle"];
  const n = 50_000, needle = 31_337;
  const rng = new Rng(5);
  const seeds = Uint32Array.from({ length: n }, () => rng.nextU32());
  // Texts are generated on demand from a per-chunk seed, as long haystack views do.
  const chunks: ChunkList = {
    length: n,
    at(i: number) {
      if (i < 0 || i >= n) return undefined;
      if (i === needle) return "Mary travelled to the hallway and left the milk there.";
      const r = new Rng(seeds[i]);
      return Array.from({ length: 8 + r.int(10) }, () => r.choice(vocab)).join(" ") + ".";
    },
  };
  const idx = Bm25Index.build(chunks);
  assert.equal(idx.numDocs, n);
  const hits = idx.topK("Where is the milk?", 5);
  assert.equal(hits[0].index, needle);
  assert.ok(hits[0].score > 0);
  assert.equal(hits.length, 5);
  const again = idx.topK("river stone", 10);
  for (let i = 1; i < again.length; i++) assert.ok(again[i - 1].score >= again[i].score);
  close(again[3].score, idx.score("river stone", again[3].index), 1e-6);
});
