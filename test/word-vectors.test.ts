/**
 * Pretrained word vectors as the bag-of-words encoder's start (`algo.encoder.word_vectors`,
 * server/qrag/model/word-vectors.ts, agent/word-vector-init.ts): the GloVe text and wink JSON
 * readers and their errors (file and line, never the file's words), the bucket rows they give,
 * the path check against the data root, and a train() run that starts from them.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pickBackend } from "../server/qrag/backend/pick.ts";
import { applyWordVectors, readWordVectors } from "../server/qrag/model/word-vectors.ts";
import { checkWordVectors } from "../server/qrag/model/word-vectors-path.ts";
import { checkEncoderPath } from "../server/qrag/model/hf/encoder-path.ts";
import { countWords, initFromWordVectors } from "../server/qrag/agent/word-vector-init.ts";
import { wordId } from "../server/qrag/model/tokenizer.ts";
import { QNetworks } from "../server/qrag/agent/networks.ts";
import { ConfigError, resolveConfig } from "../server/qrag/config/config.ts";
import { buildSource } from "../server/qrag/data/sources.ts";
import { train } from "../server/qrag/training/train.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import type { EngineEvent } from "../server/qrag/events.ts";
import { dataPathKind } from "../lib/contracts/data-files.ts";
import { openInDataRoot } from "../server/qrag/data-root.ts";

/** Opens through the data-root check of `root`, as the engine does. */
const inRoot = (root: string) => (file: string, label: string) => openInDataRoot(root, file, label);

function tmpRoot(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "qrag-wv-"));
}

function cosine(a: Float32Array, b: Float32Array): number {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / Math.sqrt(aa * bb);
}

const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

test("GloVe text: a word2vec header is skipped, only wanted words are kept (lower-cased), a bad line is named by file and line", () => {
  const root = tmpRoot();
  const f = path.join(root, "glove.txt");
  fs.writeFileSync(f, "3 2\nMary 1 0\njohn 0.5 0.5\nkitchen 0 1\n");
  const wv = readWordVectors(f, "glove.txt", new Set(["mary", "kitchen", "absent"]), inRoot(root));
  assert.equal(wv.dim, 2);
  assert.deepEqual([...wv.vectors.keys()].sort(), ["kitchen", "mary"]);
  assert.deepEqual([...wv.vectors.get("mary")!], [1, 0]);
  fs.writeFileSync(f, "mary 1 0\nsecretword 1 0 7\n");
  assert.throws(() => readWordVectors(f, "glove.txt", new Set(["mary"]), inRoot(root)), (e: Error) => e.message === "glove.txt:2: expected 2 numbers after the word, found 3");
  fs.writeFileSync(f, "mary 1 0\njohn 1 x\n");
  assert.throws(() => readWordVectors(f, "glove.txt", new Set(["john"]), inRoot(root)), (e: Error) => e.message === "glove.txt:2: component 2 is not a number");
  fs.writeFileSync(f, "\n\n");
  assert.throws(() => readWordVectors(f, "glove.txt", new Set(["john"]), inRoot(root)), /^DataFileError: glove\.txt: no vectors in the file$/);
  fs.rmSync(root, { recursive: true });
});

test("a word-vectors file that links out of the data root is refused once open; its content is not quoted", () => {
  const root = tmpRoot();
  const outside = tmpRoot();
  fs.writeFileSync(path.join(outside, "secret.txt"), "SECRETVALUE123 1 0\n");
  fs.symlinkSync(path.join(outside, "secret.txt"), path.join(root, "glove.txt"));
  assert.throws(() => readWordVectors(path.join(root, "glove.txt"), "glove.txt", new Set(["secretvalue123"]), inRoot(root)), (e: Error) => /^glove\.txt: must be inside the data root/.test(e.message) && !e.message.includes("SECRET"));
  fs.rmSync(root, { recursive: true });
  fs.rmSync(outside, { recursive: true });
});

test("wink JSON: the components before the appended norm and index are read; a wrong layout names the file", () => {
  const root = tmpRoot();
  const f = path.join(root, "w.json");
  fs.writeFileSync(f, JSON.stringify({ dimensions: 2, vectors: { mary: [3, 4, 5, 0], john: [1, 1, 1.41, 1] } }));
  const wv = readWordVectors(f, "w.json", new Set(["mary"]), inRoot(root));
  assert.equal(wv.dim, 2);
  assert.deepEqual([...wv.vectors.get("mary")!], [3, 4]);
  assert.equal(wv.vectors.has("john"), false, "not wanted");
  fs.writeFileSync(f, JSON.stringify({ dimensions: 3, vectors: { mary: [3, 4] } }));
  assert.throws(() => readWordVectors(f, "w.json", new Set(["mary"]), inRoot(root)), (e: Error) => e.message === "w.json: a vector has 2 numbers, dimensions says 3");
  fs.writeFileSync(f, "{ secretword");
  assert.throws(() => readWordVectors(f, "w.json", new Set(["mary"]), inRoot(root)), (e: Error) => e.message === "w.json: not valid JSON" && !e.message.includes("secretword"));
  fs.writeFileSync(f, JSON.stringify({ words: [] }));
  assert.throws(() => readWordVectors(f, "w.json", new Set(["mary"]), inRoot(root)), /expected the wink layout/);
  fs.rmSync(root, { recursive: true });
});

test("bucket rows: similar vectors give similar rows, every set row has the random start's norm, other rows are untouched", () => {
  const V = 4096, D = 64, std = 0.1;
  const start = new Float32Array(V * D);
  const r = new Rng(3);
  for (let i = 0; i < start.length; i++) start[i] = (r.next() - 0.5) * 0.3;
  const table = new Float32Array(start);
  const wv = {
    dim: 3,
    vectors: new Map([
      ["mary", Float32Array.from([1, 0.05, 0])],
      ["john", Float32Array.from([1, 0, 0.05])],
      ["kitchen", Float32Array.from([0, 0, 1])],
    ]),
  };
  const counts = new Map([["mary", 5], ["john", 3], ["kitchen", 2], ["zzunknown", 1]]);
  const rep = applyWordVectors(table, V, D, std, counts, wv, new Rng(7));
  assert.deepEqual(rep, { wordsCounted: 4, wordsFound: 3, occurrencesFound: 10 / 11, bucketsSet: 3 });
  const row = (w: string) => table.subarray(wordId(w, V) * D, (wordId(w, V) + 1) * D);
  assert.ok(cosine(row("mary"), row("john")) > 0.95, "near-equal vectors, near-equal rows");
  assert.ok(Math.abs(cosine(row("mary"), row("kitchen"))) < 0.4, "orthogonal vectors, near-orthogonal rows");
  for (const w of ["mary", "john", "kitchen"]) assert.ok(Math.abs(norm(row(w)) - std * Math.sqrt(D)) < 1e-4, `${w}: norm std·√D`);
  const unk = wordId("zzunknown", V);
  assert.deepEqual(table.subarray(unk * D, (unk + 1) * D), start.subarray(unk * D, (unk + 1) * D), "a bucket of words without vectors keeps its start");
  let changed = 0;
  for (let b = 0; b < V; b++) if (table.subarray(b * D, (b + 1) * D).some((x, j) => x !== start[b * D + j])) changed++;
  assert.equal(changed, 3);
});

/** A GloVe file with a random 8-d vector for each word of the tiny preset's training samples, mary ≈ john. */
function vectorsForTiny(root: string, config: ReturnType<typeof resolveConfig>): string {
  const counts = countWords(buildSource(config, "train", undefined, root));
  const r = new Rng(11);
  const lines: string[] = [];
  const mary = Array.from({ length: 8 }, () => r.next() - 0.5);
  for (const w of counts.keys()) {
    const v = w === "mary" || w === "john" ? mary.map((x) => x + 0.01 * (r.next() - 0.5)) : Array.from({ length: 8 }, () => r.next() - 0.5);
    lines.push(`${w} ${v.map((x) => x.toFixed(5)).join(" ")}`);
  }
  fs.mkdirSync(path.join(root, "vectors"), { recursive: true });
  fs.writeFileSync(path.join(root, "vectors/tiny.txt"), lines.join("\n") + "\n");
  return "vectors/tiny.txt";
}

test("QNetworks start from the vectors: all five encoders share the table; the paths are checked against the data root", async () => {
  await pickBackend("wasm");
  const root = tmpRoot();
  const base = resolveConfig({ preset: "tiny" });
  const file = vectorsForTiny(root, base);
  const config = resolveConfig({ preset: "tiny", overrides: [`algo.encoder.word_vectors=${file}`] });
  const nets = new QNetworks(config.algo.encoder, new Rng(5));
  const before = new Float32Array(nets.state.variables[0].dataSync());
  const rep = initFromWordVectors(nets, config.algo.encoder, buildSource(config, "train", undefined, root), new Rng(6), root);
  assert.equal(rep.wordsFound, rep.wordsCounted);
  const D = config.algo.encoder.dim, V = config.algo.encoder.vocab_size;
  const table = nets.state.variables[0].dataSync() as Float32Array;
  assert.notDeepEqual(table, before);
  for (const e of [nets.action, nets.stateTarget, nets.actionTarget, nets.policy]) assert.deepEqual(e.variables[0].dataSync(), table);
  const row = (w: string) => table.subarray(wordId(w, V) * D, (wordId(w, V) + 1) * D);
  assert.ok(cosine(row("mary"), row("john")) > 0.95);
  nets.dispose();

  assert.deepEqual(checkEncoderPath(config.algo.encoder, root).issues, []);
  assert.equal(checkEncoderPath({ ...config.algo.encoder, word_vectors: path.join(root, file) }, root).encoder.word_vectors, file, "stored relative to the root");
  const outside = checkWordVectors("../elsewhere.txt", root);
  assert.equal(outside.issue?.path, "algo.encoder.word_vectors");
  assert.match(outside.issue?.message ?? "", /must be inside the data root/);
  assert.equal(checkWordVectors("vectors/none.txt", root).issue?.path, "algo.encoder.word_vectors");
  assert.equal(dataPathKind("algo.encoder.word_vectors"), "file", "the launch form suggests files");
  assert.throws(() => resolveConfig({ preset: "tiny", overrides: ["algo.encoder.type=transformer", `algo.encoder.word_vectors=${file}`] }), (e: unknown) => e instanceof ConfigError && /algo\.encoder\.word_vectors: only the bow encoder takes word vectors/.test(e.message));
  fs.rmSync(root, { recursive: true });
});

test("train() starts a fresh run from the vectors and says how many words it found; a file outside the data root is refused by field", async () => {
  await pickBackend("wasm");
  const root = tmpRoot();
  const file = vectorsForTiny(root, resolveConfig({ preset: "tiny" }));
  const config = resolveConfig({ preset: "tiny", overrides: [`algo.encoder.word_vectors=${file}`, "steps_count=4", "eval_interval=4", "eval_episodes=4", "eval_episodes_logged=0", "learning_start=4"] });
  const logs: string[] = [];
  const onEvent = (e: EngineEvent) => void (e.type === "log" && logs.push(e.message));
  const res = await train(config, { runDir: path.join(root, "run"), dataRoot: root, onEvent });
  assert.equal(res.status, "completed");
  const line = logs.find((m) => m.startsWith("word vectors"));
  assert.match(line ?? "", /^word vectors \(vectors\/tiny\.txt\): (\d+) of \1 counted words found \(100\.0 % of occurrences\), \d+ table rows set$/);
  const bad = resolveConfig({ preset: "tiny", overrides: ["algo.encoder.word_vectors=/etc/passwd", "steps_count=4"] });
  await assert.rejects(train(bad, { runDir: path.join(root, "run2"), dataRoot: root }), /^InputError: algo\.encoder\.word_vectors: .*must be inside the data root/);
  fs.rmSync(root, { recursive: true });
});
