/**
 * Benchmark: the playground's answer for a ~10K-token document on the CPU (goal ≤ 1 s warm).
 * Starts the real server (API only: no Next, no worker) on a temporary data folder, trains a
 * checkpoint of each preset into its runs folder (the `tiny` preset as it is; `babilong-cpu`,
 * the launch form's default, cut to a few updates: its encoder and episode, not its quality, set
 * the time), and times POST /api/runs/:id/playground from send to parsed body: the first request
 * (cold: the engine process starts and loads the checkpoint) and REPS warm ones (median, max).
 * The document is a test sample of the run's own dataset with enough sentences for ~10K GPT-2
 * tokens. Writes bench-results/playground.json and the table in docs/benchmarks/playground.md.
 *
 *   npm run bench:playground   (tsx server/bench/playground.ts)
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { PlaygroundResultDto } from "../../lib/contracts/index.ts";
import { configureEngine, engineSettings, playgroundInput, playgroundSample, resolveConfig, wasmThreadsAuto, type RunConfig } from "../qrag/index.ts";
import { train } from "../qrag/runtime.ts";
import { settings } from "../settings.ts";
import { getDb } from "../db/client.ts";
import { startServer } from "../main.ts";

const REPS = 10;
const TARGET_TOKENS = 10_000;
const ROOT = path.resolve(import.meta.dirname, "..", "..");
const SETUPS: { preset: string; overrides: string[] }[] = [
  { preset: "tiny", overrides: [] },
  { preset: "babilong-cpu", overrides: ["steps_count=40", "eval_interval=20", "eval_episodes=4", "learning_start=16"] },
];

/** A test sample with ≈ TARGET_TOKENS tokens: the sentence count scaled once from a first try. */
function documentOf(config: RunConfig): { document: string; question: string; tokens: number; chunks: number } {
  const at = (n: number) => {
    const c = { ...config, envs: { ...config.envs, test_env: { ...(config.envs as { test_env?: object }).test_env, num_sentences: n } } } as RunConfig;
    const s = playgroundSample(c, 0);
    if (!s) throw new Error("no sample");
    const input = playgroundInput({ document: s.document, question: s.question });
    return { document: s.document, question: s.question, tokens: input.tokens, chunks: input.chunks.length };
  };
  const first = at(400);
  return at(Math.round((400 * TARGET_TOKENS) / first.tokens));
}

async function main() {
  configureEngine(settings().engine);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-bench-playground-"));
  const server = await startServer({ port: 0, dataDir, spawnWorker: false, next: false, log: () => {} });
  const results = [];
  try {
    const h = await getDb();
    for (const { preset, overrides } of SETUPS) {
      const config = resolveConfig({ preset, overrides });
      const runId = `bench-${preset}`;
      let ckpt: { update: number; step: number; path: string } | undefined;
      await train(config, { runDir: path.join(dataDir, "runs", runId), onEvent: (e) => void (e.type === "checkpoint" && e.best && (ckpt = e)) });
      if (!ckpt) throw new Error(`${preset}: no best checkpoint`);
      await h.prisma.run.create({ data: { id: runId, name: runId, status: "completed", config: JSON.stringify(config), preset, envName: config.envs.name, task: "qa" } });
      await h.prisma.checkpoint.create({ data: { runId, step: ckpt.step, update: ckpt.update, path: ckpt.path, best: true } });
      const doc = documentOf(config);
      const ask = async () => {
        const t0 = performance.now();
        const res = await fetch(`${server.url}/api/runs/${runId}/playground`, { method: "POST", headers: { "content-type": "application/json", origin: server.url }, body: JSON.stringify({ document: doc.document, question: doc.question }) });
        const body = (await res.json()) as PlaygroundResultDto;
        if (!res.ok) throw new Error(`${preset}: HTTP ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
        return { ms: performance.now() - t0, engine: body.ms.engine, warm: body.warm, steps: body.record.steps.length };
      };
      const cold = await ask();
      const warm = [];
      for (let i = 0; i < REPS; i++) warm.push(await ask());
      const sorted = warm.map((w) => w.ms).sort((a, b) => a - b);
      const r = (x: number) => Math.round(x);
      results.push({
        preset, encoder: config.algo.encoder.type, tokens: doc.tokens, chunks: doc.chunks, steps: cold.steps,
        coldMs: r(cold.ms), warmMedianMs: r(sorted[Math.floor(sorted.length / 2)]), warmMaxMs: r(sorted.at(-1)!),
        warmEngineMedianMs: r(warm.map((w) => w.engine).sort((a, b) => a - b)[Math.floor(REPS / 2)]), allWarm: warm.every((w) => w.warm),
      });
      console.error(JSON.stringify(results.at(-1)));
    }
  } finally {
    await server.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  const out = {
    bench: "playground", date: new Date().toISOString(), cpus: os.cpus().length, cpu: os.cpus()[0]?.model ?? "?",
    wasmThreads: engineSettings().wasmThreads ?? `auto (${wasmThreadsAuto()})`, reps: REPS, goalWarmMs: 1000, results,
  };
  fs.mkdirSync(path.join(ROOT, "bench-results"), { recursive: true });
  fs.writeFileSync(path.join(ROOT, "bench-results", "playground.json"), JSON.stringify(out, null, 2) + "\n");
  fs.writeFileSync(path.join(ROOT, "docs", "benchmarks", "playground.md"), markdown(out));
  console.log(JSON.stringify(out, null, 2));
}

function markdown(o: { date: string; cpus: number; cpu: string; wasmThreads: unknown; reps: number; results: { preset: string; encoder: string; tokens: number; chunks: number; steps: number; coldMs: number; warmMedianMs: number; warmMaxMs: number; warmEngineMedianMs: number }[] }): string {
  const rows = o.results.map((r) => `| ${r.preset} | ${r.encoder} | ${r.tokens.toLocaleString("en")} | ${r.chunks} | ${r.steps} | ${r.coldMs} | ${r.warmMedianMs} | ${r.warmMaxMs} | ${r.warmEngineMedianMs} |`);
  return [
    "# Playground latency",
    "",
    "The playground (`/playground`, `POST /api/runs/:id/playground`) answers a greedy episode of a run's",
    "checkpoint over a pasted document from an engine process the dashboard forks per checkpoint and keeps",
    "warm (`server/playground/pool.ts`). Goal: ≤ 1 s warm for a 10K-token document on the CPU.",
    "",
    "Written by `npm run bench:playground` (from `bench-results/playground.json`; do not edit by hand).",
    `Measured ${o.date.slice(0, 10)} on ${o.cpus} CPU cores (${o.cpu}), wasm threads ${o.wasmThreads}; times in ms from`,
    `request to parsed answer through the real server; warm: median and max of ${o.reps}; engine: the episode alone in the engine process`,
    "(embedding every chunk, the steps to max_steps, leave-one-out Q).",
    "",
    "| preset | encoder | tokens | chunks | steps | cold | warm median | warm max | warm engine median |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ...rows,
    "",
  ].join("\n");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
