/**
 * The reader inside an evaluation, without a model: the summary's arithmetic (accuracy, Wilson
 * interval, failures per kind, means) on records whose scores are known; a failed call as a counted
 * failure and a fatal one as a throw; the pipeline's order when calls finish out of order; the
 * `--reader` spec's refusals.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { wilsonInterval } from "../lib/contracts/intervals.ts";
import { readerSummarySchema, type ReaderRecord } from "../lib/contracts/engine-events.ts";
import { readEpisode, ReaderPipeline, ReaderTally } from "../server/qrag/evaluation/reader-pass.ts";
import { PromptTooLongError, ReaderCallError, type Reader } from "../server/qrag/reader/reader.ts";
import { parseReaderSpec } from "../server/qrag/reader/spec.ts";
import { readerApiKey } from "../server/qrag/settings.ts";

const rec = (correct: number, o: Partial<ReaderRecord> = {}): ReaderRecord => ({
  model: "stub", prompt: "p", answer: "a", correct, tokens: { prompt: 100, completion: 4 }, ms: 10, retries: 0, ...o,
});

test("the summary: accuracy over all samples (failures count as wrong), Wilson interval, kinds, means", () => {
  const t = new ReaderTally();
  for (const r of [
    rec(1), rec(1, { ms: 30, retries: 2 }), rec(0), rec(1, { cached: true, ms: 0 }),
    rec(0, { failure: { kind: "timeout", message: "x" }, ms: 0, tokens: { prompt: 0, completion: 0 } }),
    rec(0, { failure: { kind: "context", message: "x" }, ms: 0, tokens: { prompt: 0, completion: 0 } }),
    rec(0, { failure: { kind: "timeout", message: "x" }, ms: 0, tokens: { prompt: 0, completion: 0 }, retries: 1 }),
  ]) t.add(r);
  const s = t.summary("stub");
  assert.equal(s.n, 7);
  assert.equal(s.correct, 3);
  assert.equal(s.accuracy, 3 / 7);
  assert.deepEqual(s.ci, wilsonInterval(3, 7));
  assert.equal(s.failures, 3);
  assert.deepEqual(s.failureKinds, { timeout: 2, context: 1 });
  assert.equal(s.msPerAnswer, (10 + 30 + 10) / 3, "cache hits and failures are not calls to the model");
  assert.equal(s.promptTokens, 400 / 7);
  assert.equal(s.retries, 3);
  assert.equal(s.f1, undefined);
  readerSummarySchema.parse(s);
  // RULER's shares: the sum is the score, the interval over whole successes
  const r = new ReaderTally();
  for (const c of [0.25, 1, 0.5, 1]) r.add(rec(c));
  assert.equal(r.summary("stub").accuracy, 2.75 / 4);
  assert.deepEqual(r.summary("stub").ci, wilsonInterval(3, 4));
});

const stub = (answer: (q: string) => Promise<string>): Reader => ({
  model: "stub",
  async answer(i) { return { text: await answer(i.question), promptTokens: 7, completionTokens: 2, ms: 5 }; },
});

test("readEpisode: scored with the benchmark's metric; a failed call is a counted 0, a fatal one throws", async () => {
  const ds = { name: "babilong" as const, task: "qa1" as const };
  const ok = await readEpisode(stub(async () => "The most recent location of Mary is bathroom."), ds, "Where is Mary?", ["Mary went to the bathroom."], "bathroom");
  assert.equal(ok.correct, 1);
  assert.match(ok.prompt, /^Your are an AI assistant\.\n\n.*Context: Mary went to the bathroom\.\n\nQuestion: Where is Mary\?$/s);
  assert.deepEqual(ok.tokens, { prompt: 7, completion: 2 });
  const wrong = await readEpisode(stub(async () => "kitchen"), ds, "Where is Mary?", [], "bathroom");
  assert.equal(wrong.correct, 0);
  assert.equal(wrong.failure, undefined);
  for (const [e, kind] of [[new ReaderCallError("unparseable", "bad"), "unparseable"], [new PromptTooLongError(3000, 32, 2048), "context"]] as const) {
    const f = await readEpisode(stub(() => Promise.reject(e)), ds, "Where is Mary?", [], "bathroom");
    assert.equal(f.correct, 0);
    assert.equal(f.failure?.kind, kind);
  }
  await assert.rejects(readEpisode(stub(() => Promise.reject(new ReaderCallError("connection", "endpoint down", true))), ds, "q", [], "x"), /endpoint down/);
  await assert.rejects(readEpisode(stub(() => Promise.reject(new TypeError("a bug"))), ds, "q", [], "x"), TypeError, "a bug is not a counted failure");
  const open = await readEpisode(stub(async () => "Final answer: the Eiffel Tower"), { name: "hotpotqa" }, "q", [], ["Eiffel Tower"]);
  assert.deepEqual([open.correct, open.f1], [1, 1]);
});

test("the pipeline: calls overlap, records leave in submission order, at most `window` pending", async () => {
  const p = new ReaderPipeline(2);
  const out: number[] = [];
  let pending = 0, most = 0;
  const call = (i: number, ms: number) => async () => {
    most = Math.max(most, ++pending);
    await new Promise((r) => setTimeout(r, ms));
    pending--;
    return rec(i);
  };
  for (const [i, ms] of [[0, 40], [1, 5], [2, 30], [3, 1], [4, 10]] as const) await p.submit(call(i, ms), (r) => out.push(r!.correct));
  await p.drain();
  assert.deepEqual(out, [0, 1, 2, 3, 4]);
  assert.ok(most >= 2 && most <= 3, `in flight at once: ${most}`);
  const none = new ReaderPipeline(2), seen: unknown[] = [];
  await none.submit(undefined, (r) => seen.push(r));
  assert.deepEqual(seen, [undefined], "without a reader a record leaves at once");
});

test("--reader: gguf:/llama:/openai: specs, their refusals; the key only from the environment", () => {
  assert.deepEqual(parseReaderSpec("gguf:models/tiny.gguf"), { provider: "gguf", file: "models/tiny.gguf" });
  assert.deepEqual(parseReaderSpec("llama:tiny.gguf"), { provider: "gguf", file: "tiny.gguf" });
  assert.deepEqual(parseReaderSpec("openai:qwen", "http://127.0.0.1:8000/v1"), { provider: "openai", model: "qwen", url: "http://127.0.0.1:8000/v1" });
  assert.throws(() => parseReaderSpec("openai:qwen"), /needs --reader-url/);
  assert.throws(() => parseReaderSpec("openai:qwen", "ftp://x"), /http\(s\) URL/);
  assert.throws(() => parseReaderSpec("gguf:x.gguf", "http://x/v1"), /only for --reader openai/);
  assert.throws(() => parseReaderSpec("gpt4"), /expected gguf:FILE/);
  assert.equal(readerApiKey({ QRAG_READER_API_KEY: " k1 ", OPENAI_API_KEY: "k2" }), "k1");
  assert.equal(readerApiKey({ QRAG_READER_API_KEY: "", OPENAI_API_KEY: "k2" }), "k2");
  assert.equal(readerApiKey({}), undefined);
});

test("qrag sweep / eval-official: a bad --reader is one line before anything loads", async () => {
  const { runQrag } = await import("../server/qrag/cli.ts");
  for (const [args, want] of [
    [["sweep", "no-such-run", "--reader", "gpt4"], /^qrag: --reader: expected gguf:FILE/],
    [["sweep", "no-such-run", "--reader", "openai:m"], /^qrag: --reader openai:MODEL needs --reader-url/],
    [["eval-official", "--checkpoint", "no-such-run", "--files", "x.jsonl", "--reader-url", "http://h/v1"], /^qrag: --reader-url: only for --reader openai/],
    [["sweep", "no-such-run", "--reader", "gguf:x.gguf", "--reader-threads", "0"], /--reader-threads must be a whole number/],
  ] as const) {
    let err = "";
    const code = await runQrag(args, { out: () => {}, err: (t) => void (err += t) });
    assert.ok(code !== 0, args.join(" "));
    assert.match(err, want);
    assert.doesNotMatch(err, /checkpoint/, "refused before the checkpoint is looked at");
  }
});
