/**
 * The reason-and-retrieve agent (server/qrag/llm-agent/) on real inference: the tiny GGUF model
 * through llama.cpp, and a local OpenAI-compatible endpoint generating with the same model
 * (test/openai-fake-server.ts) — full runs whose rows match the contract; scripted replies through
 * that endpoint (its `content` fault: a fixed reply, the real client and wire format) for the loop
 * itself: query → retrieve → answer with the documents fed back, a Q-RAG checkpoint's search equal
 * to its own greedy episode, dense equal to the single-step baseline; and the faults: an
 * unparseable reply, the step bound, a call timing out, the endpoint down, bad flags.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { buildSource } from "../server/qrag/data/sources.ts";
import { train } from "../server/qrag/training/train.ts";
import { evalOptions } from "../server/qrag/training/eval.ts";
import { loadAgent } from "../server/qrag/evaluation/evaluate.ts";
import { embedSampleChunks, greedyEpisode } from "../server/qrag/agent/greedy.ts";
import { denseSingleStep } from "../server/qrag/baselines/dense.ts";
import { runAgent, type AgentRunOptions } from "../server/qrag/llm-agent/run.ts";
import { openOpenAiChat } from "../server/qrag/reader/open.ts";
import { ReaderCallError } from "../server/qrag/reader/reader.ts";
import { retrievalMetrics } from "../lib/contracts/retrieval-metrics.ts";
import { agentRowSchema, type AgentSample, type AgentSummary } from "../lib/contracts/llm-agent.ts";
import { writeTinyGguf } from "../server/qrag/reader/tiny-gguf.ts";
import { runQrag } from "../server/qrag/cli.ts";
import { startFakeOpenAi, type FakeServer } from "./openai-fake-server.ts";

const KEY = "sk-agent-Secret-5e6f7a8b";
let tmp: string, root: string, runDir: string, server: FakeServer, jsonServer: FakeServer;
const qa1 = resolveConfig({ preset: "babilong-cpu", overrides: ["envs.task=qa1"] });

const rows = (f: string) => fs.readFileSync(f, "utf8").trim().split("\n").map((l) => agentRowSchema.parse(JSON.parse(l)));
/** An endpoint model with fast retries (the CLI's default backs off for seconds). */
const endpoint = (s: FakeServer, o: { timeoutMs?: number; maxRetries?: number } = {}) =>
  openOpenAiChat({ baseURL: s.url, model: "tiny", apiKey: KEY, retryBaseMs: 10, label: "agent model", ...o });
const script = (s: FakeServer, ...replies: string[]) => s.faults.push(...replies.map((content) => ({ kind: "content" as const, content })));

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-agent-"));
  root = path.join(tmp, "data");
  fs.mkdirSync(path.join(root, "models"), { recursive: true });
  writeTinyGguf(path.join(root, "models", "tiny.gguf"));
  server = await startFakeOpenAi(path.join(root, "models", "tiny.gguf"), { key: KEY });
  jsonServer = await startFakeOpenAi(path.join(root, "models", "tiny.gguf"), { key: KEY, responseFormat: true });
});
after(async () => {
  await server.close();
  await jsonServer.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Every sample row's own arithmetic: ids = what the retrieve steps returned, scores recomputed, calls bounded. */
function checkSample(s: AgentSample, maxCalls: number): void {
  const retrieved = s.steps.filter((x) => x.kind === "retrieve").flatMap((x) => x.ids!);
  assert.deepEqual(s.pred_idx, retrieved);
  assert.equal(new Set(retrieved).size, retrieved.length, "a chunk is retrieved once");
  assert.deepEqual(s.metrics, retrievalMetrics(retrieved, s.sf_idx));
  assert.ok(s.calls >= 1 && s.calls <= maxCalls + 1, `calls ${s.calls}`);
  const stepTokens = s.steps.reduce((a, x) => a + (x.tokens?.completion ?? 0), 0);
  assert.equal(stepTokens, s.tokens.completion);
  assert.ok(s.failure || s.steps.at(-1)!.kind === "answer", "a sample ends with an answer or a counted failure");
  assert.ok(s.modelMs <= s.ms);
}

test("the tiny GGUF model through llama.cpp: a full run writes valid rows, every sample ends; tokens/s and our overhead measured", async () => {
  const out = path.join(tmp, "gguf.jsonl");
  const maxCalls = 3;
  const t0 = performance.now();
  const res = await runAgent({ model: { spec: "gguf:models/tiny.gguf", threads: 1 }, retriever: "bm25", lengths: [30], samples: 3, maxCalls, maxTokens: 48, outFile: out, dataRoot: root });
  const wall = performance.now() - t0;
  const all = rows(out);
  assert.equal(all.length, 4);
  const samples = all.slice(0, 3) as AgentSample[], summary = all[3] as AgentSummary;
  assert.equal(summary.type, "summary");
  assert.deepEqual(samples.map((s) => s.id), [0, 1, 2].map((i) => buildSource(qa1, "test", 30).sample(i).id), "the preset's test samples, in order");
  for (const s of samples) {
    checkSample(s, maxCalls);
    assert.equal(s.model, "gguf:models/tiny.gguf");
    assert.ok(s.tokens.prompt > 0 && s.tokens.completion > 0);
  }
  assert.equal(summary.n, 3);
  assert.deepEqual(res.summaries, [summary]);
  const calls = samples.reduce((a, s) => a + s.calls, 0), tokens = samples.reduce((a, s) => a + s.tokens.completion, 0);
  const modelMs = samples.reduce((a, s) => a + s.modelMs, 0), sampleMs = samples.reduce((a, s) => a + s.ms, 0);
  console.log(`tiny GGUF in the agent loop: ${calls} calls, ${tokens} tokens, ${(tokens / (modelMs / 1000)).toFixed(0)} tokens/s in the model; ` +
    `${(modelMs / calls).toFixed(1)} ms model and ${((sampleMs - modelMs) / calls).toFixed(2)} ms ours (prompt, parse, BM25) per call; ` +
    `run ${wall.toFixed(0)} ms (model load and data included)`);
});

test("the local OpenAI-compatible endpoint with response_format: each step constrained to {kind, text}, rows valid, the key only in its header", async () => {
  const out = path.join(tmp, "openai.jsonl");
  const before = jsonServer.requests.length;
  await runAgent({ model: await endpoint(jsonServer), retriever: "bm25", lengths: [30], samples: 2, maxCalls: 2, maxTokens: 48, outFile: out });
  const all = rows(out);
  assert.equal(all.length, 3);
  for (const s of all.slice(0, 2) as AgentSample[]) checkSample(s, 2);
  const sent = jsonServer.requests.slice(before);
  assert.ok(sent.length >= 2);
  for (const r of sent) {
    assert.equal(r.auth, `Bearer ${KEY}`);
    const f = r.body.response_format as { type: string; json_schema: { name: string } };
    assert.equal(f.type, "json_schema");
    assert.equal(f.json_schema.name, "agent_step");
    assert.equal(r.body.temperature, 0);
    assert.equal(r.body.max_tokens, 48);
  }
  assert.ok(!fs.readFileSync(out, "utf8").includes(KEY));
});

test("scripted R3-RAG replies: reason → query → retrieve → answer, the documents fed back, the answer scored", async () => {
  const sample = buildSource(qa1, "test", 40).sample(0);
  script(server,
    `The problem analysis: I need to find where the person is.\nThe retrieval query: ${sample.question.trim()} and more`,
    `The problem analysis: The documents say it.\nThe final answer: ${sample.answer}`);
  const before = server.requests.length;
  const res = await runAgent({ model: await endpoint(server), retriever: "bm25", format: "r3rag", lengths: [40], samples: 1, k: 4 });
  const s = res.samples[0]!;
  checkSample(s, 10);
  assert.deepEqual(s.steps.map((x) => x.kind), ["reason", "query", "retrieve", "reason", "answer"]);
  assert.equal(s.steps[1]!.text, sample.question.trim());
  assert.equal(s.steps[2]!.ids!.length, 4);
  assert.deepEqual(s.steps[2]!.gold, s.steps[2]!.ids!.map((i) => sample.supportIdx.includes(i)));
  assert.equal(s.prediction, sample.answer);
  assert.equal(s.correct, 1);
  assert.equal(s.calls, 2);
  assert.equal(s.forced, undefined);
  // the second call saw the trajectory: the query and the retrieved chunks under R3-RAG's label
  const second = (server.requests[before + 1]!.body.messages as { content: string }[])[1]!.content;
  assert.ok(second.startsWith(`The question: ${sample.question.trim()}\nThe problem analysis: I need`));
  assert.ok(second.includes(`The retrieval documents: ${s.steps[2]!.text}`));
  assert.deepEqual(server.requests[before]!.body.stop, ["The retrieval documents:"]);
  assert.equal(res.summaries[0]!.accuracy, 1);
});

test("faults: an unparseable reply and the step bound end in a forced answer; a timed-out call is one sample's counted failure", async () => {
  // unparseable: kept as an unparsed reason step, then one forced call
  script(server, "Charl spec˖ Charl spec˖ garbage", "blah\nThe final answer: garden");
  const a = (await runAgent({ model: await endpoint(server), retriever: "bm25", format: "r3rag", lengths: [30], samples: 1 })).samples[0]!;
  assert.deepEqual(a.steps.map((x) => [x.kind, x.unparsed ?? x.forced ?? false]), [["reason", true], ["answer", true]]);
  assert.equal(a.forced, "unparseable");
  assert.equal(a.prediction, "garden");
  assert.equal(a.calls, 2);
  // the step bound: maxCalls queries, then the forced answer
  // the same query each time: each search returns chunks not retrieved before
  const question = buildSource(qa1, "test", 30).sample(0).question.trim();
  script(server, ...Array.from({ length: 3 }, () => `The problem analysis: still looking.\nThe retrieval query: ${question}`), "The final answer: kitchen");
  const b = (await runAgent({ model: await endpoint(server), retriever: "bm25", format: "r3rag", lengths: [30], samples: 1, maxCalls: 3, k: 2 })).samples[0]!;
  checkSample(b, 3);
  assert.equal(b.forced, "step_limit");
  assert.equal(b.calls, 4);
  assert.equal(b.steps.filter((x) => x.kind === "retrieve").length, 3);
  assert.equal(b.pred_idx.length, 6);
  assert.equal(b.prediction, "kitchen");
  // a call that never returns: this sample fails (timeout), the next one runs
  // (the json format's steps go with response_format: the server that has it)
  jsonServer.faults.push({ kind: "hang" });
  script(jsonServer, '{"kind": "answer", "text": "office"}');
  const t0 = performance.now();
  const c = await runAgent({ model: await endpoint(jsonServer, { timeoutMs: 300 }), retriever: "bm25", lengths: [30], samples: 2 });
  assert.ok(performance.now() - t0 < 5000);
  assert.equal(c.samples[0]!.failure?.kind, "timeout");
  assert.equal(c.samples[0]!.correct, 0);
  assert.equal(c.samples[1]!.prediction, "office");
  assert.equal(c.summaries[0]!.failures, 1);
  assert.deepEqual(c.summaries[0]!.failureKinds, { timeout: 1 });
});

test("a trajectory over the model's context window: each sample a counted context failure naming the sizes, the run goes on", async () => {
  const res = await runAgent({ model: { spec: "gguf:models/tiny.gguf", threads: 1, contextSize: 256 }, retriever: "bm25", lengths: [30], samples: 2, maxTokens: 48, dataRoot: root });
  for (const s of res.samples) {
    assert.equal(s.failure?.kind, "context");
    assert.match(s.failure!.message, /^agent model prompt too long: \d+ prompt tokens \+ 48 answer tokens exceed the agent model's context window of 256 tokens/);
    assert.ok(!s.failure!.message.includes(s.question.trim()), "the prompt is not echoed");
    assert.equal(s.correct, 0);
  }
  assert.deepEqual(res.summaries[0]!.failureKinds, { context: 2 });
});

test("an endpoint that is down: the run stops at once with a fatal error naming the host, the key nowhere", async () => {
  const port = await new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => { const p = (s.address() as net.AddressInfo).port; s.close(() => resolve(p)); });
  });
  const model = await openOpenAiChat({ baseURL: `http://127.0.0.1:${port}/v1`, model: "tiny", apiKey: KEY, retryBaseMs: 10, maxRetries: 1, label: "agent model" });
  const out = path.join(tmp, "down.jsonl");
  const t0 = performance.now();
  await assert.rejects(runAgent({ model, retriever: "bm25", lengths: [30], samples: 3, outFile: out }), (e: unknown) => {
    assert.ok(e instanceof ReaderCallError && e.fatal, String(e));
    assert.match(e.message, new RegExp(`^agent model endpoint 127\\.0\\.0\\.1:${port}/v1 unreachable`));
    assert.ok(!e.message.includes(KEY));
    return true;
  });
  assert.ok(performance.now() - t0 < 3000);
  assert.equal(fs.readFileSync(out, "utf8"), "", "no rows from a run that could not call its model");
});

test("a Q-RAG checkpoint as the search tool: the query with what was retrieved is its state (its greedy episode's picks); dense is the single-step baseline", async () => {
  const config = resolveConfig({ preset: "tiny", overrides: ["steps_count=10", "eval_interval=10", "eval_episodes=4"] });
  runDir = (await train(config, { runDir: path.join(tmp, "run") })).runDir;
  const sample = buildSource(config, "test", 20).sample(0);
  const { nets, config: c } = await loadAgent(runDir);
  const greedy = await greedyEpisode(nets, sample, evalOptions(c, { neverTerminate: true }));
  const emb = (await embedSampleChunks(nets, sample, c.max_action_length)) as Float32Array;
  const dense = await denseSingleStep(nets, sample.question, emb, sample.chunks.length, 6, { maxInMemory: c.max_action_length_in_memory, positions: c.envs.positions_processor, stepSize: c.envs.step_size });
  nets.dispose();
  const ask = `The problem analysis: look.\nThe retrieval query: ${sample.question}`;
  const run = async (o: Partial<AgentRunOptions>) => {
    script(server, ask, "The problem analysis: done.\nThe final answer: x");
    return (await runAgent({ model: await endpoint(server), retriever: "bm25", format: "r3rag", lengths: [20], samples: 1, k: 6, ...o })).samples[0]!;
  };
  // k = 6 = the run's max_steps: one query takes as many picks as its greedy episode
  const q = await run({ retriever: runDir });
  assert.equal(q.retriever, `qrag:${runDir}`);
  assert.equal(q.id, sample.id, "the checkpoint's own test samples");
  assert.deepEqual(q.pred_idx, greedy.pred_idx);
  assert.notDeepEqual(q.pred_idx, dense, "Q-RAG's picks move with its state, the single step's do not");
  const d = await run({ retriever: "dense", checkpoint: runDir });
  assert.deepEqual(d.pred_idx, dense);
  assert.equal(d.retriever, `dense:${runDir}`);
});

test("qrag agent: flags checked before anything loads, each error naming its flag; a CLI run writes its rows", async () => {
  const cli = async (...args: string[]) => {
    let out = "", err = "";
    const code = await runQrag(["agent", "--data-root", root, ...args], { out: (t) => void (out += t), err: (t) => void (err += t) });
    return { code, out, err };
  };
  const base = ["--model", "gguf:models/tiny.gguf", "--retriever", "bm25"];
  for (const [args, want] of [
    [["--model", "tiny.gguf", "--retriever", "bm25"], /--model: expected gguf:FILE/],
    [["--model", "openai:m", "--retriever", "bm25"], /--model openai:MODEL needs --model-url/],
    [["--model", "openai:m", "--model-url", "ftp://x", "--retriever", "bm25"], /--model-url: expected an http\(s\) URL/],
    [[...base, "--model-url", "http://127.0.0.1:1/v1"], /--model-url: only for --model openai/],
    [[...base, "--max-steps", "0"], /--max-steps must be a whole number from 1 to 64/],
    [[...base, "--docs-per-query", "1000"], /--docs-per-query must be a whole number from 1 to 64/],
    [[...base, "--samples", "20000"], /--samples must be a whole number from 1 to 10000/],
    [[...base, "--lengths", "50,x"], /--lengths: item 2/],
    [["--model", "gguf:models/tiny.gguf", "--retriever", "dense"], /--retriever dense needs --checkpoint/],
    [["--model", "gguf:models/tiny.gguf", "--retriever", path.join(tmp, "nowhere")], /--retriever: expected bm25, dense or a run/],
    [["--model", "gguf:../outside.gguf", "--retriever", "bm25"], /--model: /],
    [[...base, "--task", "qa9"], /unknown bAbI task "qa9"/],
  ] as const) {
    const r = await cli(...args);
    assert.notEqual(r.code, 0, args.join(" "));
    assert.match(r.err, want);
    assert.ok(r.err.length < 400 && !r.err.includes("    at "), `one line, no stack: ${r.err}`);
  }
  const out = path.join(tmp, "cli.jsonl");
  const r = await cli(...base, "--samples", "1", "--lengths", "20", "--max-steps", "1", "--max-tokens", "24", "--model-threads", "1", "--out", out, "-q");
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /20 chunks \| bm25 \| acc 0\.000 \[0\.000, 0\.793\] n=1/);
  assert.equal((JSON.parse(r.out) as AgentSummary[])[0]!.n, 1);
  assert.equal(rows(out).length, 2);
});
