/**
 * The agent's step format on fixed strings (server/qrag/llm-agent/step-format.ts): R3-RAG's text
 * replies and the json format's steps parsed, garbage and half-replies refused (null, never a
 * throw), the forced answer's text, the prompt's trajectory; and a length's summary row (tally.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  agentPrompt, forcedAnswer, MAX_STEP_TEXT, parseJsonStep, parseR3RagReply, stepSchema,
} from "../server/qrag/llm-agent/step-format.ts";
import { summarizeAgent } from "../server/qrag/llm-agent/tally.ts";
import { agentRowSchema, type AgentSample } from "../lib/contracts/llm-agent.ts";
import { wilsonInterval } from "../lib/contracts/intervals.ts";

test("R3-RAG replies: analysis then a query (kept up to its '?') or a final answer; hallucinated documents cut", () => {
  assert.deepEqual(parseR3RagReply("The problem analysis: I need Mary's place.\nThe retrieval query: Where did Mary go? She went"), [
    { kind: "reason", text: "I need Mary's place." },
    { kind: "query", text: "Where did Mary go?" },
  ]);
  assert.deepEqual(parseR3RagReply("### The problem analysis: Mary is in the kitchen.\nThe final answer: kitchen\nThe retrieval documents: made up"), [
    { kind: "reason", text: "Mary is in the kitchen." },
    { kind: "answer", text: "kitchen" },
  ]);
  // the first of query and answer after the analysis wins
  assert.equal(parseR3RagReply("The problem analysis: x The final answer: a The retrieval query: b?")!.at(-1)!.kind, "answer");
  // a query without a question mark ends at the next label
  assert.deepEqual(parseR3RagReply("The problem analysis: x\nThe retrieval query: Mary location\nThe retrieval documents: y")!.at(-1), { kind: "query", text: "Mary location" });
});

test("R3-RAG replies that do not parse: null, never a throw", () => {
  for (const bad of [
    "", "kitchen", "The final answer: kitchen", // no analysis (R3-RAG's parser refuses these too)
    "The problem analysis: thinking and thinking", // neither query nor answer
    "The problem analysis: x The retrieval query: ", "The problem analysis: x The final answer:   ", // empty
    "\u0000\uFFFD\uD800 garbage Charl spec",
  ]) assert.equal(parseR3RagReply(bad), null, JSON.stringify(bad));
});

test("json steps: one {kind, text}; fenced JSON read; other kinds, shapes and garbage refused; long text cut", () => {
  assert.deepEqual(parseJsonStep('{"kind": "query", "text": "Where is John?"}'), [{ kind: "query", text: "Where is John?" }]);
  assert.deepEqual(parseJsonStep('```json\n{"kind":"answer","text":" bedroom "}\n```'), [{ kind: "answer", text: "bedroom" }]);
  for (const bad of ['{"kind": "retrieve", "text": "x"}', '{"kind": "answer"}', '{"kind": "answer", "text": 3}', '{"kind": "answer", "text": "  "}',
    "[1,2]", "null", '{"kind": "reason", "text": "cut off', "Charl spec˖ Charl"]) assert.equal(parseJsonStep(bad), null, bad);
  assert.equal(parseJsonStep(JSON.stringify({ kind: "reason", text: "a".repeat(5000) }))![0]!.text.length, MAX_STEP_TEXT);
  assert.deepEqual((stepSchema(true).schema.properties as { kind: { enum: string[] } }).kind.enum, ["answer"]);
});

test("the forced answer: the parsed answer, else the text after 'The final answer:', else the first line", () => {
  assert.equal(forcedAnswer("json", '{"kind": "answer", "text": "garden"}'), "garden");
  assert.equal(forcedAnswer("r3rag", "blah The final answer: garden\nmore"), "garden");
  assert.equal(forcedAnswer("r3rag", " hallway \nsecond line"), "hallway");
  assert.equal(forcedAnswer("json", ""), "");
});

test("the prompt: the question, the trajectory in R3-RAG's labels, documents after each query; forced asks for the answer", () => {
  const items = [{ kind: "reason", text: "need John" }, { kind: "query", text: "Where is John?" }, { kind: "retrieve", docs: ["John went to the office.", "Mary left."] }] as const;
  const r = agentPrompt("r3rag", "Where is John? ", items);
  assert.equal(r.system, "You are a helpful assistant");
  assert.equal(r.user, "The question: Where is John?\nThe problem analysis: need John\nThe retrieval query: Where is John?\nThe retrieval documents: John went to the office.\nMary left.");
  const j = agentPrompt("json", "Where is John?", items, true);
  assert.match(j.user, /^Answer the question step by step\./);
  assert.ok(j.user.includes("The retrieval documents: John went to the office."));
  assert.match(j.user, /Give the final answer now/);
});

test("a length's summary: accuracy, its Wilson interval, coverage, steps, failures and forced answers counted; rows match the contract", () => {
  const row = (correct: number, coverage: number, extra: Partial<AgentSample> = {}): AgentSample => ({
    type: "sample", id: `s${correct}${coverage}`, question: "q", answer: "a", sf_idx: [1], pred_idx: coverage ? [1, 2] : [2], num_chunks: 10,
    model: "m", retriever: "bm25", steps: [{ kind: "answer", text: "a", ms: 1 }], prediction: "a", correct,
    metrics: { precision: coverage / 2, recall: coverage, f1: coverage ? 2 / 3 : 0, coverage }, calls: 2, tokens: { prompt: 100, completion: 10 }, ms: 50, modelMs: 40, retries: 0, ...extra,
  });
  const rows = [row(1, 1), row(0, 1, { forced: "step_limit" }), row(0, 0, { failure: { kind: "timeout", message: "t" } }), row(1, 0, { forced: "unparseable" })];
  const s = summarizeAgent(rows, 50, "m", "bm25");
  assert.equal(s.accuracy, 0.5);
  assert.deepEqual(s.ci, wilsonInterval(2, 4));
  assert.equal(s.coverage, 0.5);
  assert.equal(s.meanRetrieved, 1.5);
  assert.equal(s.failures, 1);
  assert.deepEqual(s.failureKinds, { timeout: 1 });
  assert.deepEqual(s.forced, { step_limit: 1, unparseable: 1 });
  for (const r of [...rows, s]) agentRowSchema.parse(r);
  assert.equal(summarizeAgent([], 50, "m", "bm25").ci, null);
});
