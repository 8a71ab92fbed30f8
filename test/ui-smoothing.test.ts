import { test } from "node:test";
import assert from "node:assert/strict";
import { debiasedEma } from "../lib/smoothing.ts";

const close = (a: number[], b: number[]) => {
  assert.equal(a.length, b.length);
  a.forEach((v, i) => assert.ok(Math.abs(v - b[i]) < 1e-12, `index ${i}: ${v} vs ${b[i]}`));
};

test("debiased EMA matches hand-computed values (w = 0.5)", () => {
  // ema: 0.5·0+0.5·2=1 → /0.5 = 2;  0.5·1+0.5·4=2.5 → /0.75 = 3.333…;  0.5·2.5+0.5·8=5.25 → /0.875 = 6
  close(debiasedEma([2, 4, 8], 0.5), [2, 10 / 3, 6]);
});

test("debiased EMA with the default weight 0.6", () => {
  // ema1 = 0.4·10 = 4 → /0.4 = 10; ema2 = 0.6·4 + 0.4·0 = 2.4 → /(1−0.36) = 3.75
  // ema3 = 0.6·2.4 + 0.4·5 = 3.44 → /(1−0.216) = 4.387755…
  close(debiasedEma([10, 0, 5], 0.6), [10, 3.75, 3.44 / 0.784]);
});

test("the first point is never biased and a constant series stays constant", () => {
  close(debiasedEma([7], 0.9), [7]);
  close(debiasedEma([3, 3, 3, 3], 0.99), [3, 3, 3, 3]);
});

test("weight 0 returns the raw values; non-finite points pass through without moving the average", () => {
  close(debiasedEma([1, 5, 2], 0), [1, 5, 2]);
  const s = debiasedEma([2, Number.NaN, 4], 0.5);
  assert.ok(Number.isNaN(s[1]));
  assert.ok(Math.abs(s[0] - 2) < 1e-12 && Math.abs(s[2] - 10 / 3) < 1e-12);
  assert.deepEqual(debiasedEma([], 0.6), []);
});

test("chart axes land on round numbers", async () => {
  const { linearAxis, logAxis } = await import("../lib/chart-ticks.ts");
  assert.deepEqual(linearAxis(0.197, 0.801), { domain: [0, 1], ticks: [0, 0.2, 0.4, 0.6, 0.8, 1] });
  assert.deepEqual(linearAxis(-3, 7).ticks, [-4, -2, 0, 2, 4, 6, 8]);
  assert.deepEqual(linearAxis(5, 5).domain, [4.4, 5.6]); // ±10 % around a flat line
  // a spread below float precision is treated as flat (it used to never finish stepping)
  const tiny = linearAxis(0.001, 0.001 + 1e-19);
  assert.ok(tiny.ticks.length > 2 && tiny.ticks.length < 20 && tiny.domain[0] < 0.001 && tiny.domain[1] > 0.001);
  assert.ok(linearAxis(1e20, 1e20 + 1e5).ticks.length <= 101);
  assert.deepEqual(logAxis(0.003, 0.2), { domain: [0.001, 1], ticks: [0.001, 0.01, 0.1, 1] });
});
