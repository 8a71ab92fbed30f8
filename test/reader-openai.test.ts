/**
 * The OpenAI-compatible reader against a local endpoint that generates for real with the tiny GGUF
 * model (test/openai-fake-server.ts): the same text as the direct llama.cpp reader, streamed or
 * not; greedy; the JSON schema where the server has response_format and plain text where not;
 * retries honouring Retry-After; the concurrency bound; and the faults (endpoint down, timeout, a
 * stalled stream, an unparseable answer, a prompt over the window, a refused key), each a
 * ReaderCallError of its kind whose text never holds the key nor the prompt.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import util from "node:util";
import { limitConcurrency, ReaderCallError, type Reader, type ReaderInput } from "../server/qrag/reader/reader.ts";
import { openGgufReader, openOpenAiReader } from "../server/qrag/reader/open.ts";
import { writeTinyGguf } from "../server/qrag/reader/tiny-gguf.ts";
import type { OpenAiReaderOptions } from "../server/qrag/reader/openai-reader.ts";
import { startFakeOpenAi, type FakeServer } from "./openai-fake-server.ts";

const KEY = "sk-test-Secret-7f3a9c2e41";
let dir: string, file: string, server: FakeServer, jsonServer: FakeServer, direct: Reader;

const input: ReaderInput = {
  question: "Where is Mary? ",
  chunks: ["Mary went to the kitchen.", "John moved to the garden.", "Mary travelled to the bathroom."],
  dataset: { name: "babilong", task: "qa1" },
};

const open = (o: Partial<OpenAiReaderOptions> = {}) => openOpenAiReader({ baseURL: server.url, model: "tiny", apiKey: KEY, retryBaseMs: 10, ...o });

/** The failure of `p`, checked to be a ReaderCallError of `kind` that shows neither key nor prompt. */
async function failure(p: Promise<unknown>, kind: string): Promise<ReaderCallError> {
  const e = await p.then(() => assert.fail("expected a failure"), (x: unknown) => x);
  assert.ok(e instanceof ReaderCallError, String(e));
  assert.equal(e.kind, kind, e.message);
  for (const t of [e.message, String(e.stack), util.inspect(e)]) {
    assert.ok(!t.includes(KEY) && !t.includes("Secret-7f3a"), `the key leaked: ${t}`);
    assert.ok(!t.includes("travelled"), "the prompt is not echoed");
  }
  assert.ok(e.message.length < 300);
  return e;
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-openai-"));
  file = path.join(dir, "tiny.gguf");
  writeTinyGguf(file);
  server = await startFakeOpenAi(file, { key: KEY });
  jsonServer = await startFakeOpenAi(file, { key: KEY, responseFormat: true });
  direct = await openGgufReader(file, { threads: 1 });
});
after(async () => {
  await direct.close?.();
  await server.close();
  await jsonServer.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test("through the endpoint, streamed or not: the direct reader's text and tokens, greedy, the key only in its header", async () => {
  const want = await direct.answer(input);
  for (const stream of [false, true]) {
    const reader = await open({ stream });
    const t0 = performance.now();
    const a = await reader.answer(input);
    console.log(`stream=${stream}: ${a.completionTokens} tokens in ${a.ms.toFixed(0)} ms (direct ${want.ms.toFixed(0)} ms), call ${(performance.now() - t0).toFixed(0)} ms`);
    assert.equal(a.text, want.text);
    assert.equal(a.promptTokens, want.promptTokens);
    assert.equal(a.completionTokens, want.completionTokens);
    assert.equal(a.retries, 0);
    assert.ok(a.ms > 0);
    const req = server.requests.at(-1)!;
    assert.equal(req.auth, `Bearer ${KEY}`);
    assert.equal(req.body.temperature, 0);
    assert.equal(req.body.max_tokens, 32);
    assert.equal(req.body.stream ?? false, stream);
    assert.ok(!JSON.stringify(req.body).includes(KEY));
    assert.match(reader.model, /^openai:tiny@127\.0\.0\.1:\d+\/v1$/);
    for (const t of [JSON.stringify(reader), util.inspect(reader, { depth: 5 })]) assert.ok(!t.includes(KEY), "the reader object holds no key");
  }
});

test("the JSON schema goes as response_format where the server has it; where refused, plain text from then on", async () => {
  const withFormat = await openOpenAiReader({ baseURL: jsonServer.url, model: "tiny", apiKey: KEY, json: true, maxTokens: 128 });
  const a = await withFormat.answer(input);
  const sent = jsonServer.requests.at(-1)!.body.response_format as { type: string };
  assert.equal(sent.type, "json_schema");
  assert.ok(!a.text.startsWith("{"), `the answer field, not the JSON: ${JSON.stringify(a.text)}`);
  const refused = await open({ json: true });
  const before = server.requests.length;
  const b = await refused.answer(input);
  assert.equal(b.text, (await direct.answer(input)).text);
  assert.equal(server.requests.length - before, 2, "one refused call, one plain call");
  await refused.answer(input);
  assert.equal(server.requests.length - before, 3, "the refusal is remembered");
  assert.equal(server.requests.at(-1)!.body.response_format, undefined);
});

test("429 with Retry-After: waits what the server asks, then answers; 5xx retried; retries counted", async () => {
  const reader = await open();
  server.faults.push({ kind: "status", status: 429, headers: { "retry-after": "1" } });
  const a = await reader.answer(input);
  console.log(`after 429 retry-after 1 s: ${a.ms.toFixed(0)} ms, ${a.retries} retries`);
  assert.equal(a.retries, 1);
  assert.ok(a.ms >= 950, `waited ${a.ms} ms`);
  server.faults.push({ kind: "status", status: 503, headers: { "retry-after-ms": "50" } }, { kind: "status", status: 500, message: `upstream said ${KEY}` });
  const b = await reader.answer(input);
  assert.equal(b.retries, 2);
  assert.equal(b.text, a.text);
  // more 5xx than retries: one sample's failure (not fatal), the server's text redacted
  server.faults.push(...Array.from({ length: 3 }, () => ({ kind: "status" as const, status: 500, message: `upstream said ${KEY}` })));
  const e = await failure((await open({ maxRetries: 2 })).answer(input), "server");
  assert.equal(e.fatal, false);
  assert.equal(e.retries, 2);
  assert.match(e.message, /\(500\).*\[key\].*after 2 retries/);
  // a Retry-After past the reader's limit is not waited for
  server.faults.push({ kind: "status", status: 429, headers: { "retry-after": "3600" } });
  const t0 = performance.now();
  assert.match((await failure(reader.answer(input), "rate_limit")).message, /asks to wait 3600 s/);
  assert.ok(performance.now() - t0 < 1000);
});

test("an endpoint that is down: retried, then a fatal error naming the host", async () => {
  const port = await new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => { const p = (s.address() as net.AddressInfo).port; s.close(() => resolve(p)); });
  });
  const reader = await openOpenAiReader({ baseURL: `http://127.0.0.1:${port}/v1`, model: "tiny", apiKey: KEY, retryBaseMs: 10, maxRetries: 2 });
  const e = await failure(reader.answer(input), "connection");
  assert.equal(e.fatal, true);
  assert.equal(e.retries, 2);
  assert.match(e.message, new RegExp(`127\\.0\\.0\\.1:${port}/v1 unreachable \\(ECONNREFUSED\\)`));
});

test("a server that never answers, and a stream that stalls: timed out, the next call answers", async () => {
  for (const [stream, fault] of [[false, "hang"], [true, "stall"]] as const) {
    // long enough for a real answer on a loaded 2-core machine (the next call must fit in it too)
    const reader = await open({ stream, timeoutMs: 1500 });
    server.faults.push({ kind: fault });
    const t0 = performance.now();
    const e = await failure(reader.answer(input), "timeout");
    assert.equal(e.fatal, false);
    assert.ok(performance.now() - t0 < 5000, "the timeout ends the call, not a retry loop");
    assert.ok((await reader.answer(input)).text.length > 0);
  }
});

test("unparseable answers: a body that is not JSON, a missing message, text where the schema was asked", async () => {
  for (const stream of [false, true]) {
    server.faults.push({ kind: "garbage" });
    assert.equal((await failure((await open({ stream })).answer(input), "unparseable")).fatal, false);
  }
  jsonServer.faults.push({ kind: "content", content: "Mary is in the" });
  const e = await failure(openOpenAiReader({ baseURL: jsonServer.url, model: "tiny", apiKey: KEY, json: true }).then((r) => r.answer(input)), "unparseable");
  assert.match(e.message, /not the asked JSON/);
});

test("a prompt over the endpoint's window: a counted context failure naming the sizes", async () => {
  const long = { ...input, chunks: Array.from({ length: 400 }, () => "Mary travelled to the kitchen.") };
  const e = await failure((await open()).answer(long), "context");
  assert.equal(e.fatal, false);
  assert.match(e.message, /exceeds the model's context window \(\d+ prompt tokens, window 2048\)/);
});

test("a refused key: fatal, and the key the server quotes back is not in the error", async () => {
  const reader = await openOpenAiReader({ baseURL: server.url, model: "tiny", apiKey: "sk-wrong-Secret-7f3a9c2e41" });
  const e = await failure(reader.answer(input), "auth");
  assert.equal(e.fatal, true);
  assert.match(e.message, /refused the key \(401\)/);
});

test("at most `limit` calls in flight", async () => {
  server.maxInFlight = 0;
  const reader = limitConcurrency(await open(), 2);
  const answers = await Promise.all(Array.from({ length: 5 }, () => reader.answer(input)));
  assert.equal(new Set(answers.map((a) => a.text)).size, 1);
  assert.equal(server.maxInFlight, 2);
});
