import { test } from "node:test";
import assert from "node:assert/strict";
import { passesAgainstOnePass, threeUpdates } from "./learner-passes-helpers.ts";

test("pass_batch_size: the update in passes of 3 (3 + 3 + 1 transitions) equals the one-pass update: losses and weights after three updates", async () => {
  const r = await passesAgainstOnePass(3);
  assert.ok(r.lossDiff <= 1e-5, `loss differs by ${r.lossDiff} (relative)`);
  assert.ok(r.weightDiff <= 1e-5, `largest weight difference ${r.weightDiff}`);
  // the comparison has teeth: three updates moved the weights far beyond the tolerance
  assert.ok(r.moved > 1e-3, `the updates moved the weights by ${r.moved}`);
});

test("pass_batch_size: with dropout the passes still train (finite losses that change), a pass of 1 included", async () => {
  const { losses, weights } = await threeUpdates(1, 0.1);
  assert.ok(losses.every(Number.isFinite) && losses[1] !== losses[2], `losses ${losses}`);
  assert.ok(weights.every(Number.isFinite));
});
