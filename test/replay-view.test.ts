/**
 * The episode replay's maths (lib/analysis/replay.ts): the state a step was chosen from, the Q
 * bars' domain, and the haystack strip's view (zoom around a cell, pan, follow, hit-testing),
 * including a 400,000-chunk haystack.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { EpisodeRecord } from "../lib/contracts/index.ts";
import { MIN_SPAN, cellAt, cellEdges, chunkBlock, clampView, followCell, fullView, qDomain, stateChunks, zoomView } from "../lib/analysis/replay.ts";

const step = (index: number) => ({ index, text: `chunk ${index}`, position: 0, q: 0, q1: 0, q2: 0, gold: false, reward: 0, topk: [] });
const record = { sf_idx: [7, 2], steps: [step(9), step(2), step(5)] } as unknown as EpisodeRecord;

test("the state of step k holds the k earlier picks, in document order or pick order", () => {
  assert.deepEqual(stateChunks(record, 0, true), []);
  assert.deepEqual(stateChunks(record, 2, true).map((c) => c.index), [2, 9]);
  assert.deepEqual(stateChunks(record, 2, false).map((c) => c.index), [9, 2]);
  assert.deepEqual(stateChunks(record, 3, true).map((c) => [c.index, c.gold]), [[2, true], [5, false], [9, false]]);
});

test("the Q domain covers zero, every value and the soft-value line", () => {
  const [lo, hi] = qDomain([0.2, 0.5], 0.9);
  assert.ok(lo === 0 && hi > 0.9);
  const [lo2, hi2] = qDomain([-0.3, 0.1]);
  assert.ok(lo2 < -0.3 && hi2 > 0.1);
});

test("zoom keeps the anchor cell in place, stays inside the haystack, and stops at MIN_SPAN", () => {
  const n = 400_000;
  const v = zoomView(fullView(n), n, 4, 300_000.5);
  assert.equal(v.span, 100_000);
  assert.ok(Math.abs((300_000.5 - v.start) / v.span - 300_000.5 / n) < 1e-9, "anchor at the same fraction");
  let z = v;
  for (let i = 0; i < 20; i++) z = zoomView(z, n, 4, 399_999.5);
  assert.equal(z.span, MIN_SPAN);
  assert.equal(z.start + z.span, n, "clamped to the end");
  assert.deepEqual(zoomView(fullView(n), n, 0.25, 5), fullView(n), "cannot zoom out past everything");
  assert.deepEqual(clampView({ start: -50, span: 10 }, 8), { start: 0, span: 8 }, "a short haystack is shown whole");
});

test("hit-testing and follow: the cell under x, its edges, and recentring an off-screen cell", () => {
  const v = { start: 100, span: 50 };
  assert.equal(cellAt(v, 500, 0, 1000), 100);
  assert.equal(cellAt(v, 500, 499, 1000), 149);
  assert.deepEqual(cellEdges(v, 500, 101), [10, 20]);
  assert.equal(followCell(v, 1000, 120), v, "a visible cell does not move the view");
  const f = followCell(v, 1000, 600);
  assert.ok(f.start <= 600 && 601 <= f.start + f.span && f.span === 50);
  assert.deepEqual(chunkBlock(250, 260), { from: 200, to: 260 });
});
