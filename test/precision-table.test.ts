/**
 * The stopping-rule table generator (server/qrag/bench/precision-table.ts): columns per file and
 * length, rows in docs/benchmarks/precision.md's order, bold only where coverage ≥ 0.95 and F1 ≥ 0.90 both hold, the
 * ground-truth ceiling never bold, `FILE=label` columns, and a clear error for a file of another kind.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { precisionAcrossSeeds, precisionTable, readPrecisionArg, type PrecisionResult } from "../server/qrag/bench/precision-table.ts";

const length = (numChunks: number, tokens: number, paper: [number, number], calibrated: [number, number]) => ({
  numChunks, tokens, samples: 100,
  rules: [
    { name: "calibrated-q-threshold", coverage: calibrated[0], f1: calibrated[1] },
    { name: "paper", coverage: paper[0], f1: paper[1] },
  ],
  oraclePrefix: { coverage: 1, f1: 0.97 },
});

test("precision table: coverage / F1 per task and length, the goal in bold, the ceiling labelled", () => {
  const qa4: PrecisionResult = { task: "qa4", lengths: [length(50, 1671, [0.8, 0.8], [0.97, 0.68]), length(40000, 1336740, [0.95, 0.9], [0.949, 0.95])] };
  const rows = precisionTable([{ label: "qa4", result: qa4 }, { label: "qa4+bigrams", result: { task: "qa4", lengths: [length(1200, 40102, [1, 0.899], [1, 0.96])] } }]).split("\n");
  assert.equal(rows[0], "| rule (coverage / F1) | qa4 1.7K | qa4 1.3M | qa4+bigrams 40K |");
  // the paper's rule first (the baseline), whatever order the file has; rules in no file are left out
  assert.equal(rows[2], "| Q > 0.5, the paper's rule (baseline) | .80 / .80 | **.95 / .90** | 1.00 / .90 |");
  assert.equal(rows[3], "| Q-threshold, calibrated | .97 / .68 | .95 / .95 | **1.00 / .96** |");
  assert.equal(rows.length, 5);
  assert.equal(rows[4], "| *best prefix with ground truth (a ceiling, not a rule)* | 1.00 / .97 | 1.00 / .97 | 1.00 / .97 |");
});

test("precision table: FILE=label names the columns; a file of another kind is refused by name", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-ptable-"));
  const good = path.join(dir, "precision-qa4-run.json"), bad = path.join(dir, "learning.json");
  fs.writeFileSync(good, JSON.stringify({ task: "qa4", lengths: [length(50, 1671, [1, 1], [1, 1])] }));
  fs.writeFileSync(bad, JSON.stringify({ learning: [] }));
  assert.equal(readPrecisionArg(good).label, "qa4");
  assert.equal(readPrecisionArg(`${good}=qa4 bigrams`).label, "qa4 bigrams");
  assert.throws(() => readPrecisionArg(bad), (e: Error) => e.message === `${bad}: not a precision bench result (no task / lengths)`);
});

test("precision table across seeds: mean ± sample std per rule and length, seeds meeting both goals counted, mismatches refused", () => {
  const seed = (tokens: [number, number], paper: [number, number], calibrated: [number, number]): PrecisionResult => ({
    task: "qa2",
    lengths: [length(50, tokens[0], paper, calibrated), length(40000, tokens[1], paper, calibrated)],
  });
  const files = [
    { label: "s1", result: seed([1641, 1313000], [0.8, 0.8], [0.96, 0.92]) },
    { label: "s2", result: seed([1700, 1320000], [0.9, 0.7], [0.94, 0.98]) },
    { label: "s3", result: seed([1650, 1310000], [0.85, 0.9], [0.98, 0.9]) },
  ];
  const rows = precisionAcrossSeeds(files, "rule, seeds 1–3").split("\n");
  assert.equal(rows[0], "| rule, seeds 1–3 | 1.6–1.7K tokens | 1.3M tokens | seeds with coverage ≥ 0.95 and F1 ≥ 0.90 (of 3, per length) |");
  // coverage 0.8, 0.9, 0.85 → mean 0.85, sample std 0.05; F1 0.8, 0.7, 0.9 → 0.80 ± 0.10
  assert.equal(rows[2], "| Q > 0.5, the paper's rule (baseline) | 0.85 ± 0.05 / 0.80 ± 0.10 | 0.85 ± 0.05 / 0.80 ± 0.10 | 0 / 0 |");
  // s1 (0.96 / 0.92) and s3 (0.98 / 0.90) meet both goals, s2 misses coverage
  assert.equal(rows[3], "| Q-threshold, calibrated | 0.96 ± 0.02 / 0.93 ± 0.04 | 0.96 ± 0.02 / 0.93 ± 0.04 | 2 / 2 |");
  assert.equal(rows[4], "| *best prefix with ground truth (a ceiling)* | 1.00 ± 0.00 / 0.97 ± 0.00 | 1.00 ± 0.00 / 0.97 ± 0.00 | – |");
  assert.equal(rows.length, 5);
  // a rule one file lacks is left out, not averaged over fewer seeds
  const older = { label: "s0", result: { task: "qa2", lengths: files[0].result.lengths.map((l) => ({ ...l, rules: l.rules.filter((r) => r.name === "paper") })) } };
  assert.ok(!precisionAcrossSeeds([...files, older], "x").includes("Q-threshold, calibrated"));
  const otherSizes = { label: "s4", result: { task: "qa2", lengths: files[0].result.lengths.slice(0, 1) } };
  assert.throws(() => precisionAcrossSeeds([files[0], otherSizes], "x"), (e: Error) => e.message === "s4: haystack sizes 50, not 50,40000 as s1");
  assert.throws(() => precisionAcrossSeeds([files[0], { label: "q", result: { ...files[1].result, task: "qa4" } }], "x"), (e: Error) => e.message === "q: task qa4, not qa2 as s1");
});
