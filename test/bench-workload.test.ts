/**
 * The benchmark workload (docs/workload.md §1.1) must really be N distinct random chunks: a
 * generator that repeated chunks once made encode and episode timings look 20–30× faster, because
 * identical rows are embedded once.
 */
import test from "node:test";
import assert from "node:assert/strict";
import { materialized, workloadSource } from "../server/qrag/bench/workload.ts";
import { workloadConfig } from "../server/qrag/bench/workload-bench.ts";
import { chunkAt } from "../server/qrag/types.ts";

test("workload documents: N distinct 24-word chunks, 2 supports, a 12-word question drawn from them", () => {
  const n = 20_000;
  const s = workloadSource(n, 3).sample(0);
  assert.equal(s.chunks.length, n);
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) {
    const c = chunkAt(s.chunks, i);
    assert.equal(c.split(" ").length, 24, `chunk ${i}`);
    seen.add(c);
  }
  assert.equal(seen.size, n, "every chunk is distinct");
  assert.equal(s.supportIdx.length, 2);
  const q = s.question.split(" ");
  assert.equal(q.length, 12);
  const support = new Set(s.supportIdx.flatMap((i) => chunkAt(s.chunks, i).split(" ")));
  for (const w of q) assert.ok(support.has(w), `question word ${w} comes from a supporting chunk`);
});

test("workload documents are deterministic by seed and differ across seeds and samples", () => {
  const a = workloadSource(500, 7).sample(2);
  const b = workloadSource(500, 7).sample(2);
  assert.equal(a.question, b.question);
  assert.deepEqual(a.supportIdx, b.supportIdx);
  assert.equal(chunkAt(a.chunks, 499), chunkAt(b.chunks, 499));
  assert.notEqual(chunkAt(workloadSource(500, 8).sample(2).chunks, 0), chunkAt(a.chunks, 0));
  assert.notEqual(chunkAt(workloadSource(500, 7).sample(3).chunks, 0), chunkAt(a.chunks, 0));
});

test("a materialized workload sample holds the lazy sample's chunk texts as an array (what the timed encodes read)", () => {
  const lazy = workloadSource(300, 4).sample(1);
  const m = materialized(lazy);
  assert.ok(Array.isArray(m.chunks));
  assert.equal(m.chunks.length, 300);
  for (let i = 0; i < 300; i++) assert.equal(chunkAt(m.chunks, i), chunkAt(lazy.chunks, i), `chunk ${i}`);
  assert.deepEqual([m.question, m.supportIdx], [lazy.question, lazy.supportIdx]);
});

test("the counting shape (CI's hot-loop ceiling) packs states as the reference workload does: the same max_len, so the same padded lengths and programs", () => {
  const ref = workloadConfig("transformer", "reference");
  const counts = workloadConfig("transformer", "counts");
  assert.equal(counts.algo.encoder.max_len, ref.algo.encoder.max_len);
  assert.equal(counts.max_action_length_in_memory, ref.max_action_length_in_memory);
  assert.equal(counts.envs.max_steps, ref.envs.max_steps);
  assert.ok(counts.algo.encoder.dim < ref.algo.encoder.dim, "a sliver of the compute");
});
