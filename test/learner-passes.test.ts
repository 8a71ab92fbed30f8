import { test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs";
import { batch, learnerWith, lengths, passesAgainstOnePass, tensorTargetsAgainstHost, threeUpdates } from "./learner-passes-helpers.ts";

test("pass_batch_size: the update in passes of 3 (3 + 3 + 1 transitions) equals the one-pass update: losses and weights after three updates", async () => {
  const r = await passesAgainstOnePass(3);
  assert.ok(r.lossDiff <= 1e-5, `loss differs by ${r.lossDiff} (relative)`);
  assert.ok(r.weightDiff <= 1e-5, `largest weight difference ${r.weightDiff}`);
  // the comparison has teeth: three updates moved the weights far beyond the tolerance
  assert.ok(r.moved > 1e-3, `the updates moved the weights by ${r.moved}`);
});

test("targets given as a tensor train to the weights the same numbers from the host give: in one pass, and gathered by state length in passes of 3", async () => {
  assert.equal(await tensorTargetsAgainstHost(0), 0);
  assert.equal(await tensorTargetsAgainstHost(3), 0);
});

test("pass_batch_size: with dropout the passes still train (finite losses that change), a pass of 1 included", async () => {
  const { losses, weights } = await threeUpdates(1, 0.1);
  assert.ok(losses.every(Number.isFinite) && losses[1] !== losses[2], `losses ${losses}`);
  assert.ok(weights.every(Number.isFinite));
});

test("an abort between the update's passes throws before any step: updates, weights and tensors as before", async () => {
  const { nets, learner } = learnerWith(3);
  try {
    await learner.microStep(batch, lengths);
    await learner.microStep(batch, lengths); // past the warm-up's lr 0: a step would move the weights
    const before = await nets.state.exportWeightsAsync();
    const tensors = tf.memory().numTensors;
    const ac = new AbortController();
    // queued before the update's own yield after its first pass: the abort lands between passes
    setImmediate(() => ac.abort());
    await assert.rejects(learner.microStep(batch, lengths, ac.signal), { name: "AbortError" });
    assert.equal(learner.updates, 2, "no optimizer step");
    assert.equal(learner.microSteps, 2, "no micro-step counted");
    assert.equal(tf.memory().numTensors, tensors, "the first pass's gradients were released");
    const after = await nets.state.exportWeightsAsync();
    after.forEach((w, i) => assert.deepEqual(w.data, before[i].data, `weight ${i} untouched`));
    // not aborted: the same call completes the update
    const r = await learner.microStep(batch, lengths, new AbortController().signal);
    assert.ok(r.applied, "the update applied");
    assert.equal(learner.getState().updates, 3);
  } finally {
    learner.dispose();
    nets.dispose();
  }
});

test("the passes take the transitions by state length, shortest first, so each pads to its own longest state: the padded lengths grow pass to pass and cover every transition once", async () => {
  const { nets, learner } = learnerWith(3);
  const pack = nets.state.packStates.bind(nets.state);
  const passes: { rows: number[]; len: number }[] = [];
  nets.state.packStates = (states, maxTokensPerPiece) => {
    const b = pack(states, maxTokensPerPiece);
    if (states.length <= 3) passes.push({ rows: states.map((s) => batch.states.findIndex((x) => x === s)), len: b.len });
    return b;
  };
  try {
    await learner.microStep(batch, lengths);
    assert.deepEqual(passes.flatMap((p) => p.rows).sort(), [0, 1, 2, 3, 4, 5, 6], "every transition in one pass");
    const tokens = (i: number) => pack([batch.states[i]], lengths.maxInMemory).mask.reduce((a, m) => a + m, 0);
    const order = passes.flatMap((p) => p.rows).map(tokens);
    assert.deepEqual(order, [...order].sort((x, y) => x - y), `state lengths in pass order: ${order}`);
    assert.ok(passes[0].len < passes[2].len, `padded lengths ${passes.map((p) => p.len)}`);
  } finally {
    learner.dispose();
    nets.dispose();
  }
});
