/**
 * The reader on real llama.cpp inference (node-llama-cpp's prebuilt CPU binary): the tiny GGUF
 * fixture is written into a temporary folder, then retrieved chunks → prompt → greedy generation
 * → a scored answer; the same prompt twice gives the same text (and the cache answers the second
 * time); an over-long prompt is a PromptTooLongError before any evaluation; the JSON-schema grammar
 * yields parseable JSON; and the engine's face loads neither node-llama-cpp nor openai.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import {
  cachedReader, openGgufReader, PromptTooLongError, scoreAnswer, writeTinyGguf, type Reader, type ReaderInput,
} from "../server/qrag/index.ts";

const ROOT = path.resolve(import.meta.dirname, "..");
let dir: string;
let file: string;
let reader: Reader;

const input: ReaderInput = {
  question: "Where is Mary? ",
  chunks: ["Mary went to the kitchen.", "John moved to the garden.", "Mary travelled to the bathroom."],
  dataset: { name: "babilong", task: "qa1" },
};

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-reader-"));
  file = path.join(dir, "tiny.gguf");
  const t0 = performance.now();
  const bytes = writeTinyGguf(file);
  console.log(`fixture: ${(bytes / 1e6).toFixed(2)} MB in ${(performance.now() - t0).toFixed(0)} ms`);
  reader = await openGgufReader(file, { threads: 1 });
});
after(async () => {
  await reader.close?.();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("the fixture is the same bytes for the same seed, other bytes for another", () => {
  const again = path.join(dir, "again.gguf"), other = path.join(dir, "other.gguf");
  writeTinyGguf(again);
  writeTinyGguf(other, { seed: 8 });
  assert.ok(fs.readFileSync(file).equals(fs.readFileSync(again)));
  assert.ok(!fs.readFileSync(file).equals(fs.readFileSync(other)));
  assert.equal(fs.readFileSync(file).subarray(0, 4).toString("latin1"), "GGUF");
});

test("retrieved chunks → prompt → llama.cpp generation → a scored answer", async () => {
  const a = await reader.answer(input);
  console.log(`answer: ${JSON.stringify(a)}`);
  assert.ok(a.text.length > 0);
  assert.ok(a.promptTokens > 100, "the qa1 prompt with its examples is hundreds of tokens");
  assert.ok(a.completionTokens > 0 && a.completionTokens <= 32, "bounded by BabiLong's answer budget (32)");
  assert.ok(a.ms > 0);
  const s = scoreAnswer(input.dataset, a.text, "bathroom");
  assert.ok(s.accuracy === 0 || s.accuracy === 1);
  // a random model does not know the answer; a text ending in the target would score 1
  assert.equal(scoreAnswer(input.dataset, `${a.text} bathroom.`, "bathroom").accuracy, 1);
});

test("greedy decoding is deterministic, and the cache answers the repeat", async () => {
  const first = await reader.answer(input);
  const second = await reader.answer(input);
  assert.equal(second.text, first.text);
  assert.equal(second.completionTokens, first.completionTokens);
  // another question is another prompt: another text (a reader that ignored its input would fail here)
  const other = await reader.answer({ question: "What is the special magic uuid for late-somebody?", chunks: ["One of the special magic uuids for late-somebody is: 0f1e2d3c."], dataset: { name: "niah" } });
  assert.notEqual(other.text, first.text);
  const cached = cachedReader(reader);
  const c1 = await cached.answer(input);
  const c2 = await cached.answer(input);
  assert.equal(c1.text, first.text);
  assert.equal(c2.cached, true);
  assert.equal(c2.text, first.text);
});

test("a prompt over the context window is a PromptTooLongError naming the sizes, before generation", async () => {
  const long = { ...input, chunks: Array.from({ length: 400 }, () => "Mary went to the kitchen.") };
  await assert.rejects(reader.answer(long), (e: unknown) => {
    assert.ok(e instanceof PromptTooLongError);
    assert.equal(e.contextTokens, 2048);
    assert.ok(e.promptTokens > 2048);
    assert.match(e.message, /context window of 2048 tokens/);
    assert.ok(e.message.length < 300 && !e.message.includes("kitchen"), "the error never echoes the prompt");
    return true;
  });
  assert.ok((await reader.answer(input)).text.length > 0, "the reader still answers after the error");
});

test("the JSON-schema grammar constrains the answer to {\"answer\": string}", async () => {
  const json = await openGgufReader(file, { threads: 1, json: true, maxTokens: 128 });
  try {
    const a = await json.answer(input);
    assert.ok(a.completionTokens <= 128);
    assert.ok(!a.text.startsWith("{"), `the answer field, not the JSON: ${JSON.stringify(a.text)}`);
  } finally {
    await json.close?.();
  }
});

test("importing the engine's face loads neither node-llama-cpp nor openai", () => {
  const probe = `
    import { createRequire } from "node:module";
    await import(${JSON.stringify(pathToFileURL(path.join(ROOT, "server/qrag/index.ts")).href)});
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => /node-llama-cpp|node_modules[\\/]openai[\\/]/.test(k));
    process.stdout.write(JSON.stringify({ loaded, addons: process.moduleLoadList?.length ?? 0 }));`;
  const hook = `
    import { register } from "node:module";
    register("data:text/javascript," + encodeURIComponent("export async function resolve(s, c, n) { const r = await n(s, c); if (/node-llama-cpp|node_modules\\\\/openai\\\\//.test(r.url)) process.stderr.write('LOADED ' + r.url + '\\\\n'); return r; }"));`;
  const r = spawnSync(process.execPath, ["--import", "tsx", "--import", `data:text/javascript,${encodeURIComponent(hook)}`, "--input-type=module", "-e", probe], {
    cwd: ROOT, encoding: "utf8", timeout: 60_000,
  });
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /LOADED/);
  assert.deepEqual((JSON.parse(r.stdout) as { loaded: string[] }).loaded, []);
});
