/**
 * The test tiers, in one place, and their runner. Every `test/*.test.ts` file belongs to exactly
 * one tier; a file in none (or in two, or a listed file that is gone) is an error here, before any
 * test runs, and in test/test-tiers.test.ts.
 *
 *   unit         in-process only: no child process, no listening server, no database, no browser
 *   integration  real servers (in-process or spawned), workers, SQLite/PostgreSQL, CLI child
 *                processes, crash trials, webgpu case processes
 *   e2e          a real Chromium (test/browser-*.test.ts) or the Next production build
 *
 * `tsx scripts/test-tier.ts unit [integration e2e]` runs the tiers named, one
 * `node --import tsx --test --test-concurrency=2` per tier with QRAG_WASM_THREADS=1, all of them even
 * when one fails, and exits non-zero when any failed. `--list TIER` prints a tier's files;
 * `--check` only checks the classification.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

export const ROOT = path.resolve(import.meta.dirname, "..");

export const TIERS = {
  unit: [
    "agent-formulas",
    "rollout-values",
    "learner-passes",
    "analysis",
    "babi-generate",
    "babi-oracle",
    "babi-parse",
    "sentences",
    "split-k",
    "grad-pack",
    "fused-steps",
    "phase-counters",
    "layer-tail",
    "shader-cache",
    "episode-groups",
    "lock-step-lengths",
    "babi-real-source",
    "babilong-official",
    "babilong",
    "bench-niah",
    "bench-workload",
    "checkpoint-shards",
    "cli-args",
    "compare-state",
    "config",
    "curriculum",
    "data-root",
    "dawn-poll",
    "encoders",
    "engine-settings",
    "env",
    "gpt2-tokens",
    "hf-bert",
    "host-profile",
    "import-cycles",
    "import-parse",
    "learning-bench",
    "leave-one-out",
    "metric-registry",
    "metrics-bm25",
    "model-ops",
    "niah-margins",
    "niah",
    "noise-pool",
    "token-csr",
    "partial-start",
    "precision-table",
    "process-lock",
    "qa-loaders",
    "paper-figures",
    "reader-pass",
    "llm-agent-format",
    "reader-scoring",
    "replay-view",
    "rng",
    "run-columns",
    "rotary",
    "stop-rules",
    "slurm-parse",
    "sweep-series",
    "test-tiers",
    "tfevents-read",
    "tfevents",
    "train",
    "ui-config-form",
    "ui-queue-form",
    "ui-smoothing",
    "ui-stream-merge",
    "ui-value-interval",
    "word-vectors",
    "wordpiece-ascii",
  ],
  integration: [
    "api-queues", // a spawned server with a Slurm queue whose commands are missing
    "api-dashboards", // in-process server, SQLite and PostgreSQL
    "api-import", // in-process server, CLI child process
    "api-router", // in-process server
    "api-playground", // in-process server, a tiny training, playground engine processes
    "backend-webgpu", // fresh node processes per backend
    "cli-sweep", // the qrag CLI as a child process
    "cli-user", // the user CLI as a child process, a server
    "crash-points", // spawned server and workers killed with -9
    "engine-device", // webgpu case processes
    "hot-loop-ceiling", // the dispatch-counts bench part as a child process on webgpu
    "engine-face", // probe child processes
    "episode-chunks", // in-process server
    "exit-with-parent", // child processes
    "fuzz-mutations", // in-process server
    "gpu-device", // bash and node child processes
    "platform-db", // SQLite and PostgreSQL
    "platform-realtime", // socket.io server on SQLite
    "reader-llama", // real llama.cpp inference (node-llama-cpp), a probe child process
    "reader-openai", // a local OpenAI-compatible HTTP server generating with the tiny GGUF model
    "reader-sweep", // a tiny training, real llama.cpp answers, the CLI as a child process against a local endpoint
    "llm-agent", // the agent on real llama.cpp inference and a local OpenAI-compatible endpoint, a tiny training
    "agent-jobs", // in-process server and its local worker: runAgent in the engine process on the tiny GGUF model
    "agent-upload", // in-process server, the agent against a local OpenAI-compatible endpoint (tiny GGUF)
    "recorded-bert", // webgpu case processes
    "recorded-encoder", // webgpu case processes
    "recorded-update", // webgpu case processes
    "runs-list", // in-process server
    "scale-out", // PostgreSQL, several nodes
    "security-auth", // in-process server
    "security-inputs", // in-process server
    "security-paths", // in-process server, child processes
    "security-same-origin", // in-process server
    "slurm-client", // a real single-node Slurm (munged, slurmctld, slurmd) and its commands
    "slurm-executor", // dashboards with QRAG_EXECUTOR=slurm on a real single-node Slurm (one on PostgreSQL): jobs, cancel, requeue, pre-emption, node failure
    "slurm-job-output", // job output files read by offset; mkfifo (a child process) makes its FIFO case
    "sweeps", // in-process server, SQLite and PostgreSQL
    "wasm-threads", // child processes with 1 and 2 threads
    "webgpu-fused", // webgpu case processes
    "webgpu-errors", // a webgpu case process
    "webgpu-memory", // webgpu case processes
    "worker-batcher", // socket.io server
    "worker-identity", // spawned server and workers
    "worker-run", // workers, engine child processes
  ],
  e2e: [
    "browser-auth",
    "browser-compare",
    "browser-compare-summary",
    "browser-dashboard",
    "browser-episode",
    "browser-playground",
    "browser-import",
    "browser-scale-out",
    "browser-paper-curves",
    "browser-slurm", // and a real single-node Slurm
    "browser-sweep",
    "browser-agent",
    "platform-e2e", // the Next production build behind a spawned server
  ],
} as const satisfies Record<string, readonly string[]>;

export type Tier = keyof typeof TIERS;
const TIER_NAMES = Object.keys(TIERS) as Tier[];

const fileOf = (name: string) => `test/${name}.test.ts`;

/** Problems with the classification: files in no tier, in two, or listed and missing. */
export function classificationProblems(root = ROOT): string[] {
  const onDisk = fs.readdirSync(path.join(root, "test")).filter((f) => f.endsWith(".test.ts")).map((f) => f.slice(0, -".test.ts".length));
  const tiersOf = new Map<string, Tier[]>();
  for (const tier of TIER_NAMES) for (const name of TIERS[tier]) tiersOf.set(name, [...(tiersOf.get(name) ?? []), tier]);
  const problems: string[] = [];
  for (const name of onDisk) if (!tiersOf.has(name)) problems.push(`${fileOf(name)} is in no tier: add it to unit, integration or e2e in scripts/test-tier.ts`);
  for (const [name, tiers] of tiersOf) {
    if (tiers.length > 1) problems.push(`${fileOf(name)} is in several tiers (${tiers.join(", ")})`);
    if (!onDisk.includes(name)) problems.push(`${fileOf(name)} is listed in the ${tiers[0]} tier but does not exist`);
  }
  return problems;
}

/**
 * Files started first in their tier. `node --test --test-concurrency=2` starts files in the order
 * given, so a long file listed late runs alone at the tier's end while the other lane idles; these
 * are the longest (each tier prints its slowest files at its end: keep this list in step).
 */
export const SLOW_FIRST: readonly string[] = ["slurm-executor", "crash-points", "scale-out", "browser-slurm", "platform-e2e", "browser-agent"];

/** A tier's files, its slowest first (SLOW_FIRST), then in the order listed. */
export const tierFiles = (tier: Tier): string[] => {
  const names: readonly string[] = TIERS[tier];
  const slow = SLOW_FIRST.filter((n) => names.includes(n));
  return [...slow, ...names.filter((n) => !slow.includes(n))].map(fileOf);
};

/** Prints a tier's `count` slowest files from the durations reporter's JSON (nothing if it is missing). */
function printSlowest(file: string, count = 6): void {
  let seconds: Record<string, number>;
  try {
    seconds = JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, number>;
  } catch {
    return;
  }
  const top = Object.entries(seconds).sort((a, b) => b[1] - a[1]).slice(0, count);
  console.log(`== slowest: ${top.map(([f, s]) => `${path.basename(f, ".test.ts")} ${s.toFixed(0)} s`).join(", ")}`);
}

function main(args: string[]): number {
  const problems = classificationProblems();
  if (problems.length) {
    for (const p of problems) console.error(`test tiers: ${p}`);
    return 2;
  }
  if (args[0] === "--check") return 0;
  if (args[0] === "--list") {
    const tier = args[1] as Tier;
    if (!TIER_NAMES.includes(tier)) return usage(`--list needs a tier (${TIER_NAMES.join(", ")})`);
    for (const f of tierFiles(tier)) console.log(f);
    return 0;
  }
  if (!args.length) return usage("name one or more tiers");
  const unknown = args.filter((a) => !TIER_NAMES.includes(a as Tier));
  if (unknown.length) return usage(`unknown tier ${unknown.map((a) => `"${a}"`).join(", ")}`);
  const failed: string[] = [];
  for (const tier of args as Tier[]) {
    const started = Date.now();
    console.log(`== test tier ${tier}: ${TIERS[tier].length} files`);
    // The usual reporter on stdout (TAP when piped: .ci/run counts its "# pass" lines), and the
    // per-file durations to a file.
    const durations = path.join(ROOT, "test-results", `durations-${tier}.json`);
    fs.mkdirSync(path.dirname(durations), { recursive: true });
    fs.rmSync(durations, { force: true });
    const reporters = [
      `--test-reporter=${process.stdout.isTTY ? "spec" : "tap"}`, "--test-reporter-destination=stdout",
      `--test-reporter=${path.join(ROOT, "scripts", "test-durations-reporter.mjs")}`, `--test-reporter-destination=${durations}`,
    ];
    const r = spawnSync(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=2", ...reporters, ...tierFiles(tier)], {
      cwd: ROOT,
      stdio: "inherit",
      env: { ...process.env, QRAG_WASM_THREADS: "1" },
    });
    const code = r.status ?? 1;
    printSlowest(durations);
    console.log(`== test tier ${tier}: ${code === 0 ? "passed" : `FAILED (${r.signal ?? `exit ${code}`})`} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    if (code !== 0) failed.push(tier);
  }
  if (failed.length) console.log(`== failed tiers: ${failed.join(", ")}`);
  return failed.length ? 1 : 0;
}

function usage(why: string): number {
  console.error(`test-tier: ${why}\nusage: tsx scripts/test-tier.ts TIER... | --list TIER | --check   (tiers: ${TIER_NAMES.join(", ")})`);
  return 2;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) process.exitCode = main(process.argv.slice(2));
