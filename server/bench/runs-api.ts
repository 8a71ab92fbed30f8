/**
 * Benchmark: the runs API with 1,000 runs (target ≤ 300 ms). Starts the real server (Next
 * production build + socket.io, no worker) on a temporary database, inserts N finished runs
 * with realistic configs, tags and summaries, and times GET /api/runs through the server's API
 * router: the median of 20 requests after 3 warm-ups, for the whole table (limit=1000), the
 * default page, a search and a duration sort. Prints JSON.
 *
 *   npx next build && tsx server/bench/runs-api.ts [--runs 1000]   # SQLite in a temp folder
 *   DATABASE_URL=postgresql://… tsx server/bench/runs-api.ts         # an empty PostgreSQL database
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { resolveConfig } from "../qrag/index.ts";
import { getDb } from "../db/client.ts";
import { startServer } from "../main.ts";

const N = Number(parseArgs({ options: { runs: { type: "string", default: "1000" } } }).values.runs);
const REPS = 20;

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-bench-"));
  const server = await startServer({ port: 0, dataDir, spawnWorker: false, dev: false, log: () => {} });
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

    const time = async (p: string) => {
      const once = async () => {
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
    for (const p of ["/api/runs?limit=1000", "/api/runs", "/api/runs?q=qa3&tag=sweep&limit=1000", "/api/runs?sort=duration&limit=1000"]) results.push(await time(p));
    console.log(JSON.stringify({ benchmark: "runs-api", database: h.provider, runs: N, target_ms: 300, results }, null, 2));
  } finally {
    await server.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
