/**
 * Uploading a `qrag agent --out` file (server/runs/agent-upload.ts) on the real server with a real
 * SQLite file: the file is written by runAgent itself (test/agent-file-fixture.ts); it becomes a
 * completed sweep job with source "agent" whose summaries and sample episodes read back; bad lines
 * are named by file, line and field, never echo the content, and leave nothing stored.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { EpisodeDto, SweepDto, SweepListDto } from "../lib/contracts/index.ts";
import { getDb } from "../server/db/client.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { resolveConfig } from "../server/qrag/index.ts";
import { INJECTION, writeAgentFile, type AgentFile } from "./agent-file-fixture.ts";

let server: RunningServer, tmp: string, agent: AgentFile;

async function call<T>(method: string, url: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${server.url}${url}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: body === undefined ? {} : { "content-type": "application/json" } });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** A run; by default one trained on the agent file's samples (babilong-cpu, qa1), so its haystacks regenerate to the file's. */
async function seedRun(preset: { preset: string; overrides: string[] } = { preset: "babilong-cpu", overrides: ["envs.task=qa1"] }): Promise<string> {
  const h = await getDb(server.databaseUrl);
  const id = `r${crypto.randomBytes(5).toString("hex")}`;
  const config = resolveConfig(preset);
  await h.write((db) => db.run.create({ data: { id, name: `seed ${id}`, status: "completed", config: JSON.stringify(config), envName: "babilong", task: "qa1", kind: "train" } }));
  return id;
}

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-agent-upload-"));
  agent = await writeAgentFile(tmp);
  server = await startServer({ port: 0, dataDir: path.join(tmp, "server"), next: false, log: () => {} });
});
after(async () => {
  await server?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

test("an agent file becomes a completed agent evaluation of the run: summaries per length, one episode per sample with its steps", async () => {
  const runId = await seedRun();
  const up = await call<SweepDto>("POST", `/api/runs/${runId}/agent/upload`, { file: { name: "agent.jsonl", text: agent.text } });
  assert.equal(up.status, 201, JSON.stringify(up.body));
  assert.equal(up.body.run.status, "completed");
  assert.equal(up.body.run.sweepOf, runId);
  assert.equal(up.body.spec.source, "agent");
  assert.deepEqual(up.body.spec.agent, { model: agent.summaries[0].model, retriever: "bm25" });
  assert.equal(up.body.spec.checkpointLabel, `R3-style agent (${agent.summaries[0].model}, bm25)`);
  assert.deepEqual(up.body.points, [], "no Q-RAG points");
  assert.deepEqual(up.body.agent!.map((s) => [s.numChunks, s.accuracy, s.n]), [[20, 1, 2], [40, 0.5, 2]]);
  const listed = (await call<SweepListDto>("GET", `/api/runs/${runId}/sweeps`)).body.sweeps;
  assert.deepEqual(listed.map((s) => s.run.id), [up.body.run.id]);

  const eps = (await call<EpisodeDto[]>("GET", `/api/runs/${up.body.run.id}/episodes?phase=agent&numChunks=40&limit=10`)).body;
  assert.equal(eps.length, 2);
  const bad = eps.find((e) => e.return === 0)!;
  const one = (await call<EpisodeDto>("GET", `/api/runs/${up.body.run.id}/episodes/${bad.id}`)).body;
  assert.equal(one.record, undefined, "an agent episode is not an engine episode record");
  assert.equal(one.agent!.prediction, INJECTION);
  assert.deepEqual(one.agent!.steps.map((s) => s.kind), ["reason", "query", "retrieve", "reason", "answer"]);
  assert.deepEqual(one.agent, agent.samples.find((s) => s.id === one.sampleId && s.num_chunks === 40));
  // the strip's hover texts: the haystack regenerated from the run's config, checked against the row's gold texts
  const sample = one.agent!;
  assert.equal(sample.sf_texts?.length, sample.sf_idx.length);
  const chunks = await call<{ texts: string[] }>("GET", `/api/runs/${up.body.run.id}/episodes/${bad.id}/chunks?from=0&to=40`);
  assert.equal(chunks.status, 200, JSON.stringify(chunks.body));
  sample.sf_idx.forEach((idx, k) => assert.equal(chunks.body.texts[idx], sample.sf_texts![k]));
  const retrieved = sample.steps.find((st) => st.kind === "retrieve")!;
  for (const id of retrieved.ids!) assert.ok(retrieved.text.includes(chunks.body.texts[id].trim()), `retrieved chunk ${id}'s text is the one the agent read`);
});

test("hover texts of agent rows without gold texts (older files) or from another run's samples: 404 saying why", async () => {
  const lines = agent.text.trim().split("\n");
  const old = lines.map((l) => JSON.stringify({ ...JSON.parse(l), sf_texts: undefined })).join("\n");
  const firstEpisode = async (runId: string, text: string) => {
    const up = await call<SweepDto>("POST", `/api/runs/${runId}/agent/upload`, { file: { name: "agent.jsonl", text } });
    assert.equal(up.status, 201, JSON.stringify(up.body));
    const eps = (await call<EpisodeDto[]>("GET", `/api/runs/${up.body.run.id}/episodes?phase=agent&numChunks=20&limit=1`)).body;
    return call<{ error: string }>("GET", `/api/runs/${up.body.run.id}/episodes/${eps[0].id}/chunks?from=0&to=5`);
  };
  const a = await firstEpisode(await seedRun(), old);
  assert.equal(a.status, 404);
  assert.match(a.body.error, /^chunk texts unavailable: the episode keeps no supporting-fact texts/);
  // the same rows uploaded to a run on other samples: the regenerated gold facts differ
  const tiny = await seedRun({ preset: "tiny", overrides: ["envs.task=qa2"] });
  const b = await firstEpisode(tiny, agent.text);
  assert.equal(b.status, 404);
  assert.match(b.body.error, /^chunk texts unavailable: the regenerated sample differs/);
});

test("bad lines: 400 naming file, line and field, the content never echoed, nothing stored", async () => {
  const runId = await seedRun();
  const lines = agent.text.trim().split("\n");
  const send = (text: string) => call<{ error: string; fieldErrors: Record<string, string> }>("POST", `/api/runs/${runId}/agent/upload`, { file: { name: "agent.jsonl", text } });
  const wrongKind = lines.map((l, i) => (i === 1 ? l.replace('"kind":"query"', '"kind":"secret-kind"') : l)).join("\n");
  const a = await send(wrongKind);
  assert.equal(a.status, 400);
  assert.match(a.body.fieldErrors["agent.jsonl line 2"], /^steps\.1\.kind: /);
  assert.ok(!JSON.stringify(a.body).includes("secret-kind"), "never echoes the file");
  const b = await send(`${agent.text.trim()}\n{oops secret`);
  assert.equal(b.body.fieldErrors[`agent.jsonl line ${lines.length + 1}`], "not valid JSON");
  assert.ok(!JSON.stringify(b.body).includes("oops"));
  // a retrieval outside the haystack, a repeated sample, a sample with no summary row
  const s0 = JSON.parse(lines[0]);
  const outside = { ...s0, id: "other", steps: s0.steps.map((s: { ids?: number[] }) => (s.ids ? { ...s, ids: [999] } : s)) };
  const c = await send([...lines, JSON.stringify(outside), lines[0], JSON.stringify({ ...s0, id: "x", num_chunks: 77 })].join("\n"));
  assert.equal(c.status, 400);
  assert.equal(c.body.fieldErrors[`agent.jsonl line ${lines.length + 1}`], "steps.2.ids: a chunk id outside the haystack (0 … 19)");
  assert.match(c.body.fieldErrors[`agent.jsonl line ${lines.length + 2}`], /^id: sample "qa1-test-0@n20" at 20 chunks repeats line 1$/);
  assert.equal(c.body.fieldErrors[`agent.jsonl line ${lines.length + 3}`], "num_chunks: 77 has no summary row in agent.jsonl");
  const e = await send([...lines, JSON.stringify({ ...s0, id: "long", sf_texts: [...s0.sf_texts, "one too many"] })].join("\n"));
  assert.equal(e.status, 400, JSON.stringify(e.body).slice(0, 300));
  assert.equal(e.body.fieldErrors[`agent.jsonl line ${lines.length + 1}`], `sf_texts: ${s0.sf_idx.length + 1} texts for ${s0.sf_idx.length} supporting facts (sf_idx)`);
  const d = await send(lines.filter((l) => !l.includes('"type":"summary"')).join("\n"));
  assert.match(d.body.fieldErrors["agent.jsonl"], /^no summary rows/);
  const big = await call<{ fieldErrors: Record<string, string> }>("POST", `/api/runs/${runId}/agent/upload`, { file: { name: "agent.jsonl", text: "x".repeat(60_000_001) } });
  assert.equal(big.status, 400, "the file's size bound");
  assert.ok(Object.keys(big.body.fieldErrors).some((k) => k.endsWith("file.text")), JSON.stringify(big.body.fieldErrors));
  assert.deepEqual((await call<SweepListDto>("GET", `/api/runs/${runId}/sweeps`)).body.sweeps, [], "nothing half-imported");
});
