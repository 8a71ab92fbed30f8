/**
 * The learning bench's statistics on real (tiny) training runs: one run per seed, mean ± std of the
 * final held-out coverage and of the time to 0.95 across seeds, and a Wilson interval on every
 * sweep point; the sample policy gives ≥ 100 episodes up to 1M tokens and ≥ 30 at 10M.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { LEARNING_LENGTHS, acrossSeeds, benchLearning, learningSamples, seedSummary } from "../server/qrag/bench/learning.ts";
import { learningResults, learningTables, replaceBetweenMarkers } from "../server/qrag/bench/learning-table.ts";

const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-learning-"));
after(() => fs.rmSync(runsDir, { recursive: true, force: true }));

test("sample policy: ≥ 100 episodes per length up to 1M tokens, ≥ 30 at 10M", () => {
  // 40,000 chunks ≈ 1.34M tokens and 400,000 ≈ 13.4M (docs/operations.md, GPT-2 tokens)
  for (const n of LEARNING_LENGTHS) assert.ok(learningSamples(n) >= (n <= 40_000 ? 100 : 30), `${n} chunks: ${learningSamples(n)}`);
});

test("across seeds: mean and sample std of final coverage and of the time to 0.95; seeds that never reach it are counted apart", () => {
  const curve = (covs: number[]) => covs.map((coverage, i) => ({ update: i * 50, coverage, wall: i * 10 }));
  const runs = [seedSummary(1, curve([0.2, 0.96, 0.97])), seedSummary(2, curve([0.3, 0.5, 0.95, 0.99])), seedSummary(3, curve([0.1, 0.4, 0.9]))];
  assert.deepEqual(runs.map((r) => r.first95), [{ update: 50, seconds: 10 }, { update: 100, seconds: 20 }, null]);
  const a = acrossSeeds(runs);
  const finals = [0.97, 0.99, 0.9];
  const mean = finals.reduce((x, y) => x + y) / 3;
  const sd = Math.sqrt(finals.reduce((x, f) => x + (f - mean) ** 2, 0) / 2);
  assert.ok(Math.abs(a.finalCoverage.mean - mean) < 1e-12 && Math.abs(a.finalCoverage.sd - sd) < 1e-12, JSON.stringify(a.finalCoverage));
  assert.equal(a.reached95, 2);
  assert.deepEqual(a.secondsTo95, { mean: 15, sd: Math.SQRT2 * 5 });
  assert.deepEqual(a.updatesTo95, { mean: 75, sd: Math.SQRT2 * 25 });
});

test("two seeds of a tiny run: per-seed results, mean ± std across seeds, Wilson intervals on sweep points", async () => {
  const tasks = [{ task: "qa1" as const, preset: "tiny", steps: 4, budgetSeconds: 120, overrides: ["eval_interval=2", "eval_episodes=6"] }];
  const progress: { task: string; runs: { seed: number }[] }[][] = [];
  const onProgress = (p: Record<string, unknown>[]) => progress.push(structuredClone(p) as (typeof progress)[number]);
  const [r] = (await benchLearning(() => {}, { tasks, seeds: [3, 4], lengths: [20], samples: () => 5, runsDir, onProgress })) as {
    task: string;
    runs: { seed: number; sweep: { samples: number; qrag: { coverage: number }; coverage95: { low: number; high: number } | null }[] }[];
    acrossSeeds: { seeds: number; finalCoverage: { mean: number; sd: number } };
  }[];
  assert.equal(r.task, "qa1");
  assert.deepEqual(r.runs.map((x) => x.seed), [3, 4]);
  // every finished seed is reported as it lands (what the bench writes to its file as it goes)
  assert.deepEqual(progress.map((p) => p.map((t) => [t.task, t.runs.map((x) => x.seed)])), [[["qa1", [3]]], [["qa1", [3, 4]]]]);
  // the across-seed figures are those of each seed's own curve, read back from its run folder
  const finals = [3, 4].map((s) => {
    const lines = fs.readFileSync(path.join(runsDir, `bench-learning-qa1-seed${s}`, "metrics.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { key: string; value: number });
    return lines.filter((e) => e.key === "eval_coverage").at(-1)!.value;
  });
  const m = (finals[0] + finals[1]) / 2;
  assert.equal(r.acrossSeeds.seeds, 2);
  assert.ok(Math.abs(r.acrossSeeds.finalCoverage.mean - m) < 1e-12);
  assert.ok(Math.abs(r.acrossSeeds.finalCoverage.sd - Math.abs(finals[0] - finals[1]) / Math.SQRT2) < 1e-12);
  for (const run of r.runs) {
    const p = run.sweep[0];
    assert.equal(p.samples, 5);
    assert.ok(p.coverage95 && p.coverage95.low <= p.qrag.coverage && p.qrag.coverage <= p.coverage95.high, JSON.stringify(p.coverage95));
  }
});

test("README tables from bench JSON: across-seed training figures, per-length coverage mean (min–max), baselines, F1", () => {
  const point = (numChunks: number, cov: number, f1: number) => ({
    numChunks, label: "x", tokens: numChunks * 33, samples: numChunks > 1000 ? 100 : 200,
    qrag: { coverage: cov }, qragFiltered: { coverage: cov, f1 }, bm25: { coverage: 0.1 }, dense: { coverage: 0.3 },
  });
  const seedRun = (seed: number, cov: number, first95: { update: number; seconds: number } | null) => ({
    seed, updates: 600, trainSeconds: 120 + seed * 6, lastEval: { coverage: cov }, first95, sweep: [point(50, cov, 0.8), point(40_000, cov - 0.1, 0.7)],
  });
  const file = {
    learning: [
      { task: "qa2", preset: "babilong-cpu", runs: [seedRun(1, 0.96, { update: 500, seconds: 300 }), seedRun(2, 0.9, null)], acrossSeeds: acrossSeeds([
        { seed: 1, finalCoverage: 0.96, first95: { update: 500, seconds: 300 } }, { seed: 2, finalCoverage: 0.9, first95: null },
      ]) },
      { task: "qa1", preset: "babilong-cpu", ...seedRun(7, 1, { update: 250, seconds: 30 }) },
    ],
  };
  const md = learningTables(learningResults(file));
  const rows = md.split("\n");
  const qa2 = rows.find((r) => r.startsWith("| qa2 |"))!;
  // mean ± sample std of 0.96 and 0.90; one seed of two reached 0.95, at update 500 after 5 min
  assert.match(qa2, /\| 2 \| 600 \| 2\.15 \(2\.10–2\.20\) \| 0\.93 ± 0\.04 \| 1 of 2 \| 500 ± 0 \/ 5\.0 ± 0\.0 \|/);
  assert.match(rows.find((r) => r.startsWith("| qa1 |"))!, /\| 1 \| 600 \| 2\.70 \| 1\.00 \| 1 of 1 \| 250 \/ 0\.5 \|/);
  const cov = rows.findIndex((r) => r.startsWith("| Q-RAG coverage"));
  assert.equal(rows[cov], "| Q-RAG coverage: chunks (tokens), samples | qa2 | qa1 |");
  assert.equal(rows[cov + 2], "| 50 (1.6K), 200 | 0.93 (0.90–0.96) | 1.00 |");
  assert.equal(rows[cov + 3], "| 40,000 (1.32M), 100 | 0.83 (0.80–0.86) | 0.90 |");
  assert.ok(rows.includes("| 50 (1.6K), 200 | 0.10 / 0.30 | 0.10 / 0.30 |"), md);
  assert.ok(rows.includes("| 40,000 (1.32M), 100 | 0.70 (0.70–0.70) | 0.70 |"), md);
  assert.ok(!md.includes("prune"), "no prune table when no sweep recorded it");
  // sweeps that recorded Q > 0.5 + prune get its coverage / F1 table
  const pruned = structuredClone(file);
  for (const t of pruned.learning) for (const r of "runs" in t && t.runs ? t.runs : [t as { sweep: { qrag: { coverage: number } }[] }]) for (const p of r.sweep) Object.assign(p, { qragPruned: { coverage: p.qrag.coverage, f1: 0.95 } });
  const md2 = learningTables(learningResults(pruned)).split("\n");
  const at = md2.findIndex((r) => r.startsWith("| Q-RAG after Q > 0.5 + prune"));
  assert.ok(at > 0, md2.join("\n"));
  assert.equal(md2[at + 2], "| 50 (1.6K), 200 | 0.93 (0.90–0.96) / 0.95 (0.95–0.95) | 1.00 / 0.95 |");
});

test("README tables: a task trained with two presets (or --set overrides) gets one column per setup", () => {
  const run = (cov: number) => ({ seed: 1, updates: 600, trainSeconds: 60, lastEval: { coverage: cov }, first95: null,
    sweep: [{ numChunks: 50, label: "1K", tokens: 1650, samples: 200, qrag: { coverage: cov } }] });
  const md = learningTables(learningResults({ learning: [
    { task: "qa4", preset: "babilong-cpu", ...run(0.9) },
    { task: "qa4", preset: "babilong-qa4-cpu", ...run(1) },
    { task: "qa4", preset: "babilong-qa4-cpu", set: ["envs.step_size=100"], ...run(0.95) },
    { task: "qa5", preset: "babilong-cpu", ...run(0.8) },
  ] }));
  const rows = md.split("\n");
  const cov = rows.findIndex((r) => r.startsWith("| Q-RAG coverage"));
  assert.equal(rows[cov], "| Q-RAG coverage: chunks (tokens), samples | qa4 (babilong-cpu) | qa4 (babilong-qa4-cpu) | qa4 (babilong-qa4-cpu, envs.step_size=100) | qa5 |");
  assert.equal(rows[cov + 2], "| 50 (1.6K), 200 | 0.90 | 1.00 | 0.95 | 0.80 |");
  // the training table names the --set overrides beside the preset too
  assert.ok(rows.some((r) => r.startsWith("| qa4 | babilong-qa4-cpu, envs.step_size=100 | 1 | 600 |")), md);
});

test("README tables land between the learning-tables markers, the rest of the file untouched", () => {
  const doc = "# R\nbefore\n<!-- learning-tables:start -->\nold table\n<!-- learning-tables:end -->\nafter\n";
  assert.equal(replaceBetweenMarkers(doc, "| new |\n\n"), "# R\nbefore\n<!-- learning-tables:start -->\n| new |\n<!-- learning-tables:end -->\nafter\n");
  assert.throws(() => replaceBetweenMarkers("# R\n<!-- learning-tables:end -->\n<!-- learning-tables:start -->\n", "x"), /no "<!-- learning-tables:start -->" … "<!-- learning-tables:end -->" markers/);
});
