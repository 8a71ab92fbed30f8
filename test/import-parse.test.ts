/**
 * The import parsers on their own: the reference's eval_seed lines (fixture shaped like
 * eval_retriever.py's output, docs/method.md §4.3) become EpisodeRecords with derived scores;
 * malformed lines name the file, line and field without echoing the file's contents; our own
 * metrics/config files read back.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { episodeRecordSchema, importFileKind, retrievalMetrics } from "../lib/contracts/index.ts";
import { ImportFileError } from "../server/runs/import-errors.ts";
import { parseConfigYaml, parseMetricsCsv, parseMetricsJson } from "../server/runs/import-exported.ts";
import { metricKeyOfTag, parseEvalSeed } from "../server/runs/import-reference.ts";
import { resolveConfig } from "../server/qrag/index.ts";
import YAML from "yaml";

const FIXTURES = path.join(import.meta.dirname, "fixtures", "reference-run");
const fixture = (name: string) => fs.readFileSync(path.join(FIXTURES, name), "utf8");

/** The error message of `fn`, asserting it is an ImportFileError. */
function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ImportFileError, `expected an ImportFileError, got ${String(e)}`);
    return e.message;
  }
  assert.fail("did not throw");
}

test("eval_seed lines: reference fields kept, scores derived from sf_idx/pred_idx, steps rebuilt", () => {
  const eps = parseEvalSeed("eval_seed1_ns50.jsonl", "eval_seed1_ns50.jsonl", fixture("eval_seed1_ns50.jsonl"));
  assert.equal(eps.length, 3);
  for (const e of eps) assert.ok(episodeRecordSchema.safeParse(e.record).success, "a valid EpisodeRecord");
  const [a, b, c] = eps.map((e) => e.record);
  assert.deepEqual([eps[0].sampleId, eps[0].numChunks, eps[0].phase, eps[0].line], ["0", 50, "eval", 1]);
  assert.deepEqual(a.pred_idx, [12, 40]);
  assert.deepEqual(a.metrics, { precision: 0.5, recall: 1, f1: 2 / 3, coverage: 1 });
  // Q > 0.5 keeps the first pick only
  assert.deepEqual(a.filtered, { precision: 1, recall: 1, f1: 1, coverage: 1, threshold: 0.5, kept: 1 });
  assert.equal(a.oracle_stop, false, "coverage was complete before the last pick");
  assert.equal(b.oracle_stop, true, "the last pick completed the gold set");
  assert.deepEqual(b.filtered.kept, 2);
  assert.deepEqual(c.metrics, retrievalMetrics([22, 45, 9], [3, 22]));
  assert.equal(c.return, -0.2);
  assert.equal(c.text_len, 1695);
  assert.deepEqual(c.steps.map((s) => [s.index, s.text, s.q, s.gold]), [
    [22, "Sandra travelled to the kitchen.", 0.7765, true],
    [45, "We must act now.", 0.3812, false],
    [9, "It is a time of trial.", 0.1104, false],
  ]);
});

test("a malformed eval_seed line names file, line and field, and echoes nothing of the file", () => {
  const lines = fixture("eval_seed1_ns50.jsonl").trim().split("\n");
  const secret = "SECRET-CONTENT-42";
  const withLine = (i: number, patch: (o: Record<string, unknown>) => void) => {
    const copy = [...lines];
    const o = JSON.parse(copy[i]);
    patch(o);
    copy[i] = JSON.stringify(o);
    return copy.join("\n");
  };
  const f = "run/eval_seed1_ns50.jsonl";
  const parse = (text: string) => () => parseEvalSeed(f, "eval_seed1_ns50.jsonl", text);
  let m = errorOf(parse(withLine(1, (o) => ((o.pred_idx as unknown[])[1] = secret))));
  assert.equal(m, "run/eval_seed1_ns50.jsonl line 2: pred_idx: expected array of integers");
  m = errorOf(parse(withLine(2, (o) => (o.q_values = [0.1]))));
  assert.equal(m, "run/eval_seed1_ns50.jsonl line 3: q_values: expected as many items as pred_idx");
  m = errorOf(parse(withLine(0, (o) => (o.question = { text: secret }))));
  assert.equal(m, "run/eval_seed1_ns50.jsonl line 1: question: expected string");
  m = errorOf(parse(withLine(0, (o) => delete o.return)));
  assert.equal(m, "run/eval_seed1_ns50.jsonl line 1: return: missing");
  m = errorOf(parse(withLine(0, (o) => delete o.sf_idx)));
  assert.equal(m, "run/eval_seed1_ns50.jsonl line 1: sf_idx: missing");
  m = errorOf(parse(withLine(0, (o) => (o.return = "1"))));
  assert.equal(m, "run/eval_seed1_ns50.jsonl line 1: return: expected number", "a wrong type is not called missing");
  m = errorOf(parse([lines[0], `{"id": 1, "question": "${secret}`].join("\n")));
  assert.equal(m, "run/eval_seed1_ns50.jsonl line 2: not valid JSON");
  // blank lines are skipped but still counted
  m = errorOf(parse([lines[0], "", `[${JSON.stringify(secret)}]`].join("\n")));
  assert.equal(m, "run/eval_seed1_ns50.jsonl line 3: expected object");
});

test("file kinds by name: reference outputs, our export's names, and everything else ignored", () => {
  const kinds = ["eval_seed3_ns4600.jsonl", "eval_seed1.jsonl", "tb_logs/events.out.tfevents.1700000000.gpu1", "my_run-abc123-metrics.csv", "my_run-abc123-metrics.json",
    "metrics.jsonl", "x-episodes.jsonl", "config.yaml", "model_last.pt", "results_llama.json", "llama_eval_seed1.jsonl"].map(importFileKind);
  assert.deepEqual(kinds, ["eval_seed", "eval_seed", "tfevents", "metrics.csv", "metrics.json", "metrics.jsonl", "episodes.jsonl", "config.yaml", null, null, null]);
});

test("reference TensorBoard tags map to our metric keys; our own keys pass through; others are unmapped", () => {
  assert.deepEqual(["qf_loss", "train r_sum", "eval r_sum", "eval_coverage", "loss/td", "lr"].map(metricKeyOfTag), ["qf_loss", "train_return", "eval_return", "eval_coverage", null, "lr"]);
});

test("metrics CSV/JSON: rows read back; a bad row names file, line/item and field", () => {
  const csv = "key,step,update,wall,value\nqf_loss,40,1,0.4,0.5\neval_return,40,1,0.41,-0.25\n";
  assert.deepEqual(parseMetricsCsv("m-metrics.csv", csv), [
    { key: "qf_loss", step: 40, update: 1, wall: 0.4, value: 0.5 },
    { key: "eval_return", step: 40, update: 1, wall: 0.41, value: -0.25 },
  ]);
  assert.equal(errorOf(() => parseMetricsCsv("m-metrics.csv", csv + "qf_loss,80,2,0.8,SECRET\n")), "m-metrics.csv line 4: value: expected number");
  assert.equal(errorOf(() => parseMetricsCsv("m-metrics.csv", csv + "nope,80,2,0.8,1\n")), 'm-metrics.csv line 4: key: expected one of "qf_loss", "train_return", "eval_return", "eval_coverage", "eval_f1", "eval_precision", "eval_recall", "eval_steps", "alpha", "lr", "grad_norm", "transitions_per_s", "updates_per_s", "rollout_s", "update_s", "gpu_memory_mb", "gpu_memory_live_mb", "gpu_memory_peak_mb", "gpu_memory_plans_mb"');
  assert.equal(errorOf(() => parseMetricsCsv("m-metrics.csv", "key,step,value\n")), "m-metrics.csv line 1: update: missing column (expected key,step,update,wall,value)");
  assert.equal(errorOf(() => parseMetricsJson("m-metrics.json", JSON.stringify([{ key: "lr", step: 1.5, update: 0, wall: 0, value: 1 }]))), "m-metrics.json item 1: step: expected an integer");
});

test("config.yaml: ours validates (env and task named); a foreign one is kept as read; bad YAML names the line only", () => {
  const tiny = resolveConfig({ preset: "tiny" });
  const ours = parseConfigYaml("c-config.yaml", YAML.stringify(tiny));
  assert.deepEqual([ours.envName, ours.task], ["babilong", "qa1"]);
  assert.deepEqual(ours.config, tiny);
  const foreign = parseConfigYaml("config.yaml", "envs:\n  name: babilong\n  task: qa2\nalgo:\n  name: pqn\nsteps_count: 9000\n");
  assert.deepEqual([foreign.envName, foreign.task], ["babilong", "qa2"]);
  assert.equal((foreign.config as { steps_count: number }).steps_count, 9000);
  assert.equal(errorOf(() => parseConfigYaml("config.yaml", "a: 1\nb: [SECRET\n")), "config.yaml line 3: not valid YAML");
  assert.equal(errorOf(() => parseConfigYaml("config.yaml", "- SECRET\n")), "config.yaml: expected a mapping of config keys");
});
