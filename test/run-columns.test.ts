/**
 * The runs table's columns and filter expressions (lib/contracts/run-columns.ts): parsing, the
 * errors that name the token that does not fit, and how a clause holds.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { clauseHolds, compareCells, parseColumns, parseFilter, type FilterClause } from "../lib/contracts/run-columns.ts";

test("columns: config keys (with or without config.) and last./best./min./max. of a metric; bad ones named", () => {
  const c = parseColumns("envs.task, config.algo.optimizer.lr ,best.eval_coverage,last.qf_loss,envs.task");
  assert.ok(!("error" in c));
  assert.deepEqual(c.map((x) => [x.key, x.kind]), [["envs.task", "config"], ["config.algo.optimizer.lr", "config"], ["best.eval_coverage", "metric"], ["last.qf_loss", "metric"]]);
  assert.deepEqual((c[1] as { path: string[] }).path, ["algo", "optimizer", "lr"]);
  assert.match((parseColumns("best.nonsense") as { error: string }).error, /unknown metric nonsense in best\.nonsense/);
  assert.match((parseColumns("envs task") as { error: string }).error, /"envs task" is not a column/);
  assert.match((parseColumns(Array.from({ length: 13 }, (_, i) => `k${i}`).join(",")) as { error: string }).error, /at most 12 columns/);
});

test("filters: clauses joined by and, numbers and quoted text; errors name the token and where it is", () => {
  const f = parseFilter('envs.task = qa2 and best.eval_coverage >= 0.9 AND name ~ "seed 1"');
  assert.ok(!("error" in f));
  assert.deepEqual(f.map((c) => [c.column.key, c.op, c.value]), [["envs.task", "=", "qa2"], ["best.eval_coverage", ">=", 0.9], ["name", "~", "seed 1"]]);
  const err = (s: string) => (parseFilter(s) as { error: string }).error;
  assert.equal(err("envs.task qa2"), 'expected an operator (= != >= <= > < ~) after envs.task, got "qa2" at character 11');
  assert.equal(err("envs.task = qa2 or seed = 1"), 'expected "and" at character 17, got "or"');
  assert.equal(err("best.eval_coverage >= high"), '>= needs a number, got "high" at character 23');
  assert.match(err("envs.task ="), /^expected a value after envs\.task =$/);
  assert.match(err('name = "open'), /unclosed quote at character 8/);
  assert.match(err("best.bogus > 1"), /unknown metric bogus .*\(character 1\)/);
  assert.match(err("x".repeat(501)), /at most 500 characters/);
});

test("a clause holds on numbers as numbers, text by equality or contains; a missing value never holds", () => {
  const c = (op: FilterClause["op"], value: string | number): FilterClause => ({ column: { kind: "config", key: "k", path: ["k"] }, op, value });
  assert.ok(clauseHolds(0.95, c(">=", 0.9)));
  assert.ok(!clauseHolds(0.85, c(">=", 0.9)));
  assert.deepEqual([">=", ">", "<=", "<", "=", "!="].map((op) => clauseHolds(0.9, c(op as FilterClause["op"], 0.9))), [true, false, true, false, true, false], "the boundary");
  assert.ok(clauseHolds("0.001", c("=", 0.001)), "a number held as text compares as a number");
  assert.ok(clauseHolds("qa2_two-supporting-facts", c("~", "QA2")));
  assert.ok(!clauseHolds("qa2", c("=", "qa1")));
  assert.ok(!clauseHolds(undefined, c("!=", "qa1")));
  assert.ok(!clauseHolds(null, c(">", 0)));
  assert.deepEqual([3, null, 1, "b", "a"].sort((a, b) => compareCells(a, b, "desc")), [3, 1, "b", "a", null], "numbers first, missing last");
});
