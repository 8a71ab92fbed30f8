import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Rng } from "../server/qrag/util/rng.ts";
import { InputError, DataFileError } from "../server/qrag/errors.ts";
import { chunkAt, type Sample } from "../server/qrag/types.ts";
import { countGpt2Tokens } from "../server/qrag/data/tokens.ts";
import { ADJECTIVES, NOUNS, KEY_COUNT, keyAt, randomKey } from "../server/qrag/data/niah/words.ts";
import {
  DEPTHS,
  NIAH_TASKS,
  NIAH_TASK_CONFIGS,
  NOISE_UNIT,
  buildNiahInput,
  niahSource,
  randomUuid,
  rulerInputToSample,
  searchLargestFit,
  type NiahSource,
} from "../server/qrag/data/niah/generate.ts";
import { loadRulerFile, rulerFileSource } from "../server/qrag/data/ruler-file.ts";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const MAX = 4096;
const BUDGET = MAX - 128;

const sources = new Map<string, NiahSource>();
function src(task: (typeof NIAH_TASKS)[number]): NiahSource {
  let s = sources.get(task);
  if (!s) {
    s = niahSource({ task, maxSeqLength: MAX, seed: 7, split: "test" });
    sources.set(task, s);
  }
  return s;
}

function tmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "niah-test-"));
}

test("key vocabulary: hand-written lists, ≥150 each, lower-case, unique, sorted, no bAbI or template words", () => {
  assert.ok(ADJECTIVES.length >= 150, `adjectives ${ADJECTIVES.length}`);
  assert.ok(NOUNS.length >= 150, `nouns ${NOUNS.length}`);
  const forbidden = new Set([
    "mary", "john", "daniel", "sandra", "bill", "fred", "jeff", "bathroom", "bedroom", "garden", "hallway", "kitchen",
    "office", "apple", "football", "milk", "table", "north", "south", "east", "west", "moved", "went", "back",
    "journeyed", "travelled", "got", "took", "grabbed", "picked", "up", "dropped", "discarded", "put", "down", "left",
    "gave", "handed", "passed", "received", "there", "special", "magic", "hidden", "number", "numbers", "uuid", "text",
  ]);
  for (const list of [ADJECTIVES, NOUNS]) {
    assert.equal(new Set(list).size, list.length, "duplicates");
    assert.deepEqual([...list].sort(), [...list], "not sorted");
    for (const w of list) {
      assert.match(w, /^[a-z]+$/, w);
      assert.ok(!forbidden.has(w), `forbidden word ${w}`);
    }
  }
  assert.equal(KEY_COUNT, ADJECTIVES.length * NOUNS.length);
  assert.equal(keyAt(0), `${ADJECTIVES[0]}-${NOUNS[0]}`);
  assert.ok(keyAt(KEY_COUNT - 1) > keyAt(KEY_COUNT - 2));
  const r = new Rng(3);
  for (let i = 0; i < 200; i++) assert.match(randomKey(r), /^[a-z]+-[a-z]+$/);
});

test("randomUuid gives canonical v4 UUIDs, deterministic by seed", () => {
  const r = new Rng(11);
  const seen = new Set<string>();
  for (let i = 0; i < 2000; i++) {
    const u = randomUuid(r);
    assert.match(u, UUID_V4);
    seen.add(u);
  }
  assert.equal(seen.size, 2000);
  assert.equal(randomUuid(new Rng(5)), randomUuid(new Rng(5)));
  assert.equal(DEPTHS.length, 40);
});

test("searchLargestFit finds the exact largest fitting size (brute force check)", () => {
  const rng = new Rng(1);
  for (let trial = 0; trial < 30; trial++) {
    const overhead = 20 + rng.int(200);
    const perUnit = 0.5 + rng.next() * 30;
    const jitter = Array.from({ length: 20000 }, () => rng.int(3));
    const f = (n: number): number => {
      return overhead + Math.floor(n * perUnit) + jitter[n % jitter.length] + n; // strictly increasing
    };
    const budget = 500 + rng.int(60000);
    const inc = rng.bool() ? 25 : 500;
    const got = searchLargestFit(f, budget, inc, 1);
    let best = 0;
    for (let n = 1; f(n) <= budget; n++) best = n;
    if (best === 0) assert.equal(got, undefined);
    else {
      assert.ok(got, `trial ${trial}`);
      assert.equal(got.n, best, `trial ${trial} budget ${budget} perUnit ${perUnit}`);
      assert.ok(got.probes <= 40, `probes ${got.probes}`);
    }
  }
  assert.equal(searchLargestFit((n) => 100 + n, 50, 25, 1), undefined);
});

for (const task of NIAH_TASKS) {
  test(`${task}: 4K samples — support needles, question, template, budget`, () => {
    const cfg = NIAH_TASK_CONFIGS[task];
    const s = src(task);
    const singular = cfg.numNeedleQ * cfg.numNeedleV === 1;
    const typeWord = cfg.valueType.slice(0, -1); // number | uuid
    const expectedSupport = cfg.numNeedleQ * cfg.numNeedleV;
    for (let i = 0; i < 3; i++) {
      const rec = s.record(i);
      const sample = s.sample(i);
      assert.equal(sample.id, `${task}-test-${i}`);
      // budget and margin
      assert.equal(countGpt2Tokens(rec.input), rec.tokens);
      assert.ok(rec.tokens + 128 <= MAX, `${rec.tokens} + 128 > ${MAX}`);
      assert.ok(rec.tokens >= 0.9 * BUDGET, `only ${rec.tokens} of ${BUDGET} tokens`);
      assert.equal(rec.length, rec.tokens + 128);
      // template (singular replacements when q·v == 1)
      if (singular) {
        assert.ok(rec.input.startsWith(`A special magic ${typeWord} is hidden within the following text.`), rec.input.slice(0, 80));
        assert.ok(rec.input.includes(`I will quiz you about the ${typeWord} afterwards.\n`));
        assert.match(sample.question, new RegExp(`^What is the special magic ${typeWord} for .* mentioned in the provided text\\?$`));
        assert.match(rec.answerPrefix, new RegExp(`^ The special magic ${typeWord} for .* mentioned in the provided text is$`));
      } else {
        assert.ok(rec.input.startsWith(`Some special magic ${cfg.valueType} are hidden within the following text.`));
        assert.match(sample.question, new RegExp(`^What are all the special magic ${cfg.valueType} for .* mentioned in the provided text\\?$`));
        assert.ok(rec.answerPrefix.endsWith(" are"));
      }
      assert.ok(rec.input.endsWith(sample.question), "question is the last sentence");
      // outputs and answer
      assert.equal(rec.outputs.length, expectedSupport);
      assert.equal(sample.answer, rec.outputs.join(","));
      for (const o of rec.outputs) {
        if (cfg.valueType === "uuids") assert.match(o, UUID_V4);
        else assert.match(o, /^[1-9]\d{6}$/);
      }
      // the queried keys appear in the question, and each needle (plural type word) is a support chunk
      const needleRe = new RegExp(`^(?:.* )?One of the special magic ${cfg.valueType} for (\\S+) is: (\\S+)\\.$`);
      const keys = new Set<string>();
      assert.equal(sample.supportIdx.length, expectedSupport, `support ${sample.supportIdx.join(",")}`);
      assert.deepEqual([...sample.supportIdx].sort((a, b) => a - b), sample.supportIdx);
      const found = new Set<string>();
      for (const idx of sample.supportIdx) {
        const chunk = chunkAt(sample.chunks, idx);
        const m = needleRe.exec(chunk);
        assert.ok(m, `support chunk is not a needle: ${chunk.slice(-120)}`);
        assert.ok(rec.outputs.includes(m[2]), `support ${m[2]} not an output`);
        found.add(m[2]);
        keys.add(m[1]);
      }
      assert.equal(found.size, expectedSupport);
      for (const k of keys) assert.ok(sample.question.includes(k), `question lacks key ${k}`);
      assert.equal(keys.size, cfg.numNeedleQ);
      // instruction sentences are chunks
      assert.match(chunkAt(sample.chunks, 0), /^(A|Some) special magic/);
      assert.equal(sample.meta?.task, task);
    }
  });
}

test("essay haystack cycles the words when it runs out; needles sit between sentences", () => {
  const essay = ["Alpha", "beta.", "Gamma", "delta."];
  const r = buildNiahInput(NIAH_TASK_CONFIGS.niah_multivalue, 10, new Rng(2), { orderSeed: 1, essay });
  const context = r.input.split("\n")[1];
  assert.equal(context.replace(/ ?One of the special magic numbers for \S+ is: \d+\./g, "").replace(/ +/g, " ").trim(), "Alpha beta. Gamma delta. Alpha beta. Gamma delta. Alpha beta.");
  assert.equal(r.needles.length, 4);
  const s = rulerInputToSample(r.input, r.outputs, "cyc");
  assert.equal(s.supportIdx.length, 4);
});

test("needle counts and haystack shapes", () => {
  // multikey_1: 4 needles (one per key), one queried
  const mk1 = src("niah_multikey_1").record(0);
  assert.equal((mk1.input.match(/One of the special magic numbers for /g) ?? []).length, 4);
  // noise haystack: the 5 noise sentences repeat as chunks
  const s1 = src("niah_single_1").sample(0);
  const noiseSentences = NOISE_UNIT.split(/(?<=\.) /);
  assert.equal(noiseSentences.length, 5);
  assert.deepEqual([3, 4, 5, 6, 7].map((i) => chunkAt(s1.chunks, i)).every((c) => noiseSentences.includes(c)), true);
  const units = src("niah_single_1").record(0).haystackSize;
  assert.equal(s1.chunks.length, 3 + 5 * units + 1);
  // needle haystack: every line is a needle, only one with the queried key
  const mk2 = src("niah_multikey_2");
  const r2 = mk2.record(0);
  const lines = r2.input.split("\n").slice(1, -1);
  assert.equal(lines.length, r2.haystackSize + 1);
  assert.ok(lines.every((l) => /^One of the special magic numbers for [a-z]+-[a-z]+ is: \d{7}\.$/.test(l)));
  const q = mk2.sample(0).question;
  const key = /for (\S+) mentioned/.exec(q)?.[1];
  assert.ok(key);
  assert.equal(lines.filter((l) => l.includes(` ${key} is:`)).length, 1);
  // multikey_3: uuid keys
  const s3 = src("niah_multikey_3").sample(0);
  assert.match(/for (\S+) mentioned/.exec(s3.question)?.[1] ?? "", UUID_V4);
  // essay: one paragraph between the instruction and the question
  const e = src("niah_multivalue").record(0);
  assert.equal(e.input.split("\n").length, 3);
});

test("deterministic by (seed, split, index); differs across seeds, splits and indexes", () => {
  const task = "niah_multivalue";
  const a = niahSource({ task, maxSeqLength: 1024, seed: 3, split: "train" });
  const b = niahSource({ task, maxSeqLength: 1024, seed: 3, split: "train" });
  const strip = (s: Sample) => ({ ...s, chunks: Array.from({ length: s.chunks.length }, (_, i) => chunkAt(s.chunks, i)) });
  assert.deepEqual(strip(b.sample(2)), strip(a.sample(2)));
  assert.deepEqual(strip(b.sample(0)), strip(a.sample(0)));
  assert.notEqual(a.sample(0).answer, a.sample(1).answer);
  assert.notEqual(niahSource({ task, maxSeqLength: 1024, seed: 4, split: "train" }).sample(0).answer, a.sample(0).answer);
  assert.notEqual(niahSource({ task, maxSeqLength: 1024, seed: 3, split: "test" }).sample(0).answer, a.sample(0).answer);
  assert.equal(a.size, 500);
  assert.equal(niahSource({ task, maxSeqLength: 1024, seed: 3, split: "x", numSamples: Infinity }).size, Infinity);
  assert.throws(() => a.sample(500), RangeError);
});

test("larger budgets fit too (16K essay, 8K needle haystack)", () => {
  for (const [task, max] of [["niah_single_2", 16384], ["niah_multikey_3", 8192]] as const) {
    const s = niahSource({ task, maxSeqLength: max, seed: 1, split: "test" });
    const r = s.record(0);
    assert.ok(r.tokens + 128 <= max && r.tokens >= 0.95 * (max - 128), `${task}: ${r.tokens}`);
    assert.equal(s.sample(0).supportIdx.length, 1);
  }
});

test("invalid options are InputErrors", () => {
  assert.throws(() => niahSource({ task: "niah_foo" as never, maxSeqLength: 4096, seed: 1, split: "t" }), InputError);
  assert.throws(() => niahSource({ task: "niah_single_1", maxSeqLength: 100, seed: 1, split: "t" }), InputError);
  assert.throws(() => niahSource({ task: "niah_single_1", maxSeqLength: 4096, seed: 1, split: "" }), InputError);
  assert.throws(() => niahSource({ task: "niah_single_1", maxSeqLength: 4096, seed: 1, split: "t", numSamples: 0 }), InputError);
  // the budget is too small for 4 needles and a 4-key question
  assert.throws(() => niahSource({ task: "niah_multiquery", maxSeqLength: 160, seed: 1, split: "t" }).sample(0), InputError);
});

test("rulerInputToSample: Q-RAG conversion", () => {
  const input =
    "Some special magic numbers are hidden within the following text. Make sure to memorize it.\n" +
    "Dr. Smith arrived at 3.15 p.m. on Monday. One of the special magic numbers for calm-river is: 1234567. It rained.\n" +
    "One of the special magic numbers for calm-river is: 7654321.\n" +
    "What are all the special magic numbers for calm-river mentioned in the provided text?";
  const s = rulerInputToSample(input, ["1234567", "7654321"], "x");
  assert.equal(s.question, "What are all the special magic numbers for calm-river mentioned in the provided text?");
  assert.equal(s.answer, "1234567,7654321");
  assert.deepEqual(s.chunks, [
    "Some special magic numbers are hidden within the following text.",
    "Make sure to memorize it.",
    "Dr. Smith arrived at 3.15 p.m. on Monday.",
    "One of the special magic numbers for calm-river is: 1234567.",
    "It rained.",
    "One of the special magic numbers for calm-river is: 7654321.",
  ]);
  assert.deepEqual(s.supportIdx, [3, 5]);
  assert.throws(() => rulerInputToSample("Only one sentence.", ["1"], "y"), InputError);
});

test("ruler-file: real RULER jsonl records load to the same Samples as the generator", () => {
  const dir = tmpDir();
  try {
    const gen = niahSource({ task: "niah_multiquery", maxSeqLength: 1024, seed: 9, split: "test" });
    const lines = [0, 1, 2].map((i) => {
      const r = gen.record(i);
      // RULER's record: index overwritten with the character offset of outputs[0]
      return JSON.stringify({
        index: r.input.indexOf(r.outputs[0]),
        input: r.input,
        outputs: r.outputs,
        length: r.length,
        length_w_model_temp: r.length,
        answer_prefix: r.answerPrefix,
        token_position_answer: 0,
      });
    });
    const file = path.join(dir, "test.jsonl");
    fs.writeFileSync(file, lines.join("\n") + "\n");
    const loaded = loadRulerFile(file);
    assert.equal(loaded.length, 3);
    for (let i = 0; i < 3; i++) {
      const g = gen.sample(i);
      assert.equal(loaded[i].id, `test-${i}`);
      assert.equal(loaded[i].question, g.question);
      assert.equal(loaded[i].answer, g.answer);
      assert.deepEqual(loaded[i].chunks, g.chunks);
      assert.deepEqual(loaded[i].supportIdx, g.supportIdx);
      assert.equal(loaded[i].meta?.line, i + 1);
    }
    assert.equal(rulerFileSource(file).size, 3);
    assert.equal(rulerFileSource({ file, seed: 1 }).size, 3);

    const bad = path.join(dir, "bad.jsonl");
    fs.writeFileSync(bad, `${lines[0]}\n\n{"index": 1, "input": "A b. What?"}\n`);
    assert.throws(() => loadRulerFile(bad), (e: unknown) => e instanceof DataFileError && /bad\.jsonl:3: outputs: missing/.test(e.message));
    fs.writeFileSync(bad, `{"input": "Hello there. Who?", "outputs": ["42"]}\n`);
    assert.throws(() => loadRulerFile(bad), (e: unknown) => e instanceof DataFileError && /bad\.jsonl:1: .*no sentence of input contains/.test(e.message));
    fs.writeFileSync(bad, `${lines[0]}\n{"input": "x", "outputs": [1]}\n`);
    assert.throws(() => loadRulerFile(bad), (e: unknown) => e instanceof DataFileError && /bad\.jsonl:2: outputs\[0\]: expected string/.test(e.message));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
