/**
 * Benchmark: the server under a flood of deeply nested JSON bodies (issue 26, defect 1: 4 clients
 * sending 5,000 nested arrays to `POST /api/auth/login` for 15 s once pushed `/api/health` to p50
 * 3.1 s). Starts the real server (HTTP + API router; no Next, no worker) in this thread; a worker
 * thread runs the flood clients and probes `/api/health` every 20 ms, timing each probe from send
 * to body, so a blocked server shows in the probes and not in the prober. Prints JSON: the flood's
 * answers by status and the health probes' p50/p95/max (target p95 ≤ 50 ms).
 *
 *   tsx server/bench/nested-json.ts [--clients 4] [--seconds 15] [--depth 5000]
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { startServer } from "../main.ts";
import { configureEngine } from "../qrag/index.ts";
import { settings } from "../settings.ts";

const { values: args } = parseArgs({ options: { clients: { type: "string", default: "4" }, seconds: { type: "string", default: "15" }, depth: { type: "string", default: "5000" } } });

// the flood and the prober, in plain JavaScript for an eval'd worker
const FLOOD = `
const { parentPort, workerData: w } = require("node:worker_threads");
const body = JSON.stringify({ username: "a", password: "b" }).replace('"a"', "[".repeat(w.depth) + "]".repeat(w.depth));
const statuses = {};
const probes = [];
const end = Date.now() + w.seconds * 1000;
async function client() {
  while (Date.now() < end) {
    try {
      const r = await fetch(w.url + "/api/auth/login", { method: "POST", headers: { "content-type": "application/json", origin: w.url }, body });
      await r.arrayBuffer();
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    } catch { statuses.error = (statuses.error ?? 0) + 1; }
  }
}
async function prober() {
  while (Date.now() < end) {
    const t0 = performance.now();
    const r = await fetch(w.url + "/api/health");
    await r.arrayBuffer();
    probes.push(performance.now() - t0);
    await new Promise((res) => setTimeout(res, 20));
  }
}
Promise.all([prober(), ...Array.from({ length: w.clients }, client)])
  .then(() => parentPort.postMessage({ statuses, probes, bodyBytes: body.length }))
  .catch((e) => parentPort.postMessage({ error: String(e) }));
`;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))] * 10) / 10;
};

async function main() {
  configureEngine(settings().engine);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-bench-nested-"));
  const server = await startServer({ port: 0, dataDir, spawnWorker: false, next: false, log: () => {} });
  try {
    const workerData = { url: server.url, clients: Number(args.clients), seconds: Number(args.seconds), depth: Number(args.depth) };
    const m = await new Promise<{ error?: string; statuses: Record<string, number>; probes: number[]; bodyBytes: number }>((resolve, reject) => {
      const w = new Worker(FLOOD, { eval: true, workerData });
      w.once("message", (msg) => {
        void w.terminate();
        resolve(msg);
      });
      w.once("error", reject);
    });
    if (m.error) throw new Error(m.error);
    console.log(
      JSON.stringify(
        {
          date: new Date().toISOString(),
          machine: { cpus: os.cpus().length, loadAverage: os.loadavg().map((x) => Math.round(x * 100) / 100) },
          flood: { ...workerData, url: undefined, bodyBytes: m.bodyBytes, answers: m.statuses },
          health: { probes: m.probes.length, p50Ms: pct(m.probes, 0.5), p95Ms: pct(m.probes, 0.95), maxMs: pct(m.probes, 1) },
          targetP95Ms: 50,
        },
        null,
        2,
      ),
    );
  } finally {
    await server.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
