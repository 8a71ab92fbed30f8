/**
 * The mission's shape on one machine, end to end, as a researcher runs it on a GPU server: the
 * dashboard server and a trainer worker (the device pack's bundles, or the checkout under tsx), a
 * `babilong-gpu` run with a Hugging Face BERT encoder from the data root launched through the REST
 * API, its metric points streamed over socket.io /ui, completed, swept at ≈1M tokens (40,000
 * chunks), and its five exports downloaded. Then (optional) the paper's encoder size: a
 * random-weight BERT-base trained for a bounded time, for its update rate.
 *
 * Every phase's figures go to OUT/mission.json as soon as they exist (a time-boxed call keeps
 * what finished); the server's and worker's last lines to OUT/mission.log.
 *
 *   node mission.mjs --app DIR --repo CHECKOUT [--steps 300] [--eval-episodes 50] [--sweep-chunks 40000]
 *     [--sweep-samples 10] [--train-seconds 150] [--base-seconds 90] [--deadline 400]   (the device: run.sh mission)
 *   QRAG_BACKEND=webgpu npx tsx scripts/device/mission.ts --steps 4 --eval-episodes 4 --sweep-chunks 400
 *     --base-seconds 0       (the checkout under tsx, any webgpu adapter: lavapipe here, slowly)
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import { parseArgs } from "node:util";
import type { RunDetailDto, SweepDto, WorkerDto } from "../../lib/contracts/index.ts";
import { EXPORT_FILES } from "../../lib/contracts/index.ts";
import { writeRandomBert } from "../../server/qrag/index.ts";
import { Proc, UiStream, api as e2eApi, close, getRun as e2eGetRun, metricsOf, ptKey, storedPoints as e2eStoredPoints, type Env, type Pt } from "../../test/e2e-helpers.ts";
import { GiveUp, freePort, waitFor } from "../../test/platform-helpers.ts";

const { values: a } = parseArgs({
  options: {
    app: { type: "string" },
    repo: { type: "string", default: path.resolve(import.meta.dirname, "../..") },
    fixture: { type: "string", default: "test/fixtures/bert-tiny" },
    out: { type: "string", default: process.env.OUT ?? "/tmp/qrag-out" },
    work: { type: "string", default: path.join(os.tmpdir(), "qrag-mission") },
    steps: { type: "string", default: "300" },
    "sweep-chunks": { type: "string", default: "40000" },
    "sweep-samples": { type: "string", default: "10" },
    "train-seconds": { type: "string", default: "150" },
    "base-seconds": { type: "string", default: "90" },
    "eval-episodes": { type: "string", default: "50" },
    deadline: { type: "string", default: "400" },
    /** Stop at once when the worker chose another backend (the device call is too short to waste). */
    "expect-backend": { type: "string" },
    /** Which phases run: train (with its sweep and exports) and base (BERT-base's update rate). */
    phases: { type: "string", default: "train,base" },
    /** Extra config overrides for the BERT-base run, comma-separated (e.g. batch_size=16). */
    "base-overrides": { type: "string", default: "" },
  },
});
/** The checkout: configs/ and the bert-tiny fixture come from it. */
const REPO = path.resolve(a.repo!);
const t0 = Date.now();
const deadline = t0 + Number(a.deadline) * 1000;
const left = () => Math.max(1_000, deadline - Date.now());
const secs = (ms: number) => Math.round(ms) / 1000;
const log = (m: string) => console.log(`[mission ${secs(Date.now() - t0)} s] ${m}`);

fs.rmSync(a.work!, { recursive: true, force: true });
const dataDir = path.join(a.work!, "data");
fs.mkdirSync(path.join(dataDir, "models"), { recursive: true });
fs.mkdirSync(a.out!, { recursive: true });
const result: Record<string, unknown> = { startedAt: new Date().toISOString(), host: os.hostname() };
const save = () => fs.writeFileSync(path.join(a.out!, "mission.json"), JSON.stringify(result, null, 1) + "\n");

// ---- processes: the bundles (--app) or the checkout under tsx ------------------------------------
const token = "mission-worker-token";
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const env: NodeJS.ProcessEnv = {
  ...process.env,
  NODE_ENV: "production",
  DATABASE_URL: `file:${path.join(a.work!, "qrag.db")}`,
  QRAG_DATA_DIR: dataDir,
  // the worker reads the encoders from the same folder (its own default is its --data-dir)
  QRAG_DATA_ROOT: dataDir,
  QRAG_CONFIG_DIR: path.join(REPO, "configs"),
  QRAG_WORKER_TOKEN: token,
  NEXT_TELEMETRY_DISABLED: "1",
};
const entry = (rel: string) => (a.app ? [path.join(a.app, `${rel}.mjs`)] : ["--import", "tsx", path.join(REPO, `${rel}.ts`)]);
const start = (name: string, args: string[]) => new Proc(name, spawn(process.execPath, args, { cwd: a.app ? a.work : REPO, env, stdio: ["ignore", "pipe", "pipe"] }));
const procs: Proc[] = [];
const tails = () => procs.map((p) => p.tail(60)).join("\n");

// the e2e tests' REST helpers, on this server
const server: Env = { dbUrl: env.DATABASE_URL!, dataDir, port, url };
const api = <T>(method: "GET" | "POST", p: string, body?: unknown) => e2eApi<T>(server, method, p, body);
const getRun = (id: string) => e2eGetRun(server, id);
const storedPoints = (id: string) => e2eStoredPoints(server, id);
const alive = () => {
  for (const p of procs) if (!p.alive()) throw new GiveUp(`${p.name} exited\n${tails()}`);
};
async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, everyMs = 200, withinMs = left()): Promise<T> {
  return waitFor(what, async () => (alive(), fn()), Math.min(withinMs, left()), everyMs, tails);
}
const ended = async (id: string) => {
  const r = await getRun(id);
  return ["completed", "failed", "cancelled"].includes(r.status) ? r : null;
};
async function finished(id: string): Promise<RunDetailDto> {
  const r = await until(`run ${id} to finish`, () => ended(id), 250);
  assert.equal(r.status, "completed", `run ${id} ended ${r.status}: ${r.error ?? ""}`);
  return r;
}
/** The run finished within `ms`, else cancelled then (a cancel leaves a checkpoint to sweep). */
async function finishedWithin(id: string, ms: number): Promise<RunDetailDto> {
  try {
    return await until(`run ${id} to finish`, () => ended(id), 250, ms);
  } catch (e) {
    if ((e as Error).message.includes("exited")) throw e;
    log(`run ${id} still training after ${ms / 1000} s: cancelled`);
    await api("POST", `/api/runs/${id}/cancel`, {});
    return until(`run ${id} to stop`, () => ended(id), 250);
  }
}
const median = (xs: number[]) => (xs.length ? [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] : null);
const lastOf = (pts: Pt[], key: string) => pts.filter((p) => p.key === key).at(-1)?.value ?? null;
const valuesOf = (pts: Pt[], key: string) => pts.filter((p) => p.key === key).map((p) => p.value);


try {
  // the encoders in the data root: bert-tiny as shipped (the exactness fixture), and BERT-base's
  // shape with random weights over bert-tiny's bAbI word pieces
  const fixture = path.resolve(REPO, a.fixture!);
  fs.cpSync(fixture, path.join(dataDir, "models", "bert-tiny"), { recursive: true });
  const baseSeconds = Number(a["base-seconds"]);
  if (baseSeconds > 0) {
    const s = Date.now();
    const words = fs.readFileSync(path.join(fixture, "vocab.txt"), "utf8").split("\n").filter(Boolean);
    writeRandomBert(path.join(dataDir, "models", "bert-base"), { hidden: 768, layers: 12, heads: 12, intermediate: 3072 }, { words, positions: 512, seed: 7 });
    log(`random BERT-base written in ${secs(Date.now() - s)} s`);
  }

  procs.push(start("server", [...entry("server/main"), "--no-worker", "--no-next", "--host", "127.0.0.1", "--port", String(port)]));
  await until("the server", async () => (await fetch(`${url}/api/health`)).ok);
  result.serverReadyS = secs(Date.now() - t0);
  procs.push(start("worker", [...entry("server/worker/main"), "--url", url, "--token", token, "--name", "gpu", "--data-dir", path.join(a.work!, "worker")]));
  const worker = await until("the worker to connect", async () => (await api<WorkerDto[]>("GET", "/api/workers")).body.find((w) => w.name === "gpu"));
  result.worker = { backend: worker.backend, device: worker.device, connectedS: secs(Date.now() - t0) };
  log(`worker connected: ${worker.backend} ${worker.device ?? ""}`);
  save();
  if (a["expect-backend"] && worker.backend !== a["expect-backend"]) throw new Error(`the worker chose ${worker.backend}, not ${a["expect-backend"]}\n${tails()}`);

  const phases = new Set(a.phases!.split(","));
  if (phases.has("train")) await trainSweepExport();
  if (phases.has("base") && baseSeconds > 0) await bertBase(baseSeconds);
  result.ok = true;
} catch (e) {
  result.ok = false;
  result.error = (e as Error).message.slice(0, 4000);
  log(`failed: ${result.error}`);
} finally {
  result.totalS = secs(Date.now() - t0);
  save();
  fs.writeFileSync(path.join(a.out!, "mission.log"), tails() + "\n");
  await Promise.all(procs.map((p) => p.stop()));
}
process.exit(result.ok ? 0 : 1);

/** A babilong-gpu run with bert-tiny through the REST API, streamed; swept at ≈1M tokens; its exports. */
async function trainSweepExport(): Promise<void> {
  const steps = Number(a.steps);
  const interval = Math.max(1, Math.floor(steps / 4));
  const ui = new UiStream({ url });
  const created = await api<RunDetailDto>("POST", "/api/runs", {
    preset: "babilong-gpu",
    name: "mission bert-tiny",
    tags: ["mission"],
    overrides: [
      "algo.encoder.path=models/bert-tiny", "algo.encoder.max_length=64", `steps_count=${steps}`, `eval_interval=${interval}`,
      `eval_episodes=${a["eval-episodes"]}`, "eval_episodes_logged=4", "learning_start=64", "algo.scheduler.warmup=10", "algo.optimizer.lr=5e-4",
    ],
  });
  assert.equal(created.status, 201, JSON.stringify(created.body).slice(0, 2000));
  const id = created.body.id;
  await ui.subscribe(id);
  const running = await until("the run to start", async () => {
    const r = await getRun(id);
    return r.status !== "queued" ? r : null;
  }, 50);
  const startedAt = Date.now();
  const done = await finishedWithin(id, Number(a["train-seconds"]) * 1000);
  assert.ok(done.status === "completed" || done.status === "cancelled", `the run ended ${done.status}: ${done.error ?? ""}`);
  const trainS = secs(Date.now() - startedAt);
  // the last batches may still be on the wire when the status turns: wait for the stream to reach the stored sequence
  await until("the stream to catch up", async () => ui.lastSeq(id) >= (await getRun(id)).lastSeq);
  const live = metricsOf(ui.events(id));
  const stored = await storedPoints(id);
  const storedBy = new Map(stored.map((p) => [ptKey(p), p.value]));
  const liveBy = new Map(live.map((p) => [ptKey(p), p.value]));
  const mismatched = [...storedBy].filter(([k, v]) => !close(liveBy.get(k), v)).length + [...liveBy.keys()].filter((k) => !storedBy.has(k)).length;
  result.train = {
    runId: id, status: done.status, lastUpdate: done.progressDone, backend: done.backend, device: done.device, steps, queuedToRunningS: secs(startedAt - Date.parse(running.createdAt)),
    wallS: trainS, updatesPerS: median(valuesOf(stored, "updates_per_s")), transitionsPerS: median(valuesOf(stored, "transitions_per_s")),
    evalCoverage: lastOf(stored, "eval_coverage"), livePoints: live.length, storedPoints: stored.length, liveVsStoredMismatches: mismatched,
    streamGaps: ui.violations.length, checkpoints: done.checkpoints.length,
    gpuMemoryMb: lastOf(stored, "gpu_memory_mb"), gpuMemoryLiveMb: lastOf(stored, "gpu_memory_live_mb"), gpuMemoryPeakMb: lastOf(stored, "gpu_memory_peak_mb"), gpuMemoryPlansMb: lastOf(stored, "gpu_memory_plans_mb"),
  };
  ui.close();
  log(`trained ${steps} updates in ${trainS} s on ${done.backend}; ${live.length} points live = ${stored.length} stored, ${mismatched} differ`);
  save();

  // ---- a sweep at ≈1M tokens ---------------------------------------------------------------------
  const chunks = Number(a["sweep-chunks"]);
  const sweepStart = Date.now();
  const sw = await api<SweepDto>("POST", `/api/runs/${id}/sweeps`, { checkpoint: "last", lengths: [chunks], samples: Number(a["sweep-samples"]), baselines: true });
  assert.equal(sw.status, 201, JSON.stringify(sw.body).slice(0, 2000));
  await finished(sw.body.run.id);
  const swept = (await api<SweepDto>("GET", `/api/sweeps/${sw.body.run.id}`)).body;
  const p = swept.points[0];
  result.sweep = {
    jobId: sw.body.run.id, wallS: secs(Date.now() - sweepStart), numChunks: p?.numChunks, tokens: p?.tokens, samples: p?.samples,
    episodeSeconds: p?.episodeSeconds, encodeSeconds: p?.encodeSeconds,
    coverage: { qrag: p?.qrag.coverage, bm25: p?.bm25?.coverage, dense: p?.dense?.coverage },
  };
  log(`swept at ${chunks} chunks (${p?.tokens} tokens): ${JSON.stringify(result.sweep)}`);
  save();

  // ---- the exports, as the Export menu downloads them --------------------------------------------
  const exports: Record<string, unknown> = {};
  for (const f of EXPORT_FILES) {
    const r = await fetch(`${url}/api/runs/${id}/export/${f}`);
    const body = Buffer.from(await r.arrayBuffer());
    fs.writeFileSync(path.join(a.work!, f), body);
    exports[f] = { status: r.status, bytes: body.length, ...(f === "metrics.csv" ? { rows: body.toString("utf8").trim().split("\n").length - 1 } : {}) };
  }
  result.exports = exports;
  save();
}

/** The paper's encoder size: BERT-base trained for a bounded time, for its update rate. */
async function bertBase(baseSeconds: number): Promise<void> {
  {
    const b = await api<RunDetailDto>("POST", "/api/runs", {
      preset: "babilong-gpu",
      name: "mission bert-base",
      overrides: ["algo.encoder.path=models/bert-base", "steps_count=50000", "eval_interval=50000", "eval_episodes=8", "learning_start=64",
        ...a["base-overrides"]!.split(",").filter(Boolean)],
    });
    assert.equal(b.status, 201, JSON.stringify(b.body).slice(0, 2000));
    await until("the BERT-base run to start", async () => (await getRun(b.body.id)).status === "running", 100);
    const s = Date.now();
    // the update rate from the run's progress: from its first update to the end of the window
    let first: { t: number; done: number } | null = null;
    let last: { t: number; done: number } | null = null;
    await until(`BERT-base to train for ${baseSeconds} s`, async () => {
      const r = await getRun(b.body.id);
      if (r.status !== "running") throw new GiveUp(`the BERT-base run ended ${r.status}: ${r.error ?? ""}`);
      if ((r.progressDone ?? 0) >= 1) {
        last = { t: Date.now(), done: r.progressDone! };
        first ??= last;
      }
      return Date.now() - s > baseSeconds * 1000;
    }, 500);
    const pts = await storedPoints(b.body.id);
    await api("POST", `/api/runs/${b.body.id}/cancel`, {});
    const f = first as { t: number; done: number } | null, l = last as { t: number; done: number } | null;
    const ups = f && l && l.done > f.done ? (l.done - f.done) / ((l.t - f.t) / 1000) : null;
    result.bertBase = {
      overrides: a["base-overrides"], seconds: baseSeconds, firstUpdateS: f ? secs(f.t - s) : null, lastUpdate: l?.done ?? 0, updatesPerS: ups,
      transitionsPerS: median(valuesOf(pts, "transitions_per_s").slice(-10)),
      rolloutS: median(valuesOf(pts, "rollout_s").slice(-10)), updateS: median(valuesOf(pts, "update_s").slice(-10)),
      hoursFor50kUpdates: ups ? Math.round((50_000 / ups / 3600) * 10) / 10 : null,
      gpuMemoryMb: lastOf(pts, "gpu_memory_mb"), gpuMemoryPeakMb: lastOf(pts, "gpu_memory_peak_mb"), gpuMemoryPlansMb: lastOf(pts, "gpu_memory_plans_mb"),
    };
    log(`BERT-base: ${JSON.stringify(result.bertBase)}`);
  }
}
