/**
 * Context-length sweeps as jobs, on the real server (server/main.ts without Next) with a real
 * SQLite file: a tiny run trained by the real local worker is swept through the worker (points and
 * episodes stored per length, across-lengths view), the form's bounds and refusals, uploads of
 * `qrag sweep` files (atomic, errors naming file/line/field), a lost worker's sweep queued again
 * to skip its stored lengths, and imported runs being read-only — the API cases on SQLite and on a
 * throwaway PostgreSQL (skipped with a message when PostgreSQL is not installed; CI installs it).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { AcrossLengthsDto, EpisodeDto, EpisodeRecord, RunDetailDto, RunListDto, SweepDto, SweepListDto, SweepPoint } from "../lib/contracts/index.ts";
import { getDb } from "../server/db/client.ts";
import { ingestBatch } from "../server/runs/ingest.ts";
import { claimRun, expireLeases } from "../server/runs/scheduler.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { resolveConfig } from "../server/qrag/index.ts";
import { startPostgres, tmpDir, uniqueDbName, waitFor } from "./platform-helpers.ts";

async function call<T>(server: RunningServer, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${server.url}${path}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: method === "GET" ? {} : { "content-type": "application/json" } });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** A stored run row with a checkpoint row (no training: for the refusal and upload cases). */
async function seedRun(server: RunningServer, fields: { envName?: string; kind?: string; checkpoint?: boolean } = {}): Promise<string> {
  const h = await getDb(server.databaseUrl);
  const id = `r${crypto.randomBytes(5).toString("hex")}`;
  await h.write((db) =>
    db.run.create({
      data: {
        id, name: `seed ${id}`, status: "completed", config: JSON.stringify(resolveConfig({ preset: "tiny" })), envName: fields.envName ?? "babilong", task: "qa1", kind: fields.kind ?? "train",
        ...(fields.checkpoint ? { checkpoints: { create: [{ step: 100, update: 10, path: "/nowhere/checkpoints/best", best: true }] } } : {}),
      },
    }),
  );
  return id;
}

const point = (numChunks: number, samples: number, coverage = 1): SweepPoint => {
  const s = { precision: 0.5, recall: coverage, f1: 0.6, coverage };
  return { numChunks, label: `${numChunks} chunks`, tokens: numChunks * 21, samples, oracle_stop: false, threshold: 0.5, qrag: s, qragFiltered: { ...s, avgKept: 1.5 }, bm25: s, dense: s, baselineK: 3, episodeSeconds: 0.01, encodeSeconds: 0.005 };
};

function record(id: string, numChunks: number, found: boolean): EpisodeRecord {
  const gold = 3;
  const picks = found ? [gold, 7] : [7, 8];
  const scores = { precision: found ? 0.5 : 0, recall: found ? 1 : 0, f1: found ? 2 / 3 : 0, coverage: found ? 1 : 0 };
  return {
    id, question: "Where is Mary?", answer: "garden", sf_idx: [gold], pred_idx: picks, q_values: [0.9, 0.2], sf_texts: ["Mary went to the garden."], pred_texts: picks.map(() => "text"),
    return: found ? 1 : 0, num_chunks: numChunks, oracle_stop: false, metrics: scores, filtered: { ...scores, threshold: 0.5, kept: 1 },
    steps: picks.map((index, k) => ({ index, text: "text", position: index / numChunks, q: k ? 0.2 : 0.9, q1: 0.9, q2: 0.9, gold: index === gold, reward: 0, topk: [] })),
  };
}

describe("sweeps through the real worker", () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ port: 0, dataDir: tmpDir("qrag-sweep-"), next: false, log: () => {} });
  });
  after(() => server?.close());

  test("a tiny trained run is swept by the local worker: points per length, every episode, across lengths", async () => {
    const created = await call<RunDetailDto>(server, "POST", "/api/runs", { preset: "tiny", overrides: ["steps_count=30", "eval_interval=10", "eval_episodes=8"] });
    assert.equal(created.status, 201);
    const runId = created.body.id;
    await waitFor("the run to complete", async () => {
      const r = (await call<RunDetailDto>(server, "GET", `/api/runs/${runId}`)).body;
      assert.ok(r.status !== "failed" && r.status !== "cancelled", `run ended ${r.status}: ${r.error}`);
      return r.status === "completed";
    }, 180_000, 250);

    const started = await call<SweepDto>(server, "POST", `/api/runs/${runId}/sweeps`, { checkpoint: "best", lengths: [20, 200], samples: 4, baselines: true });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    assert.equal(started.body.run.kind, "sweep");
    assert.equal(started.body.run.sweepOf, runId);
    assert.match(started.body.spec.checkpointLabel, /^best @ update \d+$/);
    const sweepId = started.body.run.id;

    const done = await waitFor("the sweep to complete", async () => {
      const s = (await call<SweepDto>(server, "GET", `/api/sweeps/${sweepId}`)).body;
      assert.ok(s.run.status !== "failed", `sweep failed: ${s.run.error}`);
      return s.run.status === "completed" ? s : null;
    }, 120_000, 250);
    assert.deepEqual(done.points.map((p) => p.numChunks), [20, 200]);
    for (const p of done.points) {
      assert.equal(p.samples, 4);
      assert.ok(p.bm25 && p.dense, "baselines were asked for");
      assert.ok(p.tokens > p.numChunks * 5, `measured tokens ${p.tokens}`);
      assert.ok(p.f1Sd && Number.isFinite(p.f1Sd.qrag));
    }
    assert.ok(done.run.backend, "the worker's backend is recorded on the sweep job");

    // every episode is stored with its haystack size, and each length's coverage is their mean
    for (const p of done.points) {
      const eps = (await call<EpisodeDto[]>(server, "GET", `/api/runs/${sweepId}/episodes?phase=sweep&numChunks=${p.numChunks}&limit=100`)).body;
      assert.equal(eps.length, 4);
      assert.ok(eps.every((e) => e.numChunks === p.numChunks && e.phase === "sweep"));
      assert.ok(Math.abs(eps.reduce((a, e) => a + e.coverage, 0) / eps.length - p.qrag.coverage) < 1e-9);
    }
    const across = (await call<AcrossLengthsDto>(server, "GET", `/api/sweeps/${sweepId}/across`)).body;
    assert.deepEqual(across.lengths, [20, 200]);
    assert.equal(across.samples.length, 4, "the same 4 samples at both lengths");
    for (const s of across.samples) assert.deepEqual(Object.keys(s.cells).map(Number), [20, 200]);

    // the sweep belongs to its run's Sweep section, not to the runs table
    const listed = (await call<RunListDto>(server, "GET", "/api/runs?limit=100")).body;
    assert.ok(!listed.runs.some((r) => r.id === sweepId));
    const sweeps = (await call<SweepListDto>(server, "GET", `/api/runs/${runId}/sweeps`)).body;
    assert.deepEqual(sweeps.sweeps.map((s) => s.run.id), [sweepId]);
    assert.equal((await call(server, "POST", `/api/runs/${sweepId}/clone`, {})).status, 409);
  });
});

const pg = await startPostgres();
if ("skip" in pg) console.log(`# ${pg.skip}`);
else after(() => pg.stop());

for (const provider of ["SQLite", "PostgreSQL"] as const) describe(`sweep API without a worker (${provider})`, provider === "PostgreSQL" && "skip" in pg ? { skip: pg.skip } : {}, () => {
  let server: RunningServer;
  const dataRoot = tmpDir("qrag-sweep-root-");
  before(async () => {
    const databaseUrl = provider === "SQLite" || "skip" in pg ? undefined : await pg.createDatabase(uniqueDbName("qrag_sweeps"));
    server = await startServer({ port: 0, dataDir: tmpDir("qrag-sweep-api-"), dataRoot, ...(databaseUrl ? { databaseUrl } : {}), spawnWorker: false, next: false, log: () => {} });
  });
  after(() => server?.close());

  test("the form's bounds and refusals name the field, and queue nothing", async () => {
    const bare = await seedRun(server);
    const none = await call<{ fieldErrors: Record<string, string> }>(server, "POST", `/api/runs/${bare}/sweeps`, {});
    assert.equal(none.status, 400);
    assert.match(none.body.fieldErrors.checkpoint, /no checkpoint "best"/);
    const withCkpt = await seedRun(server, { checkpoint: true });
    const big = await call<{ fieldErrors: Record<string, string> }>(server, "POST", `/api/runs/${withCkpt}/sweeps`, { lengths: [50, 400_001], samples: 501 });
    assert.equal(big.status, 400);
    assert.match(big.body.fieldErrors["lengths.1"], /400000/);
    assert.ok(big.body.fieldErrors.samples);
    const dup = await call<{ fieldErrors: Record<string, string> }>(server, "POST", `/api/runs/${withCkpt}/sweeps`, { lengths: [50, 50] });
    assert.match(dup.body.fieldErrors.lengths, /distinct/);
    const at = await call<{ fieldErrors: Record<string, string> }>(server, "POST", `/api/runs/${withCkpt}/sweeps`, { checkpoint: 11 });
    assert.match(at.body.fieldErrors.checkpoint, /no checkpoint at update 11/);
    const musique = await seedRun(server, { envName: "musique", checkpoint: true });
    assert.equal((await call(server, "POST", `/api/runs/${musique}/sweeps`, {})).status, 409);
    for (const id of [bare, withCkpt, musique]) assert.deepEqual((await call<SweepListDto>(server, "GET", `/api/runs/${id}/sweeps`)).body.sweeps, []);
    const ok = await call<SweepDto>(server, "POST", `/api/runs/${withCkpt}/sweeps`, { checkpoint: 10, lengths: [50, 400_000], samples: 2, baselines: false, oracleStop: true });
    assert.equal(ok.status, 201);
    assert.deepEqual({ ...ok.body.spec }, { checkpoint: "/nowhere/checkpoints/best", checkpointLabel: "best @ update 10", lengths: [50, 400_000], samples: 2, threshold: 0.5, baselines: false, oracleStop: true, source: "dashboard" });
    assert.equal(ok.body.run.status, "queued");
    assert.equal((await call(server, "POST", `/api/runs/${ok.body.run.id}/sweeps`, {})).status, 409, "a sweep of a sweep job");
  });

  test("a reader: a GGUF file must be a file inside the data root (links resolved), an endpoint model a printable name; the spec keeps the checked path", async () => {
    const runId = await seedRun(server, { checkpoint: true });
    fs.mkdirSync(path.join(dataRoot, "models"), { recursive: true });
    fs.writeFileSync(path.join(dataRoot, "models", "tiny.gguf"), "GGUF");
    const outside = path.join(tmpDir("qrag-sweep-outside-"), "secret.gguf");
    fs.writeFileSync(outside, "GGUF");
    fs.symlinkSync(outside, path.join(dataRoot, "models", "link.gguf"));
    const post = (reader: unknown) => call<{ fieldErrors: Record<string, string> }>(server, "POST", `/api/runs/${runId}/sweeps`, { checkpoint: 10, lengths: [50], reader });
    for (const [reader, field, message] of [
      [{ provider: "gguf", file: "../secret.gguf" }, "reader.file", /inside the data root/],
      [{ provider: "gguf", file: "models/link.gguf" }, "reader.file", /inside the data root/],
      [{ provider: "gguf", file: "models/missing.gguf" }, "reader.file", /not found/],
      [{ provider: "gguf", file: "models" }, "reader.file", /not a file/],
      [{ provider: "endpoint", model: "a model; rm -rf" }, "reader.model", /printable/],
      [{ provider: "endpoint", model: "m", url: "http://evil.example/v1" }, "reader", /url/],
    ] as const) {
      const r = await post(reader);
      assert.equal(r.status, 400, JSON.stringify(reader));
      assert.match(r.body.fieldErrors[field] ?? JSON.stringify(r.body.fieldErrors), message, JSON.stringify(reader));
      assert.ok(!JSON.stringify(r.body).includes(outside), "the link's target is not named");
    }
    assert.deepEqual((await call<SweepListDto>(server, "GET", `/api/runs/${runId}/sweeps`)).body.sweeps, [], "nothing queued");
    const ok = await post({ provider: "gguf", file: "./models/../models/tiny.gguf" });
    assert.equal(ok.status, 201);
    assert.deepEqual((ok.body as unknown as SweepDto).spec.reader, { provider: "gguf", file: "models/tiny.gguf" });
    const ep = await post({ provider: "endpoint", model: "Qwen/Qwen3-4B" });
    assert.deepEqual((ep.body as unknown as SweepDto).spec.reader, { provider: "endpoint", model: "Qwen/Qwen3-4B" });
  });

  test("upload: qrag sweep files become a completed sweep; a bad line names file, line and field and stores nothing", async () => {
    const runId = await seedRun(server);
    const points = [point(50, 2), point(160, 2, 0.5)].map((p) => JSON.stringify(p)).join("\n");
    const episodes = [
      { numChunks: 50, ...record("s1@n50", 50, true) }, { numChunks: 50, ...record("s2@n50", 50, true) },
      { numChunks: 160, ...record("s1@n160", 160, true) }, { numChunks: 160, ...record("s2@n160", 160, false) },
    ].map((e) => JSON.stringify(e)).join("\n");
    const bad = await call<{ error: string; fieldErrors: Record<string, string> }>(server, "POST", `/api/runs/${runId}/sweeps/upload`, {
      points: { name: "sweep.jsonl", text: points },
      episodes: { name: "eps.jsonl", text: episodes + "\n" + JSON.stringify({ numChunks: 50, ...record("s3@n50", 50, true), pred_idx: "secret-value" }) },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.fieldErrors["eps.jsonl line 5"], "pred_idx: Invalid input: expected array, received string");
    assert.ok(!JSON.stringify(bad.body).includes("secret-value"), "the error never echoes the file's content");
    const notJson = await call<{ fieldErrors: Record<string, string> }>(server, "POST", `/api/runs/${runId}/sweeps/upload`, { points: { name: "sweep.jsonl", text: points + "\n{oops secret" } });
    assert.equal(notJson.body.fieldErrors["sweep.jsonl line 3"], "not valid JSON");
    assert.ok(!JSON.stringify(notJson.body).includes("secret"));
    assert.deepEqual((await call<SweepListDto>(server, "GET", `/api/runs/${runId}/sweeps`)).body.sweeps, [], "nothing half-imported");

    const up = await call<SweepDto>(server, "POST", `/api/runs/${runId}/sweeps/upload`, { points: { name: "sweep.jsonl", text: points }, episodes: { name: "eps.jsonl", text: episodes } });
    assert.equal(up.status, 201, JSON.stringify(up.body));
    assert.equal(up.body.run.status, "completed");
    assert.equal(up.body.spec.source, "upload");
    assert.deepEqual(up.body.points.map((p) => [p.numChunks, p.qrag.coverage]), [[50, 1], [160, 0.5]]);
    const across = (await call<AcrossLengthsDto>(server, "GET", `/api/sweeps/${up.body.run.id}/across`)).body;
    const s2 = across.samples.find((s) => s.sample === "s2")!;
    assert.deepEqual([s2.cells[50].found, s2.cells[160].found], [1, 0], "s2 finds its fact at 50 chunks, not at 160");
  });

  test("upload: an episodes file over the 4 MiB default body limit is accepted on this route", async () => {
    const runId = await seedRun(server);
    const lines: string[] = [];
    for (let i = 0; lines.join("\n").length < 5 * 1024 * 1024 && i < 20_000; i++) {
      for (let k = 0; k < 200; k++, i++) lines.push(JSON.stringify({ numChunks: 50, ...record(`s${i}@n50`, 50, i % 3 > 0), question: `Where is Mary? ${"x".repeat(600)}` }));
    }
    const up = await call<SweepDto>(server, "POST", `/api/runs/${runId}/sweeps/upload`, { points: { name: "sweep.jsonl", text: JSON.stringify(point(50, lines.length)) }, episodes: { name: "eps.jsonl", text: lines.join("\n") } });
    assert.equal(up.status, 201, JSON.stringify(up.body).slice(0, 300));
    const eps = (await call<EpisodeDto[]>(server, "GET", `/api/runs/${up.body.run.id}/episodes?phase=sweep&limit=1000`)).body;
    assert.equal(eps.length, Math.min(1000, lines.length));
  });

  test("a lost worker's sweep is queued again and its next attempt skips the stored lengths", async () => {
    const runId = await seedRun(server, { checkpoint: true });
    const h = await getDb(server.databaseUrl);
    const s = (await call<SweepDto>(server, "POST", `/api/runs/${runId}/sweeps`, { lengths: [50, 160, 1200], samples: 2 })).body;
    // an hour's lease, expired below by a "now" two hours on: the server's own lease reaper (every
    // second, at the real time) cannot take the sweep back first (a 1 ms lease let it, and this
    // test's expireLeases then found nothing)
    const first = await claimRun(h, s.run.id, "w-lost", 3_600_000);
    assert.ok(first);
    assert.deepEqual(first.skipLengths, []);
    const ack = await ingestBatch(h, { runId: s.run.id, seq: first.lastSeq + 1, events: [{ type: "sweep_point", point: point(50, 2) }] }, "w-lost");
    assert.ok(ack.ok, ack.error);
    const expired = await expireLeases(h, new Date(Date.now() + 7_200_000));
    assert.deepEqual(expired.filter((e) => e.runId === s.run.id).map((e) => e.outcome), ["queued"]);
    const again = await claimRun(h, s.run.id, "w-new", 60_000);
    assert.deepEqual(again?.skipLengths, [50]);
    assert.equal(again?.kind, "sweep");
  });

  test("imported runs are read-only", async () => {
    const id = await seedRun(server, { kind: "imported" });
    for (const [method, path, body] of [["POST", `/api/runs/${id}/cancel`], ["POST", `/api/runs/${id}/resume`], ["PATCH", `/api/runs/${id}`, { name: "x" }]] as const) {
      const r = await call<{ error: string }>(server, method, path, body);
      assert.equal(r.status, 409, `${method} ${path}`);
      assert.match(r.body.error, /imported and read-only/);
    }
  });
});
