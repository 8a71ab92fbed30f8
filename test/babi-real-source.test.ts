/**
 * Real bAbI v1.2 stories as BabiLong's fact source (`envs.babi_dir`, issue 11): samples carry the
 * file's statements as chunks among noise, the support indices point at exactly the file's
 * supporting statements, the answer is the file's; the file is found in the folder or its
 * en-10k/ / en/ layout; bad files fail with file:line and no text; the folder must lie in the
 * data root; a tiny real training run trains on it.
 *
 * The expectations are read from the fixtures by the small reader below, not by the engine's parser.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { checkEnvPaths, envSchema, datasetSource, type EnvConfig } from "../server/qrag/data/registry.ts";
import { BabilongChunks } from "../server/qrag/data/babilong.ts";
import { DataFileError, InputError } from "../server/qrag/errors.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { train } from "../server/qrag/training/train.ts";
import { chunkAt, type Sample } from "../server/qrag/types.ts";
import { dataPathKind } from "../lib/contracts/data-files.ts";
import type { EpisodeRecord } from "../server/qrag/events.ts";

const FIX = "test/fixtures/babi";
const FIXTURES = {
  qa1: "qa1_single-supporting-fact_test.part1.txt",
  qa2: "qa2_two-supporting-facts_test.story1.txt",
  qa3: "qa3_three-supporting-facts_test.story1.txt",
  qa4: "qa4_two-arg-relations_test.stories1-2.txt",
  qa5: "qa5_three-arg-relations_test.story1.txt",
} as const;
type Task = keyof typeof FIXTURES;
/** The official file name of a task's split (the fixture's name without its .partN/.storyN tag). */
const realName = (task: Task, split: "train" | "test") => FIXTURES[task].replace(/_test\..*$/, `_${split}.txt`);

/** What a question of the file says: the statements before it in its story, its answer and support texts. */
interface Expected {
  facts: string[];
  question: string;
  answer: string;
  /** Positions in `facts` of the support ids. */
  supportPos: number[];
}

function expectedQuestions(text: string): Expected[] {
  const out: Expected[] = [];
  let facts: string[] = [];
  let posOfId = new Map<number, number>();
  for (const row of text.split("\n")) {
    if (row.trim() === "") continue;
    const sp = row.indexOf(" ");
    const id = Number(row.slice(0, sp));
    const rest = row.slice(sp + 1);
    if (id === 1) {
      facts = [];
      posOfId = new Map();
    }
    if (!rest.includes("\t")) {
      posOfId.set(id, facts.length);
      facts.push(rest.trim());
      continue;
    }
    const [q, a, ids] = rest.split("\t");
    const supportPos = [...new Set(ids.trim().split(/\s+/).map(Number))].map((s) => posOfId.get(s)!).sort((x, y) => x - y);
    out.push({ facts: facts.slice(), question: q.trim(), answer: a.trim(), supportPos });
  }
  return out;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-babi-real-"));
const root = path.join(tmp, "root");
const outside = path.join(tmp, "outside");
fs.mkdirSync(path.join(root, "babi"), { recursive: true });
fs.mkdirSync(outside, { recursive: true });
const fixtureText = (task: Task) => fs.readFileSync(path.join(FIX, FIXTURES[task]), "utf8");
// every task's shipped test stories under their real test name; qa1's train file is the second
// half of the fixture (50 stories), so the splits differ
for (const task of Object.keys(FIXTURES) as Task[]) fs.copyFileSync(path.join(FIX, FIXTURES[task]), path.join(root, "babi", realName(task, "test")));
const qa1Lines = fixtureText("qa1").split("\n");
const qa1Train = qa1Lines.slice(750).join("\n");
fs.writeFileSync(path.join(root, "babi", realName("qa1", "train")), qa1Train);

function env(over: Record<string, unknown>): EnvConfig {
  return envSchema.parse({ name: "babilong", task: "qa1", num_sentences: 40, max_steps: 5, positions_processor: "relative", sort_by_index: false, babi_dir: "babi", ...over });
}

/** Checks one sample against the question it must come from; returns the noise chunks' count. */
function assertSample(s: Sample, e: Expected, numSentences: number, label: string): number {
  assert.equal(s.question, e.question, `${label}: question`);
  assert.equal(s.answer, e.answer, `${label}: answer`);
  assert.ok(s.chunks instanceof BabilongChunks, `${label}: a BabiLong haystack`);
  const slots = [...s.chunks.factSlots];
  // the story's statements before the question, in order, at the fact slots
  assert.deepEqual(slots.map((j) => chunkAt(s.chunks, j)), e.facts, `${label}: the file's facts in order`);
  // the supporting indices are exactly the slots of the file's support statements
  assert.deepEqual(s.supportIdx, e.supportPos.map((p) => slots[p]), `${label}: supportIdx`);
  // noise fills up to num_sentences; no noise chunk is one of the story's facts
  assert.equal(s.chunks.length, Math.max(numSentences, e.facts.length), `${label}: total chunks`);
  const factSet = new Set(e.facts);
  const isSlot = new Set(slots);
  let noise = 0;
  for (let j = 0; j < s.chunks.length; j++) {
    if (isSlot.has(j)) continue;
    noise++;
    assert.ok(!factSet.has(chunkAt(s.chunks, j)), `${label}: noise chunk ${j} is not a story fact`);
  }
  return noise;
}

test("samples carry the real file's facts, support and answer, mixed with noise (qa1..qa5)", () => {
  for (const task of Object.keys(FIXTURES) as Task[]) {
    const expected = expectedQuestions(fixtureText(task));
    const e = env({ task, babi_dir: "babi", num_sentences: 40, test_env: { num_sentences: 80 } });
    const src = datasetSource(e, { split: "test", seed: 7, dataRoot: root });
    assert.equal(src.size, expected.length, `${task}: one sample per question of the file`);
    const picks = [...new Set([0, 1, expected.length - 1, Math.floor(expected.length / 2)])];
    let noise = 0;
    for (const i of picks) noise += assertSample(src.sample(i), expected[i], 80, `${task} test ${i}`);
    assert.ok(noise > 0, `${task}: noise was mixed in`);
    assert.throws(() => src.sample(expected.length), RangeError);
  }
  // a haystack smaller than the story holds the facts only (qa3's last question has 50+ statements)
  const qa3 = expectedQuestions(fixtureText("qa3"));
  const s = datasetSource(env({ task: "qa3" }), { split: "test", seed: 1, numSentences: 10, dataRoot: root }).sample(qa3.length - 1);
  assert.equal(assertSample(s, qa3.at(-1)!, 10, "qa3 small"), 0);
});

test("the train split reads the train file; samples are deterministic by seed and index", () => {
  const e = env({ num_sentences: 30 });
  const trainExp = expectedQuestions(qa1Train);
  const testExp = expectedQuestions(fixtureText("qa1"));
  const a = datasetSource(e, { split: "train", seed: 3, dataRoot: root });
  const b = datasetSource(e, { split: "train", seed: 3, dataRoot: root });
  const c = datasetSource(e, { split: "train", seed: 4, dataRoot: root });
  assert.equal(a.size, trainExp.length);
  assert.notEqual(a.size, testExp.length, "the fixture halves differ in size");
  const texts = (s: Sample) => Array.from({ length: s.chunks.length }, (_, j) => chunkAt(s.chunks, j));
  let differs = 0;
  for (const i of [0, 5, 17, trainExp.length - 1]) {
    const s = a.sample(i);
    assertSample(s, trainExp[i], 30, `train ${i}`);
    assert.deepEqual({ ...b.sample(i), chunks: texts(b.sample(i)) }, { ...s, chunks: texts(s) }, `train ${i}: same seed, same sample`);
    const other = c.sample(i);
    assertSample(other, trainExp[i], 30, `train ${i} seed 4`);
    if (JSON.stringify(texts(other)) !== JSON.stringify(texts(s))) differs++;
  }
  assert.ok(differs > 0, "another seed mixes other noise");
  // the simulator stays the default
  const sim = datasetSource(env({ babi_dir: undefined }), { split: "train", seed: 3, dataRoot: root });
  assert.equal(sim.size, Infinity);
});

test("the file is found in the folder, else en-10k/, else en/; a missing one is named", () => {
  const q = (file: string) => `1 Mary went to the ${file}.\n2 Where is Mary? \t${file}\t1\n`;
  const lay = path.join(root, "tasks_1-20_v1-2");
  fs.mkdirSync(path.join(lay, "en-10k"), { recursive: true });
  fs.mkdirSync(path.join(lay, "en"), { recursive: true });
  fs.writeFileSync(path.join(lay, "en", "qa1_single-supporting-fact_train.txt"), q("garden"));
  fs.writeFileSync(path.join(lay, "en", "qa1_single-supporting-fact_test.txt"), q("office"));
  fs.writeFileSync(path.join(lay, "en-10k", "qa1_single-supporting-fact_train.txt"), q("kitchen"));
  fs.writeFileSync(path.join(lay, "qa10_indefinite-knowledge_train.txt"), q("bedroom")); // qa10 is not qa1
  const first = (split: "train" | "test", dir = "tasks_1-20_v1-2") => datasetSource(env({ babi_dir: dir }), { split, seed: 1, dataRoot: root }).sample(0);
  assert.equal(first("train").answer, "kitchen", "en-10k/ before en/");
  assert.equal(first("test").answer, "office", "en/ when en-10k/ has no test file");
  assert.equal(first("train").meta?.file, "tasks_1-20_v1-2/en-10k/qa1_single-supporting-fact_train.txt");
  fs.writeFileSync(path.join(lay, "qa1_mine_train.txt"), q("hallway"));
  assert.equal(first("train").answer, "hallway", "the folder itself first");
  fs.writeFileSync(path.join(lay, "qa1_other_train.txt"), q("hallway"));
  assert.throws(() => first("train"), (e: unknown) => e instanceof InputError && /^envs\.babi_dir: several qa1_\*_train\.txt in tasks_1-20_v1-2 /.test((e as Error).message));
  assert.throws(
    () => datasetSource(env({ task: "qa3" }), { split: "train", seed: 1, dataRoot: root }),
    (e: unknown) => e instanceof InputError && e.message === "envs.babi_dir: no qa3_*_train.txt in babi (nor in its en-10k/ or en/ folder)",
  );
  assert.throws(() => first("train", "nope"), (e: unknown) => e instanceof InputError && /^envs\.babi_dir: nope not found in the data root/.test((e as Error).message));
  // a layout folder linked out of the root is refused, not read
  fs.mkdirSync(path.join(root, "linked"));
  fs.mkdirSync(path.join(outside, "en-10k"));
  fs.writeFileSync(path.join(outside, "en-10k", "qa1_single-supporting-fact_train.txt"), q("kitchen"));
  fs.symlinkSync(path.join(outside, "en-10k"), path.join(root, "linked", "en-10k"));
  assert.throws(() => first("train", "linked"), (e: unknown) => e instanceof InputError && /^envs\.babi_dir: must be inside the data root/.test((e as Error).message));
});

test("a malformed file fails with file:line and without its text", () => {
  fs.mkdirSync(path.join(root, "bad"));
  const good = fixtureText("qa2").split("\n");
  // line 4 loses its id: the reader must name bad/…:4 and never echo the line
  const bad = [...good.slice(0, 3), "SECRET-LINE Daniel went to the office.", ...good.slice(4)].join("\n");
  fs.writeFileSync(path.join(root, "bad", realName("qa2", "test")), bad);
  const file = `bad/${realName("qa2", "test")}`;
  assert.throws(
    () => datasetSource(env({ task: "qa2", babi_dir: "bad" }), { split: "test", seed: 1, dataRoot: root }),
    (e: unknown) => e instanceof DataFileError && e.file === file && e.line === 4 && e.message.startsWith(`${file}:4: `) && !/SECRET|Daniel|office/.test(e.message),
  );
  const supportBad = [...good.slice(0, 2), "3 Where is the football? \tkitchen\tSECRET", ...good.slice(3)].join("\n");
  fs.writeFileSync(path.join(root, "bad", realName("qa2", "test")), supportBad);
  assert.throws(
    () => datasetSource(env({ task: "qa2", babi_dir: "bad" }), { split: "test", seed: 1, dataRoot: root }),
    (e: unknown) => e instanceof DataFileError && e.message.startsWith(`${file}:3: `) && !/SECRET|football|kitchen/.test(e.message),
  );
});

test("babi_dir is a data-root folder: inside accepted and stored relative, outside refused", () => {
  const inside = checkEnvPaths(env({ babi_dir: path.join(root, "babi") }), root);
  assert.deepEqual(inside.issues, []);
  assert.equal((inside.env as { babi_dir?: string }).babi_dir, "babi");
  const OUTSIDE = `must be inside the data root ${root}`;
  assert.deepEqual(checkEnvPaths(env({ babi_dir: outside }), root).issues, [{ path: "envs.babi_dir", message: OUTSIDE }]);
  assert.deepEqual(checkEnvPaths(env({ babi_dir: "../outside" }), root).issues, [{ path: "envs.babi_dir", message: OUTSIDE }]);
  fs.symlinkSync(outside, path.join(root, "babi-out"));
  assert.deepEqual(checkEnvPaths(env({ babi_dir: "babi-out" }), root).issues, [{ path: "envs.babi_dir", message: OUTSIDE }]);
  assert.deepEqual(checkEnvPaths(env({ babi_dir: "babi/qa1_single-supporting-fact_train.txt" }), root).issues, [
    { path: "envs.babi_dir", message: "babi/qa1_single-supporting-fact_train.txt is not a folder" },
  ]);
  // the engine checks too, before reading
  assert.throws(() => datasetSource(env({ babi_dir: outside }), { split: "test", seed: 1, dataRoot: root }), (e: unknown) => e instanceof InputError && (e as Error).message === `envs.babi_dir: ${OUTSIDE}`);
  assert.equal(dataPathKind("envs.babi_dir"), "dir", "the launch form suggests folders");
  assert.equal(checkEnvPaths(env({ babi_dir: undefined }), root).issues.length, 0, "absent: the simulator");
});

test("a tiny real training run on real qa1 stories", async () => {
  const config = resolveConfig({ preset: "tiny", overrides: ["envs.babi_dir=babi", "steps_count=6", "eval_interval=3", "eval_episodes=8", "learning_start=4"] });
  const testExp = expectedQuestions(fixtureText("qa1"));
  const records: EpisodeRecord[] = [];
  const res = await train(config, {
    runDir: path.join(tmp, "run"),
    dataRoot: root,
    onEvent: (ev) => {
      if (ev.type === "episode" && ev.phase === "eval") records.push(ev.record);
    },
  });
  assert.equal(res.status, "completed");
  assert.equal(res.updates, 6);
  assert.ok(records.length > 0, "eval episodes were recorded");
  for (const r of records) {
    // ids are qa1-test-<i>@n20: the i-th question of the real test file
    const i = Number(/^qa1-test-(\d+)@n20$/.exec(r.id)?.[1]);
    const e = testExp[i];
    assert.ok(e, r.id);
    assert.equal(r.question, e.question);
    assert.equal(r.answer, e.answer);
    assert.deepEqual(r.sf_texts, e.supportPos.map((p) => e.facts[p]), `${r.id}: support texts`);
    assert.equal(r.num_chunks, 20);
  }
});
