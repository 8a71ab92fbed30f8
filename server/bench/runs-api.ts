/**
 * Benchmark: the runs API with 1,000 runs (target ≤ 300 ms). Starts the real server (HTTP +
 * socket.io + the API router; no Next, which the API does not need; no worker) on a temporary database, inserts N finished runs
 * with realistic configs, tags and summaries, and times GET /api/runs through the server's API
 * router (each after an edit of a run, so read from the database, not shared): the median of 20
 * requests after 3 warm-ups, for the largest page (limit=500), the
 * default page, a search, a duration sort, and the chosen columns with a filter expression and a
 * sort on a column. Then the load phase: LOAD_CONCURRENCY (300)
 * simultaneous GET of the dashboard's default page (limit=50), in LOAD_ROUNDS rounds after a warm
 * round, each request timed from send to parsed body: p50/p95/max and requests per second (target
 * p95 ≤ 300 ms). Prints JSON.
 *
 *   tsx server/bench/runs-api.ts [--runs 1000]   # SQLite in a temp folder
 *   DATABASE_URL=postgresql://… tsx server/bench/runs-api.ts         # an empty PostgreSQL database
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { configureEngine, resolveConfig } from "../qrag/index.ts";
import { settings } from "../settings.ts";
import { getDb } from "../db/client.ts";
import { startServer } from "../main.ts";

const N = Number(parseArgs({ options: { runs: { type: "string", default: "1000" } } }).values.runs);
const REPS = 20;
const LOAD_CONCURRENCY = 300;
const LOAD_ROUNDS = 5;
/** What the dashboard's runs table asks for first (app/page.tsx, PAGE = 50). */
const DEFAULT_PAGE = "/api/runs?limit=50";

async function main() {
  configureEngine(settings().engine);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-bench-"));
  const server = await startServer({ port: 0, dataDir, spawnWorker: false, next: false, log: () => {} });
  try {
    const h = await getDb();
    const config = JSON.stringify(resolveConfig({ preset: "babilong-cpu" }));
    const statuses = ["completed", "completed", "completed", "failed", "cancelled", "running", "queued"];
    const t0 = Date.now() - N * 60_000;
    const rows = Array.from({ length: N }, (_, i) => {
      const status = statuses[i % statuses.length];
      const created = new Date(t0 + i * 60_000);
      const started = status === "queued" ? null : new Date(created.getTime() + 5_000);
      return {
        id: `bench${String(i).padStart(6, "0")}`,
        name: `babilong-qa${(i % 5) + 1}-${i}`,
        status,
        config,
        preset: "babilong-cpu",
        envName: "babilong",
        task: `qa${(i % 5) + 1}`,
        tags: JSON.stringify(i % 3 ? ["sweep", `lr-${i % 7}`] : ["baseline"]),
        notes: i % 10 ? "" : "a note about this run",
        createdAt: created,
        startedAt: started,
        finishedAt: started && status !== "running" ? new Date(started.getTime() + (i % 97) * 1000) : null,
        attempt: started ? 1 : 0,
        lastSeq: 400,
        progressDone: 3000,
        progressTotal: 3000,
        summary: JSON.stringify({ qf_loss: 0.01 * (i % 13), eval_coverage: 0.9, eval_f1: 0.7, eval_return: 0.8, train_return: 0.6, transitions_per_s: 812, update: 3000, step: 192000 }),
        error: status === "failed" ? "worker lost" : null,
      };
    });
    await h.write(async (db) => {
      for (let i = 0; i < rows.length; i += 200) await db.run.createMany({ data: rows.slice(i, i + 200) });
    });

    // a change before each timed request: identical lists are shared until a run changes
    // (server/runs/list-cache.ts), and these figures are for a read from the database
    let edits = 0;
    const change = async () => {
      const res = await fetch(`${server.url}/api/runs/bench000000`, {
        method: "PATCH",
        headers: { "content-type": "application/json", origin: server.url },
        body: JSON.stringify({ notes: `edit ${++edits}` }),
      });
      if (!res.ok) throw new Error(`PATCH: HTTP ${res.status}`);
    };
    const time = async (p: string) => {
      const once = async () => {
        await change();
        const t = performance.now();
        const res = await fetch(`${server.url}${p}`);
        const body = (await res.json()) as { runs?: unknown[]; total?: number };
        if (!res.ok) throw new Error(`${p}: HTTP ${res.status}`);
        return { ms: performance.now() - t, runs: body.runs?.length ?? 0, total: body.total ?? 0 };
      };
      for (let i = 0; i < 3; i++) await once();
      const samples = [];
      for (let i = 0; i < REPS; i++) samples.push(await once());
      const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
      return { path: p, runs: samples[0].runs, total: samples[0].total, median_ms: +ms[Math.floor(ms.length / 2)].toFixed(1), p90_ms: +ms[Math.floor(ms.length * 0.9)].toFixed(1), max_ms: +ms.at(-1)!.toFixed(1) };
    };
    const results = [];
    // the runs table's chosen columns and filter (lib/contracts/run-columns.ts): every run's config and summary read and parsed
    const where = encodeURIComponent("envs.task ~ qa2 and last.qf_loss < 0.05");
    const cols = encodeURIComponent("envs.task,algo.optimizer.lr,last.eval_coverage");
    for (const p of [
      "/api/runs?limit=500", "/api/runs", "/api/runs?q=qa3&tag=sweep&limit=500", "/api/runs?sort=duration&limit=500",
      `/api/runs?limit=50&cols=${cols}`, `/api/runs?limit=50&where=${where}&cols=${cols}`, `/api/runs?limit=50&sort=last.qf_loss&cols=${cols}`,
    ]) results.push(await time(p));

    // ---- load: 300 concurrent requests of the default page ----
    // The clients run in a worker thread, as browsers would run outside the server: on one event
    // loop their own parsing would be counted as server latency.
    const { lat, wall, page } = await loadFromThread(`${server.url}${DEFAULT_PAGE}`);
    lat.sort((a, b) => a - b);
    const pct = (q: number) => +lat[Math.min(lat.length - 1, Math.floor(lat.length * q))].toFixed(1);
    const load = {
      path: DEFAULT_PAGE,
      concurrency: LOAD_CONCURRENCY,
      rounds: LOAD_ROUNDS,
      page_bytes: page.bytes,
      bytes_per_row: Math.round(page.bytes / Math.max(1, page.rows)),
      p50_ms: pct(0.5),
      p95_ms: pct(0.95),
      max_ms: +lat.at(-1)!.toFixed(1),
      requests_per_s: Math.round((lat.length / wall) * 1000),
      target_p95_ms: 300,
    };
    console.log(JSON.stringify({ benchmark: "runs-api", database: h.provider, runs: N, target_ms: 300, results, load }, null, 2));
  } finally {
    await server.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Timed rounds of LOAD_CONCURRENCY simultaneous GETs of `url` (after one warm round), from a worker thread. */
function loadFromThread(url: string): Promise<{ lat: number[]; wall: number; page: { bytes: number; rows: number } }> {
  const code = `
    const { parentPort, workerData: w } = require("node:worker_threads");
    const one = async () => {
      const t = performance.now();
      const res = await fetch(w.url);
      const text = await res.text();
      if (!res.ok) throw new Error(w.url + ": HTTP " + res.status);
      return { ms: performance.now() - t, bytes: Buffer.byteLength(text), rows: JSON.parse(text).runs.length };
    };
    const round = () => Promise.all(Array.from({ length: w.concurrency }, one));
    (async () => {
      await round();
      const lat = [];
      let wall = 0, page = { bytes: 0, rows: 0 };
      for (let r = 0; r < w.rounds; r++) {
        const t = performance.now();
        const got = await round();
        wall += performance.now() - t;
        for (const g of got) lat.push(g.ms);
        page = { bytes: got[0].bytes, rows: got[0].rows };
      }
      parentPort.postMessage({ lat, wall, page });
    })().catch((e) => parentPort.postMessage({ error: e.message }));`;
  return new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: { url, concurrency: LOAD_CONCURRENCY, rounds: LOAD_ROUNDS } });
    w.once("message", (m: { error?: string; lat: number[]; wall: number; page: { bytes: number; rows: number } }) => {
      void w.terminate();
      if (m.error) reject(new Error(m.error));
      else resolve(m);
    });
    w.once("error", reject);
  });
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
