import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadCorpus } from "../server/qrag/data/noise/corpus.ts";
import { MAX_RUN, NoisePool, noiseFilterReason, noisePoolFor, sotuNoisePool } from "../server/qrag/data/noise/pool.ts";
import { InputError } from "../server/qrag/errors.ts";
import { Rng } from "../server/qrag/util/rng.ts";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-noise-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** `n` plain sentences that no filter touches: "Alpha wrote line 7 of the ledger." */
function plainSentences(tag: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${tag} wrote line ${i} of the ledger.`);
}

const BABI_LIKE = [
  "Mary moved to the bathroom.", // actor + location
  "Then Daniel spoke at length about the harvest.", // actor only
  "The committee met in the kitchen of the old inn.", // location only
  "We sent the OFFICE a long letter.", // location, any case
  "They drank warm milk before dawn.", // object
  "The lighthouse is north of the harbour.", // direction pattern
  "Jeff, Fred and Bill waited outside.", // actors
];
const DEGENERATE = ["Yes indeed.", "1789 -- 1790.", "Go!"];
const KEPT = [
  "The harvest was plentiful this year.",
  "Congress passed the bill without debate.", // lowercase "bill" is not the actor
  "The offices of state were reorganised.", // "offices" is not the word "office"
  "He sailed east of the islands.", // direction without "is … of the"
  "Maryland sent three new delegates.", // "Mary" only as part of a word
];

function writeBook(name: string, text: string): void {
  fs.writeFileSync(path.join(tmp, name), text);
}

writeBook("a_mixed.txt", [...KEPT.slice(0, 2), ...BABI_LIKE, ...DEGENERATE, ...KEPT.slice(2)].join(" "));
writeBook("b_long.txt", plainSentences("Bravo", 250).join(" "));
writeBook("c_short.txt", plainSentences("Charlie", 7).join("\n"));
writeBook("d_only_babi.txt", "John went to the garden. Sandra took the apple.");
writeBook("notes.md", "This file is ignored because it is not a .txt book.");

test("filter drops bAbI-like and degenerate sentences and keeps others", () => {
  for (const s of BABI_LIKE) assert.notEqual(noiseFilterReason(s), null, s);
  for (const s of DEGENERATE) assert.equal(noiseFilterReason(s), "degenerate", s);
  for (const s of KEPT) assert.equal(noiseFilterReason(s), null, s);
  assert.equal(noiseFilterReason("Mary moved to the bathroom."), "actor");
  assert.equal(noiseFilterReason("The football game ended."), "object");
  assert.equal(noiseFilterReason("The garden is west of the hall."), "location");
  assert.equal(noiseFilterReason("The hall is west of the porch."), "direction");
});

test("pool built from a folder of .txt books keeps clean sentences in book order", () => {
  const books = loadCorpus({ kind: "dir", path: tmp });
  assert.deepEqual(books.map((b) => b.title), ["a_mixed", "b_long", "c_short", "d_only_babi"]);
  const pool = NoisePool.fromBooks(books);
  assert.equal(pool.bookCount, 4);
  assert.equal(pool.size, KEPT.length + 250 + 7);
  assert.deepEqual(pool.bookRange(0), [0, KEPT.length]);
  assert.deepEqual(Array.from({ length: KEPT.length }, (_, i) => pool.sentence(i)), KEPT);
  assert.equal(pool.sentence(KEPT.length), "Bravo wrote line 0 of the ledger.");
  assert.equal(pool.sentence(pool.size - 1), "Charlie wrote line 6 of the ledger.");
  assert.deepEqual(pool.bookRange(3), [pool.size, pool.size]); // all of book d was removed
  assert.equal(pool.bookOf(KEPT.length + 249), 1);
  assert.equal(pool.bookOf(KEPT.length + 250), 2);
  assert.throws(() => pool.sentence(pool.size), RangeError);

  const st = pool.stats;
  assert.equal(st.books, 4);
  assert.equal(st.nonEmptyBooks, 3);
  assert.equal(st.kept, pool.size);
  assert.equal(st.split, pool.size + BABI_LIKE.length + DEGENERATE.length + 2);
  assert.deepEqual(st.removed, { degenerate: 3, actor: 5, location: 2, object: 1, direction: 1 });
  for (let i = 0; i < pool.size; i++) assert.equal(noiseFilterReason(pool.sentence(i)), null);
});

test("sampleRuns: runs of ≤100 contiguous sentences inside one book, deterministic by seed", () => {
  const pool = noisePoolFor({ kind: "dir", path: tmp });
  assert.equal(noisePoolFor({ kind: "dir", path: tmp }), pool, "memoised per folder");
  const runs: [number, number][] = [];
  const idx = pool.sampleRuns(5000, new Rng(3), { onRun: (s, l) => runs.push([s, l]) });
  assert.equal(idx.length, 5000);
  let k = 0;
  let longest = 0;
  for (const [start, len] of runs) {
    assert.ok(len >= 1 && len <= MAX_RUN, `run length ${len}`);
    longest = Math.max(longest, len);
    const b = pool.bookOf(start);
    assert.equal(pool.bookOf(start + len - 1), b, "a run stays inside one book");
    for (let j = 0; j < len; j++) assert.equal(idx[k++], start + j);
  }
  assert.equal(k, 5000);
  assert.equal(longest, MAX_RUN, "the 250-sentence book yields full 100-sentence runs");
  const books = new Set(runs.map(([s]) => pool.bookOf(s)));
  assert.deepEqual([...books].sort(), [0, 1, 2], "every non-empty book is drawn, the empty one never");

  assert.deepEqual(pool.sampleRuns(300, new Rng(9)), pool.sampleRuns(300, new Rng(9)));
  assert.notDeepEqual(pool.sampleRuns(300, new Rng(9)), pool.sampleRuns(300, new Rng(10)));
  assert.equal(pool.sampleRuns(0, new Rng(1)).length, 0);
  const short = pool.sampleRuns(40, new Rng(1), { maxRun: 3, onRun: (_s, l) => assert.ok(l <= 3) });
  assert.equal(short.length, 40);
});

test("sampleChunkMarginal: independent single draws from non-empty books", () => {
  const pool = noisePoolFor({ kind: "dir", path: tmp });
  const idx = pool.sampleChunkMarginal(3000, new Rng(4));
  assert.equal(idx.length, 3000);
  assert.ok(idx.every((i) => i >= 0 && i < pool.size));
  assert.deepEqual(new Set(Array.from(idx, (i) => pool.bookOf(i))), new Set([0, 1, 2]));
  assert.deepEqual(idx, pool.sampleChunkMarginal(3000, new Rng(4)));
});

test("an empty pool refuses to sample", () => {
  const pool = NoisePool.fromBooks([{ title: "x", text: "Mary went to the office. Ok." }]);
  assert.equal(pool.size, 0);
  assert.throws(() => pool.sampleRuns(5, new Rng(1)), InputError);
  assert.throws(() => pool.sampleChunkMarginal(5, new Rng(1)), InputError);
});

test("a missing corpus folder gives an error naming the folder", () => {
  const missing = path.join(tmp, "no-such-books");
  assert.throws(
    () => noisePoolFor({ kind: "dir", path: missing }),
    (e: unknown) => e instanceof InputError && e.message.includes(missing),
  );
});

test("SOTU pool: built once per process, filtered, large enough", () => {
  const pool = sotuNoisePool();
  assert.equal(sotuNoisePool(), pool);
  const st = pool.stats;
  console.log(`SOTU noise pool: ${JSON.stringify(st)}`);
  assert.equal(st.books, 233);
  assert.ok(pool.size > 40_000, `pool size ${pool.size}`);
  assert.equal(st.kept + Object.values(st.removed).reduce((a, b) => a + b, 0), st.split);
  const rng = new Rng(5);
  for (let k = 0; k < 2000; k++) assert.equal(noiseFilterReason(pool.sentence(rng.int(pool.size))), null);
});
