/**
 * An agent evaluation queued from the dashboard (server/runs/agent-jobs.ts) and run by the real
 * local worker: runAgent in its engine process on the tiny GGUF model (real llama.cpp inference),
 * bm25 on a run without checkpoints; the engine's agent rows stored as the job's summaries and
 * phase-"agent" episodes; and the refusals (a retriever that needs a checkpoint, a model file
 * outside the data root, sizes past their bounds) naming their field. The endpoint option end to
 * end: the worker's QRAG_READER_URL (a local OpenAI-wire server generating with the same model)
 * and its key, which reaches the endpoint and nothing the dashboard stores or serves.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { EpisodeDto, SweepDto } from "../lib/contracts/index.ts";
import { getDb } from "../server/db/client.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { resolveConfig } from "../server/qrag/index.ts";
import { writeTinyGguf } from "../server/qrag/reader/tiny-gguf.ts";
import { waitFor } from "./platform-helpers.ts";
import { startFakeOpenAi, type FakeServer } from "./openai-fake-server.ts";

let server: RunningServer, tmp: string, endpoint: FakeServer;
const KEY = "sk-agent-job-0000";

async function seedRun(name: string): Promise<string> {
  const h = await getDb(server.databaseUrl);
  const runId = `r${crypto.randomBytes(5).toString("hex")}`;
  await h.write((db) => db.run.create({ data: { id: runId, name, status: "completed", config: JSON.stringify(resolveConfig({ preset: "tiny" })), envName: "babilong", task: "qa1", kind: "train" } }));
  return runId;
}

/** Waits for the agent job to complete (failing at once if it fails or is cancelled). */
function finished(id: string): Promise<SweepDto> {
  return waitFor("the agent job to finish", async () => {
    const s = (await call<SweepDto>("GET", `/api/sweeps/${id}`)).body;
    assert.ok(s.run.status !== "failed" && s.run.status !== "cancelled", `agent job ended ${s.run.status}: ${s.run.error}`);
    return s.run.status === "completed" ? s : undefined;
  }, 120_000, 200);
}

async function call<T>(method: string, url: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${server.url}${url}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: body === undefined ? {} : { "content-type": "application/json" } });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-agent-jobs-"));
  const dataRoot = path.join(tmp, "data");
  fs.mkdirSync(path.join(dataRoot, "models"), { recursive: true });
  writeTinyGguf(path.join(dataRoot, "models", "tiny.gguf"));
  endpoint = await startFakeOpenAi(path.join(dataRoot, "models", "tiny.gguf"), { key: KEY });
  // the local worker (and its engine processes) inherit these: the worker's endpoint and key
  process.env.QRAG_READER_URL = endpoint.url;
  process.env.QRAG_READER_API_KEY = KEY;
  server = await startServer({ port: 0, dataDir: path.join(tmp, "server"), dataRoot, next: false, log: () => {} });
});
after(async () => {
  await server?.close();
  await endpoint?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test("queued from the API, run by the worker on real llama.cpp inference: summaries and agent episodes stored; refusals name their field", async () => {
  const runId = await seedRun("agent job");
  const model = { provider: "gguf", file: "models/tiny.gguf" };

  const dense = await call<{ fieldErrors: Record<string, string> }>("POST", `/api/runs/${runId}/agent`, { model, retriever: "dense" });
  assert.equal(dense.status, 400);
  assert.match(dense.body.fieldErrors.retriever, /needs a checkpoint/);
  const outside = await call<{ fieldErrors: Record<string, string> }>("POST", `/api/runs/${runId}/agent`, { model: { provider: "gguf", file: "../../etc/passwd" } });
  assert.equal(outside.status, 400);
  assert.ok(outside.body.fieldErrors["model.file"], JSON.stringify(outside.body));
  const big = await call<{ fieldErrors: Record<string, string> }>("POST", `/api/runs/${runId}/agent`, { model, samples: 501, maxCalls: 65 });
  assert.equal(big.status, 400);
  assert.deepEqual(Object.keys(big.body.fieldErrors).sort(), ["maxCalls", "samples"]);

  const queued = await call<SweepDto>("POST", `/api/runs/${runId}/agent`, { model, retriever: "bm25", lengths: [20], samples: 2, maxCalls: 2, maxTokens: 16 });
  assert.equal(queued.status, 201, JSON.stringify(queued.body));
  assert.equal(queued.body.spec.source, "agent");
  assert.equal(queued.body.spec.checkpointLabel, "R3-style agent (gguf:models/tiny.gguf, bm25)");
  const id = queued.body.run.id;
  const done = await finished(id);
  assert.equal(done.run.progressDone, 2);
  assert.deepEqual(done.agent!.map((s) => [s.numChunks, s.n, s.model, s.retriever]), [[20, 2, "gguf:models/tiny.gguf", "bm25"]]);
  const eps = (await call<EpisodeDto[]>("GET", `/api/runs/${id}/episodes?phase=agent&limit=10`)).body;
  assert.equal(eps.length, 2);
  const one = (await call<EpisodeDto>("GET", `/api/runs/${id}/episodes/${eps[0].id}`)).body;
  assert.equal(one.agent!.num_chunks, 20);
  assert.ok(one.agent!.steps.length >= 1 && one.agent!.calls <= 3, JSON.stringify(one.agent!.steps.map((s) => s.kind)));
  assert.ok(one.agent!.tokens.completion > 0, "the model generated");
  // the summary is the episodes' own tally
  const scores = await Promise.all(eps.map(async (e) => (await call<EpisodeDto>("GET", `/api/runs/${id}/episodes/${e.id}`)).body.agent!.correct));
  assert.equal(done.agent![0].correct, scores.reduce((a, b) => a + b, 0));
});

test("the worker's OpenAI-compatible endpoint: the job's model calls reach it with the worker's key; the key in nothing stored or served", async () => {
  const runId = await seedRun("agent job, endpoint");
  const before = endpoint.requests.length;
  const queued = await call<SweepDto>("POST", `/api/runs/${runId}/agent`, { model: { provider: "endpoint", model: "tiny" }, retriever: "bm25", lengths: [20], samples: 2, maxCalls: 2, maxTokens: 16 });
  assert.equal(queued.status, 201, JSON.stringify(queued.body));
  const id = queued.body.run.id;
  const done = await finished(id);
  const calls = endpoint.requests.slice(before);
  const agent = done.agent![0];
  assert.equal(agent.n, 2);
  assert.match(agent.model, /^openai:tiny@127\.0\.0\.1:\d+\/v1$/);
  const eps = (await call<EpisodeDto[]>("GET", `/api/runs/${id}/episodes?phase=agent&limit=10`)).body;
  const rows = await Promise.all(eps.map(async (e) => (await call<EpisodeDto>("GET", `/api/runs/${id}/episodes/${e.id}`)).body.agent!));
  // every model call went to the worker's endpoint (plus, once, the request the endpoint refused a JSON schema on)
  assert.ok(calls.length >= rows.reduce((a, r) => a + r.calls, 0), `${calls.length} requests`);
  assert.ok(calls.length >= 2 && calls.every((c) => c.auth === `Bearer ${KEY}` && c.body.model === "tiny"));
  assert.ok(rows.every((r) => r.tokens.completion > 0), "the model generated");
  const served = JSON.stringify([done, rows, (await call<unknown>("GET", `/api/runs/${id}/logs`)).body, (await call<unknown>("GET", `/api/runs/${id}`)).body]);
  assert.ok(!served.includes(KEY), "the key is never stored or served");
});
