/**
 * Benchmark: how long a cancel during training takes, from the dashboard's `POST
 * /api/runs/:id/cancel` to the run reading `cancelled` (issue 26, defect 3: 1.8–3.4 s once; goal
 * p95 ≤ 1 s). Starts the real server with its local worker on SQLite and on PostgreSQL, launches the
 * launch form's default preset (babilong-cpu) once per trial, waits until updates are being made,
 * then cancels at a random moment inside an iteration and polls the run every 10 ms. Prints JSON per
 * database: each trial's latency, p50/p95/max, the target.
 *
 *   npm run bench:cancel -- [--trials 20] [--db sqlite,postgres] [--preset babilong-cpu] [--set key=value …]
 */
import os from "node:os";
import { parseArgs } from "node:util";
import { startServer } from "../server/main.ts";
import type { RunDetailDto } from "../lib/contracts/index.ts";
import { startPostgres, tmpDir, uniqueDbName, waitFor } from "./platform-helpers.ts";

const { values: args } = parseArgs({
  options: { trials: { type: "string", default: "20" }, db: { type: "string", default: "sqlite,postgres" }, preset: { type: "string", default: "babilong-cpu" }, set: { type: "string", multiple: true, default: [] }, spread: { type: "string", default: "400" } },
});

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]);
};

async function call<T>(url: string, method: string, p: string, body?: unknown): Promise<T> {
  const r = await fetch(url + p, { method, headers: { "content-type": "application/json", origin: url }, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}

async function trials(databaseUrl: string | undefined, n: number): Promise<number[]> {
  const dataDir = tmpDir("qrag-bench-cancel-");
  const server = await startServer({ port: 0, dataDir, databaseUrl, next: false, spawnWorker: true, log: () => {} });
  const out: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const run = await call<RunDetailDto>(server.url, "POST", "/api/runs", { preset: args.preset, overrides: [`seed=${i + 1}`, ...args.set] });
      const get = () => call<RunDetailDto>(server.url, "GET", `/api/runs/${run.id}`);
      // past the first eval and a few updates in: training, not set-up or evaluation
      await waitFor("training updates", async () => {
        const r = await get();
        if (["failed", "completed", "cancelled"].includes(r.status)) throw new Error(`run ended ${r.status}: ${r.error ?? ""}`);
        return r.status === "running" && (r.progressDone ?? 0) >= 1;
      }, 120_000, 20);
      await new Promise((r) => setTimeout(r, Math.random() * Number(args.spread))); // land anywhere in an iteration
      const t0 = performance.now();
      await call(server.url, "POST", `/api/runs/${run.id}/cancel`);
      const end = await waitFor("cancelled", async () => {
        const r = await get();
        return ["cancelled", "failed", "completed"].includes(r.status) && r;
      }, 30_000, 10);
      if (end.status !== "cancelled") throw new Error(`trial ${i}: ended ${end.status}`);
      out.push(performance.now() - t0);
    }
  } finally {
    await server.close();
  }
  return out;
}

async function main() {
  const result: Record<string, unknown> = { date: new Date().toISOString(), preset: args.preset, overrides: args.set, machine: { cpus: os.cpus().length, loadAverage: os.loadavg().map((x) => Math.round(x * 100) / 100) }, targetP95Ms: 1000 };
  for (const db of args.db.split(",")) {
    let url: string | undefined;
    let stop = () => {};
    if (db === "postgres") {
      const pg = await startPostgres();
      if ("skip" in pg) throw new Error(pg.skip);
      url = await pg.createDatabase(uniqueDbName("bench_cancel"));
      stop = pg.stop;
    }
    try {
      const ms = await trials(url, Number(args.trials));
      result[db] = { trials: ms.length, p50Ms: pct(ms, 0.5), p95Ms: pct(ms, 0.95), maxMs: pct(ms, 1), ms: ms.map(Math.round) };
    } finally {
      stop();
    }
  }
  console.log(JSON.stringify(result, null, 2));
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
