/**
 * An agent evaluation queued from the dashboard (server/runs/agent-jobs.ts) and run by the real
 * local worker: runAgent in its engine process on the tiny GGUF model (real llama.cpp inference),
 * bm25 on a run without checkpoints; the engine's agent rows stored as the job's summaries and
 * phase-"agent" episodes; and the refusals (a retriever that needs a checkpoint, a model file
 * outside the data root, sizes past their bounds) naming their field.
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

let server: RunningServer, tmp: string;

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
  server = await startServer({ port: 0, dataDir: path.join(tmp, "server"), dataRoot, next: false, log: () => {} });
});
after(async () => {
  await server?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test("queued from the API, run by the worker on real llama.cpp inference: summaries and agent episodes stored; refusals name their field", async () => {
  const h = await getDb(server.databaseUrl);
  const runId = `r${crypto.randomBytes(5).toString("hex")}`;
  await h.write((db) => db.run.create({ data: { id: runId, name: "agent job", status: "completed", config: JSON.stringify(resolveConfig({ preset: "tiny" })), envName: "babilong", task: "qa1", kind: "train" } }));
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
  const done = await waitFor("the agent job to finish", async () => {
    const s = (await call<SweepDto>("GET", `/api/sweeps/${id}`)).body;
    assert.ok(s.run.status !== "failed" && s.run.status !== "cancelled", `agent job ended ${s.run.status}: ${s.run.error}`);
    return s.run.status === "completed" ? s : undefined;
  }, 120_000, 200);
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
