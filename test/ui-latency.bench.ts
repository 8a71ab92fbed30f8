/**
 * UI latency benchmark: worker event → TD-loss chart painted in the browser, with N runs
 * streaming at once (default 5, one worker each: the server's local worker plus N−1 more).
 *
 *   node --import tsx test/ui-latency.bench.ts [--runs 5] [--pages 1] [--seconds 45] [--warmup 8]
 *
 * How it is measured (one machine, one clock):
 * - Emission: the engine stamps every metric with `wall` = seconds since its own start, and its
 *   run_start event carries that start as `meta.startedAt`; emitted-at = startedAt + wall.
 * - Paint: the run page's chart exposes data-points; a MutationObserver in the page sees the count
 *   change in the DOM commit, then waits for the next animation frame plus one task (the frame
 *   has been painted by then) and records the time.
 * - Which points a paint shows: a Node socket.io subscriber on /ui receives the same batches, so
 *   the k-th TD-loss point of the run is known with its seq and wall. Only points that arrive
 *   live are counted (seq above the lastSeq of the page's REST load).
 * - The same subscriber's receive time splits the total into pipeline (engine → worker batch ≤
 *   BATCH_MS → server commit → socket) and browser (socket → React Query cache → Recharts → paint).
 * Results go to stdout and bench-results/ui-latency.json.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { io } from "socket.io-client";
import type { EngineEvent, RunBatchMsg, RunDto } from "../lib/contracts/index.ts";
import { BATCH_MS } from "../lib/contracts/index.ts";
import { ROOT, browserUnavailable, ensureNextBuild, launchBrowser, startTestServer } from "./ui-browser-helpers.ts";
import { waitFor } from "./platform-helpers.ts";

const { values: args } = parseArgs({
  options: {
    runs: { type: "string", default: "5" },
    pages: { type: "string", default: "1" },
    seconds: { type: "string", default: "45" },
    warmup: { type: "string", default: "8" },
  },
});
const RUNS = Number(args.runs);
const PAGES = Math.min(Number(args.pages), RUNS);
const SECONDS = Number(args.seconds);
const WARMUP = Number(args.warmup);

interface PointInfo {
  seq: number;
  wall: number;
  recvAt: number;
}
interface Paint {
  n: number;
  t: number;
}

const pct = (xs: number[], p: number) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const stats = (xs: number[]) => ({ n: xs.length, p50: pct(xs, 50), p95: pct(xs, 95), p99: pct(xs, 99), max: xs.length ? Math.max(...xs) : NaN, mean: xs.reduce((a, b) => a + b, 0) / (xs.length || 1) });
const round = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Math.round(v * 10) / 10]));

/** Installed before any page script (plain JS, so no transpiler helpers reach the page):
 *  records (points, painted-at) whenever the TD-loss chart's data-points changes. */
const PAGE_PROBE = `
(() => {
  window.__paints = [];
  const record = (el) => {
    const n = Number(el.getAttribute("data-points"));
    requestAnimationFrame(() => {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => window.__paints.push({ n, t: performance.timeOrigin + performance.now() });
      ch.port2.postMessage(0);
    });
  };
  const SEL = '[data-testid="chart-qf_loss"]';
  const obs = new MutationObserver((muts) => {
    for (const m of muts) {
      if (m.type === "attributes" && m.target.matches && m.target.matches(SEL)) record(m.target);
      if (m.type === "childList") {
        for (const node of m.addedNodes) {
          if (!(node instanceof Element)) continue;
          const el = node.matches(SEL) ? node : node.querySelector(SEL);
          if (el) record(el);
        }
      }
    }
  });
  obs.observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-points"] });
})();
`;

async function main() {
  const why = browserUnavailable();
  if (why) throw new Error(why);
  ensureNextBuild((m) => console.error(m));
  const server = await startTestServer();
  const extra: ChildProcess[] = [];
  const browser = await launchBrowser();
  const api = async <T>(p: string, body?: unknown): Promise<T> => {
    const r = await fetch(`${server.url}${p}`, body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    if (!r.ok) throw new Error(`${p}: HTTP ${r.status} ${await r.text()}`);
    return (await r.json()) as T;
  };
  try {
    for (let i = 1; i < RUNS; i++) {
      const c = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "server", "worker", "main.ts"), "--url", server.url, "--token", server.workerToken, "--name", `bench-${i}`, "--data-dir", path.join(server.dataDir, `w${i}`)], {
        cwd: ROOT,
        stdio: "ignore",
        // five trainers share the machine's cores: one wasm thread each, as before
        env: { ...process.env, QRAG_WASM_THREADS: process.env.QRAG_WASM_THREADS ?? "1" },
      });
      extra.push(c);
    }
    await waitFor(`${RUNS} workers`, async () => (await api<{ status: string }[]>("/api/workers")).filter((w) => w.status !== "offline").length >= RUNS, 90_000);

    // a Node subscriber on /ui: every run's TD-loss points with their seq, wall and arrival time
    const points = new Map<string, PointInfo[]>();
    const engineStart = new Map<string, number>();
    const sock = io(`${server.url}/ui`, { transports: ["websocket"] });
    sock.on("run:batch", (b: RunBatchMsg) => {
      const now = Date.now();
      const list = points.get(b.runId) ?? [];
      points.set(b.runId, list);
      for (const e of b.events as EngineEvent[]) {
        if (e.type === "run_start") engineStart.set(b.runId, Date.parse(e.meta.startedAt));
        if (e.type === "metric" && e.key === "qf_loss") list.push({ seq: b.seq, wall: e.wall, recvAt: now });
      }
    });
    await new Promise<void>((r) => sock.once("connect", () => r()));

    const runs: RunDto[] = [];
    for (let i = 0; i < RUNS; i++) {
      const run = await api<RunDto>("/api/runs", { preset: "tiny", name: `latency-${i}`, overrides: ["steps_count=200000", "eval_interval=1000"], tags: ["bench"] });
      runs.push(run);
      sock.emit("subscribe", { runId: run.id, afterSeq: 0 });
    }
    await waitFor("all runs streaming", async () => runs.every((r) => (points.get(r.id)?.length ?? 0) > 0), 120_000);

    // the run pages; the REST metrics response tells which points the page loaded (not streamed)
    const pages = await Promise.all(
      runs.slice(0, PAGES).map(async (run) => {
        const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
        await page.addInitScript({ content: PAGE_PROBE });
        const rest = { lastSeq: -1, count: -1 };
        page.on("response", async (r) => {
          if (!r.url().includes(`/api/runs/${run.id}/metrics`)) return;
          const body = (await r.json()) as { lastSeq: number; series: Record<string, unknown[]> };
          if (rest.lastSeq < 0) Object.assign(rest, { lastSeq: body.lastSeq, count: body.series.qf_loss?.length ?? 0 });
        });
        await page.goto(`${server.url}/runs/${run.id}`);
        await page.locator('[data-testid="chart-qf_loss"] .recharts-line-curve').first().waitFor({ timeout: 60_000 });
        return { run, page, rest };
      }),
    );
    console.error(`warming up ${WARMUP}s, then measuring ${SECONDS}s with ${RUNS} runs streaming and ${PAGES} run page(s) open`);
    await new Promise((r) => setTimeout(r, WARMUP * 1000));
    const from = Date.now();
    await new Promise((r) => setTimeout(r, SECONDS * 1000));
    const until = Date.now();

    const total: number[] = [];
    const browserPart: number[] = [];
    const pipeline: number[] = [];
    let streamedPoints = 0;
    for (const { run, page, rest } of pages) {
      const paints = (await page.evaluate(() => (window as unknown as { __paints: Paint[] }).__paints)) as Paint[];
      const list = points.get(run.id) ?? [];
      const start = engineStart.get(run.id);
      if (start === undefined) throw new Error(`no run_start seen for ${run.id}`);
      const loaded = list.filter((p) => p.seq <= rest.lastSeq).length;
      if (loaded !== rest.count) throw new Error(`run ${run.id}: the page loaded ${rest.count} TD-loss points over REST but ${loaded} have seq ≤ ${rest.lastSeq}`);
      let shown = rest.count;
      for (const p of paints) {
        if (p.n <= shown) continue;
        for (let k = shown; k < p.n && k < list.length; k++) {
          const pt = list[k];
          const emitted = start + pt.wall * 1000;
          if (p.t < from || p.t > until) continue;
          total.push(p.t - emitted);
          browserPart.push(p.t - pt.recvAt);
          pipeline.push(pt.recvAt - emitted);
          streamedPoints++;
        }
        shown = p.n;
      }
    }
    const result = {
      date: new Date().toISOString(),
      runs: RUNS,
      pagesOpen: PAGES,
      seconds: SECONDS,
      batchMs: BATCH_MS,
      cpus: (await import("node:os")).cpus().length,
      pointsMeasured: streamedPoints,
      totalMs: round(stats(total)),
      pipelineMs: round(stats(pipeline)),
      browserMs: round(stats(browserPart)),
      targetP95Ms: 250,
    };
    console.log(JSON.stringify(result, null, 2));
    fs.mkdirSync(path.join(ROOT, "bench-results"), { recursive: true });
    fs.writeFileSync(path.join(ROOT, "bench-results", "ui-latency.json"), JSON.stringify(result, null, 2) + "\n");
    for (const r of runs) await api(`/api/runs/${r.id}/cancel`, {}).catch(() => undefined);
    sock.close();
  } finally {
    await browser.close();
    for (const c of extra) if (c.exitCode === null) c.kill("SIGTERM");
    await Promise.all(extra.map((c) => (c.exitCode === null ? new Promise((r) => c.once("exit", r)) : null)));
    await server.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
