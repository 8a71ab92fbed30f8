import { test } from "node:test";
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import { BABI_TASKS, babiSource } from "../server/qrag/data/babi/index.ts";
import { BabilongChunks, babilongSource, streamChunks } from "../server/qrag/data/babilong.ts";
import {
  SWEEP_LENGTHS,
  chunksForTokens,
  contextLengthLabel,
  estimateContextTokens,
  formatTokens,
  measureTokensPerChunk,
} from "../server/qrag/data/context-length.ts";
import { NoisePool, sotuNoisePool } from "../server/qrag/data/noise/pool.ts";
import { chunkAt, iterChunks, type Sample, type SampleSource } from "../server/qrag/types.ts";

const ACTORS = ["Mary", "John", "Daniel", "Sandra"];
const PLACES = ["bathroom", "bedroom", "garden", "hallway", "kitchen", "office"];

/** Hand-made fact source: sample i has sizes[i] distinct facts; supports = first and last fact (given unsorted). */
function fakeFacts(sizes: number[]): SampleSource {
  return {
    name: "fake-qa2",
    size: sizes.length,
    sample(i: number): Sample {
      const n = sizes[i];
      const chunks = Array.from({ length: n }, (_, j) => `${ACTORS[j % 4]} went to the ${PLACES[(i + j) % 6]} (story ${i}, fact ${j}).`);
      return {
        id: `fake/${i}`,
        question: `Where is ${ACTORS[(n - 1) % 4]}? `,
        answer: PLACES[(i + n - 1) % 6],
        chunks,
        supportIdx: n > 1 ? [n - 1, 0] : [0],
        meta: { task: "qa2" },
      };
    },
  };
}

function smallPool(): NoisePool {
  const books = [40, 300, 7, 120, 60].map((n, b) => ({
    title: `book${b}`,
    text: Array.from({ length: n }, (_, j) => `Volume ${b} carries plain line ${j} here.`).join(" "),
  }));
  return NoisePool.fromBooks(books);
}

function texts(s: Sample): string[] {
  return [...iterChunks(s.chunks)];
}

const pool = smallPool();

test("mixing follows Q-RAG: total = numSentences, facts in order, supports at their slots", () => {
  const sizes = [2, 10, 49, 50, 60, 1];
  const facts = fakeFacts(sizes);
  const src = babilongSource({ facts, numSentences: 50, pool, seed: 1, split: "test" });
  assert.equal(src.size, sizes.length);
  for (let i = 0; i < sizes.length; i++) {
    const s = src.sample(i);
    const f = facts.sample(i);
    const factTexts = f.chunks as string[];
    const all = texts(s);
    assert.equal(s.chunks.length, Math.max(50, sizes[i]), `sample ${i} length`);
    assert.equal(all.length, s.chunks.length);
    // facts appear exactly once each, in order; every other chunk is pool noise
    const factSet = new Set(factTexts);
    assert.deepEqual(all.filter((t) => factSet.has(t)), factTexts);
    assert.equal(all.filter((t) => !factSet.has(t)).length, Math.max(50 - sizes[i], 0));
    assert.ok(s.chunks instanceof BabilongChunks);
    const ch = s.chunks as BabilongChunks;
    for (let j = 0; j < factTexts.length; j++) assert.equal(all[ch.factSlots[j]], factTexts[j]);
    for (let k = 0; k < ch.noise.length; k++) assert.ok(!factSet.has(pool.sentence(ch.noise[k])));
    // supportIdx: sorted, unique, pointing at the supporting fact texts
    const want = [...new Set(f.supportIdx)].map((j) => factTexts[j]).sort();
    assert.deepEqual(s.supportIdx.map((j) => chunkAt(s.chunks, j)).sort(), want);
    assert.deepEqual(s.supportIdx, [...s.supportIdx].sort((a, b) => a - b));
    assert.equal(s.question, f.question);
    assert.equal(s.answer, f.answer);
    assert.deepEqual(s.meta, { task: "qa2", numSentences: 50 });
  }
  // more facts than numSentences: no noise at all, facts verbatim
  const big = src.sample(4);
  assert.deepEqual(texts(big), facts.sample(4).chunks);
  assert.deepEqual(big.supportIdx, [0, 59]);
  assert.throws(() => src.sample(sizes.length), RangeError);
  assert.equal(big.chunks.at(big.chunks.length), undefined);
  assert.equal(big.chunks.at(-1), chunkAt(big.chunks, 59));
});

test("samples are deterministic by (seed, split, index) and independent of call order", () => {
  const facts = fakeFacts([5, 5, 5, 5]);
  const mk = (seed: number, split = "test") => babilongSource({ facts, numSentences: 200, pool, seed, split });
  const a = mk(7);
  const later = texts(a.sample(3));
  const b = mk(7);
  assert.deepEqual(texts(b.sample(0)), texts(a.sample(0)));
  assert.deepEqual(texts(b.sample(3)), later);
  assert.deepEqual(b.sample(2).supportIdx, a.sample(2).supportIdx);
  assert.notDeepEqual(texts(mk(8).sample(0)), texts(a.sample(0)));
  assert.notDeepEqual(texts(mk(7, "train").sample(0)), texts(a.sample(0)));
  assert.notDeepEqual(texts(a.sample(1)), texts(a.sample(0)));
  // noise = valid pool indices (run structure is covered by test/noise-pool.test.ts)
  const ch = a.sample(0).chunks as BabilongChunks;
  assert.equal(ch.noise.length, 195);
  assert.ok(ch.noise.every((k) => k >= 0 && k < pool.size));
});

test("a list of lengths is drawn per sample", () => {
  const lengths = [20, 50, 160];
  const src = babilongSource({ facts: fakeFacts(Array(30).fill(4)), numSentences: lengths, pool, seed: 3, split: "test" });
  const seen = new Set<number>();
  for (let i = 0; i < 30; i++) {
    const s = src.sample(i);
    assert.ok(lengths.includes(s.chunks.length));
    assert.equal(s.meta?.numSentences, s.chunks.length);
    seen.add(s.chunks.length);
  }
  assert.equal(seen.size, 3);
  assert.throws(() => babilongSource({ facts: fakeFacts([1]), numSentences: [], pool, seed: 1, split: "x" }), RangeError);
  assert.throws(() => babilongSource({ facts: fakeFacts([1]), numSentences: 2.5, pool, seed: 1, split: "x" }), RangeError);
});

test("a 400,000-chunk sample is small in memory and streams the same chunks as at(i)", () => {
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc") as () => void;
  const sotu = sotuNoisePool();
  const facts = fakeFacts([12, 3]);
  const src = babilongSource({ facts, numSentences: 400_000, pool: sotu, seed: 42, split: "test" });
  src.sample(1); // warm up code paths
  gc();
  const mem = () => {
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  const before = mem();
  const s = src.sample(0);
  gc();
  const grew = mem() - before;
  assert.equal(s.chunks.length, 400_000);
  assert.ok(grew < 20 * 2 ** 20, `memory grew ${(grew / 2 ** 20).toFixed(1)} MB`);
  console.log(`400k-chunk sample: memory +${(grew / 2 ** 20).toFixed(2)} MB`);

  let i = 0;
  let batches = 0;
  for (const batch of streamChunks(s, 10_000)) {
    assert.ok(batch.length <= 10_000);
    batches++;
    for (const t of batch) {
      if (t !== s.chunks.at(i)) assert.fail(`chunk ${i} differs between streamChunks and at()`);
      i++;
    }
  }
  assert.equal(i, 400_000);
  assert.equal(batches, 40);
  const f = facts.sample(0).chunks as string[];
  assert.deepEqual(s.supportIdx.map((j) => chunkAt(s.chunks, j)), [f[0], f[11]]);
});

test("streamChunks works on plain string[] chunk lists too", () => {
  const s = { chunks: ["a", "b", "c", "d", "e"] };
  assert.deepEqual([...streamChunks(s, 2)], [["a", "b"], ["c", "d"], ["e"]]);
  assert.deepEqual([...streamChunks({ chunks: [] }, 3)], []);
  assert.throws(() => [...streamChunks(s, 0)], RangeError);
});

test("context length: sweep table, estimates and truthful labels", () => {
  assert.deepEqual(SWEEP_LENGTHS.map((l) => [l.chunks, l.label]), [
    [50, "1K"], [160, "4K"], [1200, "32K"], [4600, "128K"], [40000, "1M"], [400000, "10M"],
  ]);
  assert.equal(formatTokens(850.4), "≈850");
  assert.equal(formatTokens(1290), "≈1.3K");
  assert.equal(formatTokens(4000), "≈4K");
  assert.equal(formatTokens(31_800), "≈32K");
  assert.equal(formatTokens(1_140_000), "≈1.1M");
  assert.equal(formatTokens(13_600_000), "≈14M");
  assert.equal(estimateContextTokens(50, 25), 1250);
  assert.equal(estimateContextTokens(50, { noise: 30, fact: 8, factsPerSample: 10 }), 10 * 8 + 40 * 30);
  assert.equal(estimateContextTokens(5, { noise: 30, fact: 8, factsPerSample: 10 }), 40);
  assert.equal(contextLengthLabel(50, 25), "≈1.3K");
  assert.equal(chunksForTokens(1000, 25), 40);

  const m = measureTokensPerChunk({ pool, facts: fakeFacts([3, 4, 5]), chunks: 300, seed: 1 });
  assert.equal(m.noise.n, 300);
  // "Volume 1 carries plain line 17 here." → a handful of GPT-2 tokens each
  assert.ok(m.noise.mean > 5 && m.noise.mean < 15, `noise mean ${m.noise.mean}`);
  assert.ok(m.noise.min <= m.noise.median && m.noise.median <= m.noise.max);
  assert.ok(m.facts && m.facts.samples === 3 && m.facts.n >= 9);
  assert.deepEqual(measureTokensPerChunk({ pool, chunks: 100, seed: 2 }), measureTokensPerChunk({ pool, chunks: 100, seed: 2 }));
});

test("integration: bAbI qa1–qa5 generator facts mixed into SOTU noise", () => {
  const sotu = sotuNoisePool();
  for (const task of BABI_TASKS) {
    const facts = babiSource(task, { seed: 5, split: "test" });
    const src = babilongSource({ facts, numSentences: 160, pool: sotu, seed: 5, split: "test" });
    for (let i = 0; i < 6; i++) {
      const s = src.sample(i);
      const f = facts.sample(i);
      const factTexts = [...iterChunks(f.chunks)];
      assert.equal(s.chunks.length, Math.max(160, factTexts.length));
      assert.equal(s.answer, f.answer);
      assert.equal(s.meta?.task, task);
      const ch = s.chunks as BabilongChunks;
      assert.deepEqual(Array.from(ch.factSlots, (k) => chunkAt(s.chunks, k)), factTexts);
      assert.deepEqual(
        s.supportIdx.map((k) => chunkAt(s.chunks, k)).sort(),
        f.supportIdx.map((j) => factTexts[j]).sort(),
      );
      // no noise sentence mentions a bAbI actor, so the only actor-bearing chunks are the facts
      const actorChunks = texts(s).filter((t) => /\b(?:Mary|John|Daniel|Sandra|Bill|Fred|Jeff)\b/.test(t));
      if (task !== "qa4") assert.deepEqual(actorChunks, factTexts);
    }
  }
});
