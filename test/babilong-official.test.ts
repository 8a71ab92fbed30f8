/**
 * The published BabiLong test files (server/qrag/data/babilong-official.ts, eval-official.ts), on
 * real-format fixtures (test/fixtures/babilong-official/, built by
 * test/fixtures/scripts/make-babilong-official.ts from the real bAbI stories of test/fixtures/babi/
 * and public-domain prose): the facts found are exactly the bAbI file's statements, the support is
 * the file's support ids, the rule-based reader answers from gold facts and not without them, bad
 * rows are reported by file/row/field, and a trained checkpoint evaluates per length.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parquetWriteBuffer } from "hyparquet-writer";
import { parseBabiFile } from "../server/qrag/data/babi/format.ts";
import { loadOfficialFile, readerCorrect, ruleBasedReader, splitOfficialInput, READER_NAME, type OfficialSample } from "../server/qrag/data/babilong-official.ts";
import { evalOfficial } from "../server/qrag/evaluation/official.ts";
import { wilsonInterval } from "../lib/contracts/intervals.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { train } from "../server/qrag/training/train.ts";
import { chunkAt } from "../server/qrag/types.ts";
import { Rng } from "../server/qrag/util/rng.ts";

const ROOT = path.resolve(import.meta.dirname, "fixtures/babilong-official");
const BABI = path.resolve(import.meta.dirname, "fixtures/babi");
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "manifest.json"), "utf8")) as Record<string, string[]>;
const GOOD_FILES = Object.keys(manifest);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-official-"));

const load = (rel: string) => loadOfficialFile(path.join(ROOT, rel), rel);

/** The question at `file:line` of a real bAbI file: the statements before it, answer, support positions. */
function babiQuestion(ref: string): { facts: string[]; answer: string; support: number[] } {
  const [file, lineStr] = ref.split(":");
  for (const story of parseBabiFile(fs.readFileSync(path.join(BABI, file), "utf8"), file)) {
    const facts: string[] = [];
    const pos = new Map<number, number>();
    for (const l of story.lines) {
      if (l.kind === "fact") {
        pos.set(l.id, facts.length);
        facts.push(l.text);
      } else if (l.line === Number(lineStr)) {
        return { facts, answer: l.answer, support: l.support.map((id) => pos.get(id)!).sort((a, b) => a - b) };
      }
    }
  }
  throw new Error(`no question at ${ref}`);
}

const allSamples = async (): Promise<OfficialSample[]> => (await Promise.all(GOOD_FILES.filter((f) => !f.endsWith(".parquet")).map(load))).flatMap((r) => r.samples);

test("the loader finds exactly the bAbI statements among the prose, with the file's support and answer", async () => {
  let rows = 0;
  for (const rel of GOOD_FILES) {
    const r = await load(rel);
    assert.deepEqual(r.skipped, [], `${rel}: nothing skipped`);
    assert.equal(r.samples.length, manifest[rel].length, `${rel}: one sample per row`);
    r.samples.forEach((s, k) => {
      const q = babiQuestion(manifest[rel][k]);
      const where = `${rel} row ${k + 1}`;
      assert.deepEqual(s.factIdx.map((i) => chunkAt(s.chunks, i)), q.facts, `${where}: the facts found are the story's statements, in order`);
      assert.deepEqual(s.supportIdx, q.support.map((j) => s.factIdx[j]), `${where}: support = the file's support ids`);
      assert.equal(s.answer, q.answer, `${where}: answer = target = the bAbI answer`);
      assert.ok(s.chunks.length > s.factIdx.length || rel.includes("0k"), `${where}: prose chunks beside the facts`);
      assert.equal(s.length, /\/(\dk)\./.exec(rel)![1], `${where}: length from the path`);
      assert.equal(s.task, rel.slice(0, 3), `${where}: task from the path`);
      rows++;
    });
  }
  assert.ok(rows >= 20, `rows checked: ${rows}`);
});

test("the chunks are the input cut at sentence ends (nothing lost, nothing added)", async () => {
  const lines = fs.readFileSync(path.join(ROOT, "qa1/2k.jsonl"), "utf8").trim().split("\n");
  const r = await load("qa1/2k.jsonl");
  r.samples.forEach((s, k) => {
    const input = (JSON.parse(lines[k]) as { input: string }).input;
    const chunks = Array.from({ length: s.chunks.length }, (_, i) => chunkAt(s.chunks, i));
    assert.equal(chunks.join(" "), input);
  });
});

test("prose that reads like a fact is not one: mid-sentence, another task's statement, another cast", () => {
  const input = "He said that John went to the kitchen. Mary took the apple. John travelled to the hallway. Bill went to the office. The garden is north of the office. it rained. Sandra moved to the garden.";
  const { chunks, factIdx } = splitOfficialInput("qa1", input);
  assert.deepEqual(factIdx.map((i) => chunks[i]), ["John travelled to the hallway.", "Sandra moved to the garden."]);
  assert.equal(chunks.join(" "), input);
  // the same statements are facts where the task has them
  const qa2 = splitOfficialInput("qa2", input);
  assert.deepEqual(qa2.factIdx.map((i) => qa2.chunks[i]), ["Mary took the apple.", "John travelled to the hallway.", "Sandra moved to the garden."]);
});

test("rows that do not resolve or disagree with target are reported by file and row, and skipped", async () => {
  const r = await load("skips/qa1_1k.jsonl");
  assert.equal(r.rows, 4);
  assert.equal(r.samples.length, 1);
  assert.equal(r.samples[0].row, 4);
  assert.deepEqual(r.skipped.map((k) => [k.file, k.row, k.length]), [["skips/qa1_1k.jsonl", 1, "1k"], ["skips/qa1_1k.jsonl", 2, "1k"], ["skips/qa1_1k.jsonl", 3, "1k"]]);
  assert.match(r.skipped[0].reason, /^target: /);
  assert.match(r.skipped[1].reason, /^question: a qa2 question form in a qa1 file/);
  assert.match(r.skipped[2].reason, /^input: no qa1 fact sentence/);
  for (const k of r.skipped) assert.doesNotMatch(k.reason, /John|hallway|bathroom|kitchen|milk|Where/, "reasons quote nothing of the row");
});

test("a malformed row: file:line: row: field, never the row's text", async () => {
  await assert.rejects(load("malformed/qa1_1k.jsonl"), (e: Error) => {
    assert.match(e.message, /^malformed\/qa1_1k\.jsonl:2: row 2: target: expected string, received number$/);
    assert.doesNotMatch(e.message, /SECRET|travelled/);
    return true;
  });
  const missing = path.join(tmp, "qa1_1k.parquet");
  fs.writeFileSync(missing, new Uint8Array(parquetWriteBuffer({ columnData: [{ name: "input", data: ["SECRET-TEXT. John went to the hallway."], type: "STRING" }, { name: "question", data: ["Where is John? "], type: "STRING" }] })));
  await assert.rejects(loadOfficialFile(missing, "x/qa1_1k.parquet"), /^DataFileError: x\/qa1_1k\.parquet: column "target" missing/);
  const notParquet = path.join(tmp, "4k.parquet");
  fs.writeFileSync(notParquet, "SECRET-TEXT not parquet at all");
  await assert.rejects(loadOfficialFile(notParquet, "qa1/4k.parquet"), (e: Error) => e.message === "qa1/4k.parquet: not a readable Parquet file");
  const nullTarget = path.join(tmp, "null.parquet");
  fs.writeFileSync(nullTarget, new Uint8Array(parquetWriteBuffer({ columnData: (["input", "question", "target"] as const).map((name, i) => ({ name, data: ["John went to the hallway.", "Where is John? ", null].slice(i, i + 1), type: "STRING" as const })) })));
  await assert.rejects(loadOfficialFile(nullTarget, "qa1/1k.parquet"), /^DataFileError: qa1\/1k\.parquet: row 1: target: expected string, received null$/);
});

test("Parquet and JSONL copies give identical samples", async () => {
  const j = await load("qa1/1k.jsonl");
  const p = await load("qa1/1k.parquet");
  const strip = (s: OfficialSample) => ({ ...s, id: undefined, file: undefined, meta: { ...s.meta, file: undefined } });
  assert.equal(p.samples.length, 6);
  assert.deepEqual(p.samples.map(strip), j.samples.map(strip));
});

test("the rule-based reader answers from the gold facts, and not when a needed fact is missing", async () => {
  const samples = await allSamples();
  const rng = new Rng(7);
  const view = (s: OfficialSample, idx: number[]) => idx.map((index) => ({ index, text: chunkAt(s.chunks, index) }));
  for (const s of samples) {
    const gold = view(s, s.supportIdx);
    assert.ok(readerCorrect(ruleBasedReader(s.task, s.question, gold), s.answer), `${s.id}: gold facts answer`);
    assert.ok(readerCorrect(ruleBasedReader(s.task, s.question, [...gold].reverse()), s.answer), `${s.id}: any order of retrieval`);
    // every needed fact matters
    for (const drop of s.supportIdx) {
      const a = ruleBasedReader(s.task, s.question, view(s, s.supportIdx.filter((i) => i !== drop)));
      assert.ok(!readerCorrect(a, s.answer), `${s.id}: without chunk ${drop} the reader answers ${a}, not ${s.answer}`);
    }
    // extra retrieved chunks (prose and other facts) beside the gold ones do not change a qa1/qa2/qa5 answer
    if (s.task !== "qa3") {
      const extra = Array.from({ length: s.chunks.length }, (_, i) => i).filter(() => rng.bool(0.5));
      const kept = [...new Set([...s.supportIdx, ...extra])];
      assert.ok(readerCorrect(ruleBasedReader(s.task, s.question, view(s, kept)), s.answer), `${s.id}: gold plus extra chunks`);
    }
  }
  // document order decides, not retrieval order: John's later move wins
  const chunks = [{ index: 9, text: "John went to the garden." }, { index: 2, text: "John moved to the office." }];
  assert.equal(ruleBasedReader("qa1", "Where is John? ", chunks), "garden");
  assert.equal(ruleBasedReader("qa1", "Where is John? ", [{ index: 0, text: "Mary went to the garden." }]), "unknown");
  assert.ok(readerCorrect("The Kitchen.", "kitchen") && !readerCorrect("unknown", "unknown"));
});

test("eval-official: a trained checkpoint on the fixture files, per length", async () => {
  const config = resolveConfig({ preset: "tiny", overrides: ["steps_count=6", "eval_interval=6", "eval_episodes=2", "learning_start=4"] });
  const run = await train(config, { runDir: path.join(tmp, "run") });
  assert.equal(run.status, "completed");
  const files = [...GOOD_FILES.filter((f) => !f.endsWith(".parquet")), "skips/qa1_1k.jsonl"];
  const out = path.join(tmp, "results.jsonl");
  const res = await evalOfficial({ checkpoint: run.runDir, files, dataRoot: ROOT, outFile: out });
  assert.deepEqual(res.map((r) => r.length), ["0k", "1k", "2k"], "lengths in token order");
  const byLen = Object.fromEntries(res.map((r) => [r.length, r]));
  assert.deepEqual([byLen["0k"].samples, byLen["1k"].samples, byLen["2k"].samples], [3, 6 + 3 + 2 + 2 + 1, 4]);
  assert.deepEqual(byLen["1k"].tasks, ["qa1", "qa2", "qa3", "qa5"]);
  assert.equal(byLen["1k"].rows, 6 + 3 + 2 + 2 + 4);
  assert.deepEqual(byLen["1k"].skipped.rows.map((k) => `${k.file}:${k.row}`), ["skips/qa1_1k.jsonl:1", "skips/qa1_1k.jsonl:2", "skips/qa1_1k.jsonl:3"]);
  assert.equal(byLen["0k"].skipped.count, 0);
  for (const r of res) {
    assert.equal(r.oracle_stop, false);
    assert.equal(r.reader.name, READER_NAME);
    assert.equal(r.tokens, Number.parseInt(r.length, 10) * 1000);
    for (const sc of [r.qrag, r.qragFiltered]) {
      const hits = Math.round(sc.coverage * r.samples);
      assert.deepEqual(sc.coverageCI, wilsonInterval(hits, r.samples), `${r.length}: 95 % Wilson interval of coverage`);
      assert.ok(sc.coverageCI!.low <= sc.coverage && sc.coverage <= sc.coverageCI!.high);
      assert.ok(sc.f1 >= 0 && sc.f1 <= 1);
    }
    assert.ok(r.reader.correct >= 0 && r.reader.correct <= r.samples && r.reader.allPicks.correct <= r.samples);
    assert.equal(r.reader.accuracy, r.reader.correct / r.samples);
    assert.ok(r.qragFiltered.avgKept <= config.envs.max_steps);
  }
  const lines = fs.readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l) as unknown);
  assert.deepEqual(lines, JSON.parse(JSON.stringify(res)) as unknown, "--out holds one JSON line per length");
  // paths stay inside the data root
  await assert.rejects(evalOfficial({ checkpoint: run.runDir, files: ["../babi/qa1_single-supporting-fact_test.part1.txt"], dataRoot: ROOT }), /--files: must be inside the data root/);
});
