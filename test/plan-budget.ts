/**
 * The assertions both encoders' "no-grad plans" tests make on their forwardRows case
 * (recorded-encoder.test.ts, recorded-bert.test.ts): each plan's bytes within 1 % of the estimate
 * and never above it, and 100 rows under a budget of 40 run as forwards of 40, 40 and 20, each
 * recorded.
 */
import assert from "node:assert/strict";

export interface PlanBudgetResult {
  made: Record<string, [number, number]>;
  rows: number;
  calls: number[];
  recorded: number;
  finite: boolean;
  values: number;
}

/** `plans` plans measured; embeddings of `width` values a row. */
export function assertPlanBudget(r: PlanBudgetResult, plans: number, width: number): void {
  assert.equal(Object.keys(r.made).length, plans);
  for (const [k, [made, est]] of Object.entries(r.made)) assert.ok(made <= est && made >= 0.99 * est, `${k}: ${made} bytes made, ${est} estimated`);
  assert.equal(r.rows, 40);
  assert.deepEqual(r.calls, [40, 40, 20]);
  assert.equal(r.recorded, 3, "every sub-batch recorded, none through tfjs");
  assert.ok(r.finite && r.values === 100 * width, `${r.values} values`);
}
