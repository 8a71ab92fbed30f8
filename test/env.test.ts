import { test } from "node:test";
import assert from "node:assert/strict";
import { relativePositions, relativePositionOf, absolutePositions } from "../server/qrag/env/positions.ts";
import { GroundTruthFeedback } from "../server/qrag/env/feedback.ts";
import { RetrievalEpisode } from "../server/qrag/env/episode.ts";
import type { Sample } from "../server/qrag/types.ts";

const list = (a: Int32Array) => Array.from(a);

test("one chunk's relative position equals its entry of the whole array", () => {
  let seed = 7;
  const rnd = (m: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % m;
  for (let t = 0; t < 300; t++) {
    const n = 1 + rnd(80);
    const sel = Array.from({ length: rnd(Math.min(n, 7)) }, () => rnd(n));
    const step = [20, 100, 7][t % 3];
    const all = relativePositions(n, sel, step);
    for (let i = 0; i < n; i++) assert.equal(relativePositionOf(n, sel, i, step), all[i], `n=${n} sel=${sel} i=${i} step=${step}`);
  }
  assert.throws(() => relativePositionOf(5, [], 5), RangeError);
});

test("relative positions reproduce the spec's N=12 examples exactly", () => {
  assert.deepEqual(list(relativePositions(12, [])), [0, 1, 3, 4, 6, 8, 9, 11, 13, 14, 16, 18]);
  assert.deepEqual(list(relativePositions(12, [5])), [0, 4, 9, 13, 18, 20, 23, 26, 29, 32, 35, 38]);
  assert.deepEqual(list(relativePositions(12, [0, 5])), [20, 24, 29, 33, 38, 40, 43, 46, 49, 52, 55, 58]);
  assert.deepEqual(list(relativePositions(12, [5, 6])), [0, 4, 9, 13, 18, 20, 40, 43, 47, 50, 54, 58]);
  // order of the selected indices does not matter
  assert.deepEqual(list(relativePositions(12, [6, 5])), list(relativePositions(12, [5, 6])));
});

test("relative positions: length-1 segments, tiny n, step size", () => {
  assert.deepEqual(list(relativePositions(1, [])), [0]);
  assert.deepEqual(list(relativePositions(1, [0])), [20]);
  assert.deepEqual(list(relativePositions(3, [0, 1, 2])), [20, 40, 60]);
  assert.deepEqual(list(relativePositions(2, [])), [0, 18]);
  assert.deepEqual(list(relativePositions(4, [3])), [0, 9, 18, 20]); // last chunk alone
  // step 10 → max value floor(0.9·10) = 9
  assert.deepEqual(list(relativePositions(4, [2], 10)), [0, 9, 10, 19]);
  assert.deepEqual(list(absolutePositions(4)), [0, 1, 2, 3]);
  assert.throws(() => relativePositions(4, [4]), RangeError);
});

test("relative positions at 400,000 chunks stay exact integers in [20k, 20k+18]", () => {
  const p = relativePositions(400_000, [123_456, 7]);
  assert.equal(p[0], 0);
  assert.equal(p[6], 18); // end of segment 0 (len 7)
  assert.equal(p[7], 20);
  assert.equal(p[123_455], 38);
  assert.equal(p[123_456], 40);
  assert.equal(p[399_999], 58);
  // exact integer floor(18·j/(len−1)) in the middle of a long segment
  const j = 200_000 - 123_456, len = 400_000 - 123_456;
  assert.equal(p[200_000], 40 + Math.floor((18 * j) / (len - 1)));
});

test("reward: a lower extra-steps floor makes a detour cost more; 1 at exactly |sf| picks either way", () => {
  const detour = new GroundTruthFeedback([1, 3], { extraStepsFloor: 0 });
  detour.step([7]);
  detour.step([7, 1]);
  assert.equal(detour.step([7, 1, 3]).reward, 2 / (3 + 1e-5));
  const direct = new GroundTruthFeedback([1, 3], { extraStepsFloor: 0 });
  direct.step([3]);
  assert.ok(Math.abs(direct.step([3, 1]).reward - 1) < 1e-5);
});

test("reward: 2 facts found in 3 steps = 0.5 + 0.5·2/3 ≈ 0.8333, paid once", () => {
  const fb = new GroundTruthFeedback([1, 3]);
  assert.deepEqual(fb.step([0]), { reward: 0, completed: false, terminated: false });
  assert.equal(fb.step([0, 1]).reward, 0);
  const r = fb.step([0, 1, 3]);
  assert.ok(Math.abs(r.reward - 0.8333) < 1e-4, `${r.reward}`);
  assert.equal(r.reward, 0.5 + (0.5 * 2) / (3 + 1e-5));
  assert.equal(r.completed, true);
  assert.equal(r.terminated, true);
});

test("reward: 2 facts in 2 steps = 1.0; never_terminate pays 0 afterwards", () => {
  const fb = new GroundTruthFeedback([1, 3], { neverTerminate: true });
  assert.equal(fb.step([3]).reward, 0);
  const r = fb.step([3, 1]);
  assert.ok(Math.abs(r.reward - 1) < 1e-5);
  assert.equal(r.completed, true);
  assert.equal(r.terminated, false);
  assert.deepEqual(fb.step([3, 1, 0]), { reward: 0, completed: true, terminated: false });
  // without the penalty the reward is exactly the completion reward; per-fact reward adds up
  const plain = new GroundTruthFeedback([1, 3], { penalizeExtraSteps: false, perFactReward: 0.1 });
  assert.equal(plain.step([1]).reward, 0.1);
  assert.equal(plain.step([1, 0]).reward, 0);
  assert.equal(plain.step([1, 0, 3]).reward, 0.1 + 1);
});

function sample(n: number, support: number[]): Sample {
  return { id: "s", question: "Where?", answer: "a", chunks: Array.from({ length: n }, (_, i) => `c${i}`), supportIdx: support };
}

test("episode: mask, selection-time positions, recomputed positions, state texts", () => {
  const ep = new RetrievalEpisode(sample(12, [6, 5]), { maxSteps: 6, positions: "relative" });
  assert.deepEqual(list(ep.positions), [0, 1, 3, 4, 6, 8, 9, 11, 13, 14, 16, 18]);
  const a = ep.step(6);
  assert.deepEqual(a.item, { index: 6, position: 9, text: "c6" });
  assert.equal(ep.available[6], 0);
  assert.throws(() => ep.step(6), RangeError);
  assert.throws(() => ep.step(12), RangeError);
  const b = ep.step(5);
  assert.equal(b.item.position, 18); // position of chunk 5 after selecting {6}: end of segment 0
  assert.deepEqual(list(ep.positions), [0, 4, 9, 13, 18, 20, 40, 43, 47, 50, 54, 58]);
  assert.equal(b.reward, 0.5 + (0.5 * 2) / (2 + 1e-5));
  assert.deepEqual([b.done, b.terminated, b.truncated], [true, true, false]);
  assert.deepEqual(ep.stateTexts(true), ["Where?", "c5", "c6"]);
  assert.deepEqual(ep.stateTexts(false), ["Where?", "c6", "c5"]);
  assert.equal(ep.stateText(false), "Where? [SEP] c6 [SEP] c5");
  assert.deepEqual(ep.selected, [6, 5]);
  assert.throws(() => ep.step(0), /after the episode ended/);
});

test("episode: never_terminate runs to max_steps; truncation when all chunks are taken", () => {
  const ep = new RetrievalEpisode(sample(10, [2]), { maxSteps: 3, positions: "none", feedback: { neverTerminate: true } });
  const r1 = ep.step(2);
  assert.deepEqual([r1.reward, r1.done, r1.completed], [0.5 + 0.5 / (1 + 1e-5), false, true]);
  assert.equal(r1.item.position, 2); // "none" keeps absolute indices
  assert.deepEqual(list(ep.positions).slice(0, 4), [0, 1, 2, 3]);
  assert.equal(ep.step(0).done, false);
  const r3 = ep.step(1);
  assert.deepEqual([r3.reward, r3.done, r3.terminated, r3.truncated], [0, true, false, true]);
  assert.equal(ep.numSteps, 3);

  const small = new RetrievalEpisode(sample(2, [0, 1]), { maxSteps: 6, positions: "relative", feedback: { neverTerminate: true } });
  assert.equal(small.step(1).truncated, false);
  const last = small.step(0);
  assert.deepEqual([last.truncated, last.done, last.completed], [true, true, true]);

  // completion and max_steps on the same step: both flags set
  const both = new RetrievalEpisode(sample(5, [4]), { maxSteps: 1, positions: "absolute" });
  const r = both.step(4);
  assert.deepEqual([r.terminated, r.truncated, r.done], [true, true, true]);
});
