/**
 * Issue 10's file findings, re-run against the real server (no Next, a real SQLite file) and a
 * real worker process: a config naming a folder or file outside the data root (an outside folder
 * of books as noise, /etc/passwd, ../../../../etc/passwd, a symlink out, a path that does not
 * exist) answers 400 naming the field and the root, the same text whether the path exists or not,
 * and writes nothing; a malformed dataset file inside the root fails its run naming file and line,
 * and its text reaches no API answer, database byte or log line.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { DataFilesDto, FieldErrorsDto, RunDetailDto, RunListDto } from "../lib/contracts/index.ts";
import { resolveConfig, validateConfig } from "../server/qrag/index.ts";
import { buildSource } from "../server/qrag/data/sources.ts";
import { chunkAt } from "../server/qrag/types.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { openDb } from "../server/db/client.ts";
import { ROOT, tmpDir, waitFor } from "./platform-helpers.ts";

const MARKER = "MARKER-c0ffee-secret-line";
const base = tmpDir("qrag-paths-");
const root = path.join(base, "data");
const outside = path.join(base, "outside");
const serverLog: string[] = [];
const answers: string[] = [];
let server: RunningServer;
let worker: ChildProcess | undefined;
let workerOut = "";

before(async () => {
  fs.mkdirSync(path.join(outside, "books"), { recursive: true });
  fs.writeFileSync(path.join(outside, "books", "secret.txt"), `The note ${MARKER} was written on the wall of the old house.\nAnother note ${MARKER} was left under the big stone.\n`);
  fs.writeFileSync(path.join(outside, "secret.jsonl"), `${MARKER}\n`);
  server = await startServer({ port: 0, dataDir: root, spawnWorker: false, next: false, log: (m) => serverLog.push(m) });
  fs.mkdirSync(path.join(root, "musique"), { recursive: true });
  fs.copyFileSync(path.join(ROOT, "test", "fixtures", "musique.jsonl"), path.join(root, "musique", "good.jsonl"));
  fs.writeFileSync(path.join(root, "musique", "bad.jsonl"), `${MARKER}:x:0:0:root:/root:/bin/bash\n`);
  fs.symlinkSync(path.join(outside, "secret.jsonl"), path.join(root, "musique", "link-out.jsonl"));
  fs.symlinkSync(path.join(outside, "books"), path.join(root, "books-out"));
});
after(async () => {
  worker?.kill("SIGKILL");
  await server?.close();
  fs.rmSync(base, { recursive: true, force: true });
});

const call = async <T>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> => {
  const r = await fetch(`${server.url}${p}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json", origin: server.url },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  answers.push(text);
  return { status: r.status, body: JSON.parse(text) as T };
};
/** One real worker process (its own data root = the server's data folder), its output kept. */
function ensureWorker(): void {
  if (worker) return;
  worker = spawn(process.execPath, ["--import", "tsx", "server/worker/main.ts", "--url", server.url, "--token", server.workerToken, "--name", "paths", "--data-dir", root], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, QRAG_WASM_THREADS: "1" },
  });
  worker.stdout!.on("data", (d: Buffer) => (workerOut += d.toString()));
  worker.stderr!.on("data", (d: Buffer) => (workerOut += d.toString()));
}

/** Nowhere: API answers, the database (every byte of the SQLite files), the server's and worker's logs. */
function assertMarkerNowhere(): void {
  for (const text of answers) assert.ok(!text.includes(MARKER), `an API answer holds the marker: ${text.slice(0, 300)}`);
  for (const f of fs.readdirSync(root).filter((f) => f.startsWith("qrag.db"))) {
    assert.ok(!fs.readFileSync(path.join(root, f)).includes(MARKER), `${f} holds the marker`);
  }
  assert.ok(!serverLog.join("\n").includes(MARKER), "the server log holds the marker");
  assert.ok(!workerOut.includes(MARKER), "the worker's output holds the marker");
}

const finished = (id: string) =>
  waitFor(`run ${id} to end`, async () => {
    const r = await call<RunDetailDto>("GET", `/api/runs/${id}`);
    return r.body.status === "failed" || r.body.status === "completed" ? r.body : undefined;
  }, 120_000, 200);

const runCount = async () => (await call<RunListDto>("GET", "/api/runs?limit=1")).body.total;

const tiny = resolveConfig({ preset: "tiny" }) as unknown as Record<string, unknown> & { envs: Record<string, unknown> };
/** The tiny preset on MuSiQue files (train and eval). */
function musique(trainPath: string, evalPath = "musique/good.jsonl") {
  const { max_steps, positions_processor, sort_by_index } = tiny.envs;
  return { ...tiny, name: "paths", steps_count: 2, eval_interval: 2, eval_episodes: 2, envs: { name: "musique", max_steps, positions_processor, sort_by_index, train_path: trainPath, eval_path: evalPath } };
}

test("paths outside the data root answer one 400 naming the field and the root; nothing is written", async () => {
  const before = await runCount();
  const OUTSIDE = `must be inside the data root ${root}`;
  const cases: [string, unknown][] = [
    ["config.envs.noise", { config: tiny, overrides: [`envs.noise=${path.join(outside, "books")}`] }],
    ["config.envs.noise", { config: tiny, overrides: ["envs.noise=books-out"] }],
    ["config.envs.noise", { config: tiny, overrides: ["envs.noise=/etc"] }],
    ["config.envs.train_path", { config: musique("/etc/passwd") }],
    ["config.envs.train_path", { config: musique("../../../../etc/passwd") }],
    ["config.envs.train_path", { config: musique("/nonexistent/x") }],
    ["config.envs.train_path", { config: musique("../../../../nonexistent/x") }],
    ["config.envs.train_path", { config: musique(path.join(outside, "secret.jsonl")) }],
    ["config.envs.train_path", { config: musique("musique/link-out.jsonl") }],
    ["config.envs.eval_path", { config: musique("musique/good.jsonl", "/etc/shadow") }],
  ];
  for (const [field, body] of cases) {
    for (const endpoint of ["/api/runs", "/api/runs/validate"]) {
      const r = await call<FieldErrorsDto & { ok?: boolean }>("POST", endpoint, body);
      assert.equal(r.status, endpoint === "/api/runs" ? 400 : 200, `${endpoint} ${JSON.stringify(body)} ${JSON.stringify(r.body)}`);
      assert.deepEqual(r.body.fieldErrors, { [field]: OUTSIDE }, `${endpoint} ${JSON.stringify(body)}`);
    }
  }
  // server internals under the root are not data either
  for (const p of ["qrag.db", "worker-token", "runs"]) {
    const r = await call<FieldErrorsDto>("POST", "/api/runs", { config: musique(p) });
    assert.equal(r.status, 400, p);
    assert.match(r.body.fieldErrors["config.envs.train_path"], /reserved/, p);
  }
  // inside the root a missing file may say so
  const missing = await call<FieldErrorsDto>("POST", "/api/runs", { config: musique("musique/none.jsonl") });
  assert.equal(missing.body.fieldErrors["config.envs.train_path"], `musique/none.jsonl not found in the data root ${root}`);
  assert.equal(await runCount(), before, "no run row was written");
});

test("a clone cannot point a run outside the root; paths inside are stored relative", async () => {
  const ok = await call<RunDetailDto>("POST", "/api/runs", { config: musique(path.join(root, "musique", "good.jsonl")) });
  assert.equal(ok.status, 201);
  assert.equal((ok.body.config as { envs: { train_path: string } }).envs.train_path, "musique/good.jsonl", "stored relative to the root");
  await call("POST", `/api/runs/${ok.body.id}/cancel`, {});
  const before = await runCount();
  const clone = await call<FieldErrorsDto>("POST", `/api/runs/${ok.body.id}/clone`, { config: { envs: { train_path: "../../../../etc/passwd" } } });
  assert.equal(clone.status, 400);
  assert.deepEqual(clone.body.fieldErrors, { "config.envs.train_path": `must be inside the data root ${root}` });
  assert.equal(await runCount(), before);
});

test("GET /api/data-files lists the root without internals or links out", async () => {
  const r = await call<DataFilesDto>("GET", "/api/data-files");
  assert.equal(r.status, 200);
  assert.equal(r.body.root, root);
  const paths = r.body.entries.map((e) => e.path);
  assert.ok(paths.includes("musique/good.jsonl"));
  for (const p of ["qrag.db", "worker-token", "runs", "books-out", "musique/link-out.jsonl"]) assert.ok(!paths.includes(p), p);
});

test("a malformed file inside the root fails its run naming file and line; its text is nowhere", async () => {
  ensureWorker();
  const created = await call<RunDetailDto>("POST", "/api/runs", { config: musique("musique/bad.jsonl") });
  assert.equal(created.status, 201);
  const id = created.body.id;
  const done = await finished(id);
  assert.equal(done.status, "failed", workerOut);
  assert.equal(done.error, "musique/bad.jsonl:1: invalid JSON");
  await call("GET", `/api/runs/${id}/logs`);
  await call("GET", `/api/runs`);
  assertMarkerNowhere();
  assert.ok(answers.some((t) => t.includes("musique/bad.jsonl:1")), "the error named file and line");
});

test("a run on dataset files inside the root, named relative to it, trains to the end", async () => {
  ensureWorker();
  const created = await call<RunDetailDto>("POST", "/api/runs", { config: musique("musique/good.jsonl") });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const done = await finished(created.body.id);
  assert.equal(done.status, "completed", `${done.error}\n${workerOut}`);
  assert.equal((done.config as { envs: { train_path: string } }).envs.train_path, "musique/good.jsonl");
});

test("stored configs naming outside paths (rows from before the data root) are refused by the worker and the chunks view", async () => {
  ensureWorker();
  const db = await openDb(server.databaseUrl);
  const outsideRun = `paths-old-${Date.now().toString(36)}`;
  const noiseRun = `${outsideRun}-noise`;
  let episodeId: number;
  try {
    await db.prisma.run.create({ data: { id: outsideRun, name: "old", status: "queued", config: JSON.stringify(musique(path.join(outside, "secret.jsonl"))), envName: "musique", task: "musique" } });
    const noisy = { ...tiny, envs: { ...tiny.envs, noise: path.join(outside, "books") } };
    await db.prisma.run.create({ data: { id: noiseRun, name: "old noise", status: "completed", config: JSON.stringify(noisy), envName: "babilong", task: "qa1" } });
    // the episode as an engine that read the outside books would have stored it
    const sample = buildSource(validateConfig(noisy), "test", 20, outside).sample(0);
    const record = { id: sample.id, num_chunks: 20, sf_idx: sample.supportIdx, sf_texts: sample.supportIdx.map((i) => chunkAt(sample.chunks, i)) };
    episodeId = (await db.prisma.episode.create({
      data: { runId: noiseRun, seq: 1, phase: "eval", step: 0, update: 0, sampleId: record.id, numChunks: 20, coverage: 0, f1: 0, return: 0, record: JSON.stringify(record) },
    })).id;
  } finally {
    await db.close();
  }
  const done = await finished(outsideRun);
  assert.equal(done.status, "failed");
  assert.equal(done.error, `config.envs.train_path: must be inside the data root ${root}`);
  const chunks = await call<{ error?: string }>("GET", `/api/runs/${noiseRun}/episodes/${episodeId}/chunks?from=0&to=20`);
  assert.equal(chunks.status, 404, "the outside books are not read");
  assert.match(chunks.body.error ?? "", /chunk texts unavailable/);
  await call("GET", `/api/runs/${outsideRun}/logs`);
  assertMarkerNowhere();
});
