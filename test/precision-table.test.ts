/**
 * The stopping-rule table generator (server/qrag/bench/precision-table.ts): columns per file and
 * length, rows in the README's order, bold only where coverage ≥ 0.95 and F1 ≥ 0.90 both hold, the
 * ground-truth ceiling never bold, `FILE=label` columns, and a clear error for a file of another kind.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { precisionTable, readPrecisionArg, type PrecisionResult } from "../server/qrag/bench/precision-table.ts";

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
