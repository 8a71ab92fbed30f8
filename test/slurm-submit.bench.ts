/**
 * Benchmark (issue 29 item 5): how fast queued runs become Slurm jobs, and what the dashboard's
 * polling costs with a thousand of them. A real single-node Slurm (test/slurm-cluster.ts) whose
 * only node is drained, so every job stays PENDING: this measures the dashboard and Slurm's
 * commands, not training. The dashboard runs as its own process with QRAG_EXECUTOR=slurm at the
 * default poll interval (5 s).
 *   1. `--runs` runs (default 200) created over the API, 8 requests in flight: the time until
 *      every one has a job id, and squeue lists them all.
 *   2. more runs up to `--total` (default 1,000), then `--seconds` (30) of steady polling: the
 *      dashboard process's CPU share (from /proc), /api/health latency meanwhile, and the wall
 *      time of one `squeue` call for 200 job ids (the executor asks 200 ids per call).
 * Prints JSON.
 *
 *   npm run bench:slurm -- [--runs 200] [--total 1000] [--seconds 30]
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import type { RunDetailDto, RunListDto } from "../lib/contracts/index.ts";
import { api, startServer, waitHealthy, type Env, type Proc } from "./e2e-helpers.ts";
import { freePort, tmpDir, waitFor } from "./platform-helpers.ts";
import { startSlurmCluster } from "./slurm-cluster.ts";

const { values: args } = parseArgs({ options: { runs: { type: "string", default: "200" }, total: { type: "string", default: "1000" }, seconds: { type: "string", default: "30" } } });
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)] * 10) / 10;
};
/** user + system CPU seconds of a process so far. */
const cpuSeconds = (pid: number) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
};

async function createRuns(env: Env, n: number, from: number): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < n) {
      const i = from + next++;
      const r = await api<RunDetailDto>(env, "POST", "/api/runs", { preset: "tiny", name: `bench ${i}`, queue: "slurm" });
      if (r.status !== 201) throw new Error(`run ${i}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      ids.push(r.body.id);
    }
  }));
  return ids;
}

/** Runs of the slurm queue that have a job id (pages of 500). */
async function submitted(env: Env): Promise<number> {
  let n = 0;
  for (let offset = 0; ; offset += 500) {
    const page = (await api<RunListDto>(env, "GET", `/api/runs?queue=slurm&limit=500&offset=${offset}`)).body;
    n += page.runs.filter((r) => r.executor?.jobId).length;
    if (offset + 500 >= page.total) return n;
  }
}

async function main() {
  const cluster = await startSlurmCluster();
  let server: Proc | undefined;
  try {
    execFileSync("scontrol", ["update", `NodeName=${cluster.node}`, "State=DRAIN", "Reason=bench"], { env: cluster.env });
    const dataDir = tmpDir("qrag-bench-slurm-");
    const port = await freePort();
    const env: Env = { dbUrl: `file:${path.join(dataDir, "qrag.db")}`, dataDir, port, url: `http://127.0.0.1:${port}` };
    server = startServer(env, { worker: false, next: false, env: { SLURM_CONF: cluster.env.SLURM_CONF!, QRAG_EXECUTOR: "slurm", QRAG_SLURM_PARTITION: "debug", QRAG_SLURM_JOBS_DIR: path.join(cluster.jobsDir, "runs"), QRAG_SLURM_MEM_MB: "500" } });
    await waitHealthy(env, server);
    const runs = Number(args.runs), total = Number(args.total), seconds = Number(args.seconds);

    const t0 = performance.now();
    await createRuns(env, runs, 0);
    const created = performance.now() - t0;
    await waitFor(`${runs} runs submitted`, async () => (await submitted(env)) === runs, 600_000, 200);
    const allSubmitted = performance.now() - t0;
    const squeued = execFileSync("squeue", ["--noheader", "--states=PENDING", "--format=%i"], { env: cluster.env, encoding: "utf8" }).trim().split(/\s+/).filter(Boolean);

    await createRuns(env, total - runs, runs);
    await waitFor(`${total} runs submitted`, async () => (await submitted(env)) === total, 900_000, 500);
    const ids = execFileSync("squeue", ["--noheader", "--states=PENDING", "--format=%i"], { env: cluster.env, encoding: "utf8" }).trim().split(/\s+/).filter(Boolean);
    const squeueMs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      execFileSync("squeue", ["--noheader", "--states=all", `--jobs=${ids.slice(0, 200).join(",")}`, "--format=%i|%T|%r|%N|%M|%P"], { env: cluster.env, encoding: "utf8" });
      squeueMs.push(performance.now() - t);
    }
    const health: number[] = [];
    const cpu0 = cpuSeconds(server.pid);
    const w0 = performance.now();
    while (performance.now() - w0 < seconds * 1000) {
      const t = performance.now();
      await fetch(`${env.url}/api/health`);
      health.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 100));
    }
    const cpuShare = (cpuSeconds(server.pid) - cpu0) / ((performance.now() - w0) / 1000);
    console.log(JSON.stringify({
      date: new Date().toISOString(),
      machine: { cpus: os.cpus().length, loadAverage: os.loadavg().map((x) => Math.round(x * 100) / 100) },
      slurm: execFileSync("sinfo", ["--version"], { env: cluster.env, encoding: "utf8" }).trim(),
      submit: { runs, createMs: Math.round(created), allSubmittedMs: Math.round(allSubmitted), runsPerSecond: Math.round((runs / allSubmitted) * 1000 * 10) / 10, pendingInSqueue: squeued.length },
      polling: { jobs: ids.length, pollMs: 5000, seconds, dashboardCpuShare: Math.round(cpuShare * 1000) / 1000, healthP50Ms: pct(health, 0.5), healthP95Ms: pct(health, 0.95), squeue200IdsMs: { p50: pct(squeueMs, 0.5), max: pct(squeueMs, 1) } },
    }, null, 2));
  } finally {
    await server?.stop();
    await cluster.stop();
  }
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
