/**
 * The metric registry (lib/contracts/metrics.ts) is the one list of metric keys: the engine emits
 * exactly its keys, and the lists derived from it (panels, summary, import tags) say what it says.
 */
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { COMPARED_KEYS, METRIC_KEYS, METRICS, PANELS, REFERENCE_TAGS, SUMMARY_COLUMNS, SUMMARY_KEYS, metricKeysEmitted, metricKeySchema } from "../lib/contracts/index.ts";
import { METRIC_PANELS, METRIC_TITLES } from "../lib/metric-panels.ts";
import { metricKeyOfTag } from "../server/runs/import-reference.ts";

test("the engine emits exactly the registry's keys", () => {
  // the training loop and its modules (server/qrag/training/: train.ts, eval.ts, metrics.ts, …)
  const dir = new URL("../server/qrag/training/", import.meta.url);
  const src = fs.readdirSync(dir).filter((f) => f.endsWith(".ts")).map((f) => fs.readFileSync(new URL(f, dir), "utf8")).join("\n");
  const emitted = new Set([...src.matchAll(/\bmetric\("(\w+)"/g)].map((m) => m[1]));
  assert.deepEqual([...emitted].sort(), [...METRIC_KEYS].sort());
  assert.deepEqual(metricKeySchema.options, METRIC_KEYS);
  for (const when of ["update", "episodes", "eval", "webgpu"] as const) assert.ok(metricKeysEmitted(when).length > 0, when);
});

test("panels, titles, summary and import tags derive from the registry", () => {
  const charted = METRIC_KEYS.filter((k) => "chart" in METRICS[k]);
  assert.deepEqual(METRIC_PANELS.map((p) => p.id), PANELS.map((p) => p.id));
  assert.deepEqual(METRIC_PANELS.flatMap((p) => p.series.map((s) => s.key)).sort(), [...charted].sort(), "each charted key in one panel");
  for (const p of METRIC_PANELS) assert.ok(p.series.length > 0, `${p.id} has lines`);
  assert.deepEqual([...METRIC_TITLES.keys()].sort(), [...charted].sort());
  assert.equal(METRIC_TITLES.get("lr"), "Learning rate & α: lr");
  assert.equal(METRIC_TITLES.get("qf_loss"), "TD loss");
  for (const c of SUMMARY_COLUMNS) assert.ok(SUMMARY_KEYS.includes(c.key), c.key);
  for (const k of COMPARED_KEYS) assert.ok(charted.includes(k), `${k} is compared, so charted`);
  for (const [tag, key] of Object.entries(REFERENCE_TAGS)) assert.equal(metricKeyOfTag(tag), key);
  assert.equal(metricKeyOfTag("qf_loss"), "qf_loss");
  assert.equal(metricKeyOfTag("constructor"), null);
});
