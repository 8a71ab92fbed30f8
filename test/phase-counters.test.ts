/**
 * device.ts's per-phase wall time and compiles: each phase is charged the time it was the active
 * one, a nested phase's time to it and not to the phase around it, and the phases' times add up
 * to the time since the reset (the bench's host ms per phase is a phase's wall time less its read
 * waits); a program compiled counts in the phase that compiled it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { counterSnapshot, noteCompile, phaseClock, resetCounters, withPhase, withPhaseAsync } from "../server/qrag/backend/device.ts";

/** Keeps the thread busy for `ms` (host work, as a phase's packing or recording is). */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

test("phase wall time: a phase pays for the time it was active, nested phases apart, async phases until they settle; the phases add up to the time since the reset", async () => {
  const t0 = performance.now();
  resetCounters();
  const r0 = performance.now();
  withPhase("rollout", () => {
    busy(6);
    withPhase("encode", () => busy(8));
    busy(6);
  });
  const rolloutSpan = performance.now() - r0;
  await withPhaseAsync("update", async () => {
    busy(5);
    await new Promise<void>((resolve) => setImmediate(resolve));
    busy(5);
  });
  busy(3);
  const c = counterSnapshot();
  const elapsed = performance.now() - t0;
  const wall = (p: keyof typeof c) => c[p]?.wallMs ?? 0;
  assert.ok(wall("encode") >= 8, `encode ${wall("encode")} ms`);
  assert.ok(wall("rollout") >= 12, `rollout ${wall("rollout")} ms (its own 12, not the encode's)`);
  assert.ok(wall("update") >= 10, `update ${wall("update")} ms`);
  assert.ok(wall("other") >= 3, `other ${wall("other")} ms`);
  const sum = (["encode", "rollout", "update", "other"] as const).reduce((a, p) => a + wall(p), 0);
  assert.ok(sum <= elapsed + 1e-6, `the phases' ${sum} ms within the ${elapsed} ms since the reset`);
  // the encode's time went to it alone, not to the rollout around it too
  assert.ok(wall("rollout") + wall("encode") <= rolloutSpan + 1e-6, `rollout ${wall("rollout")} + encode ${wall("encode")} ms within its span of ${rolloutSpan} ms`);
  resetCounters();
  assert.equal(counterSnapshot().encode, undefined, "a reset starts the phases over");
});

test("a program compiled is counted in the phase that compiled it, with the host ms it took", () => {
  resetCounters();
  withPhase("update", () => noteCompile(12.5));
  withPhase("target", () => {
    noteCompile(2);
    noteCompile(3);
  });
  const c = counterSnapshot();
  assert.deepEqual([c.update?.compiles, c.update?.compileMs], [1, 12.5]);
  assert.deepEqual([c.target?.compiles, c.target?.compileMs], [2, 5]);
  assert.equal(c.other?.compiles ?? 0, 0);
});

test("the phase clock stopped (a bench between its timed iterations) charges no phase; started again, it charges from then on", () => {
  resetCounters();
  phaseClock(false);
  try {
    busy(20);
    withPhase("encode", () => busy(20));
  } finally {
    phaseClock(true);
  }
  withPhase("update", () => busy(5));
  const c = counterSnapshot();
  assert.equal(c.encode?.wallMs ?? 0, 0, "nothing charged while stopped");
  assert.ok((c.other?.wallMs ?? 0) < 20, `other ${c.other?.wallMs} ms: its 20 ms were not charged`);
  assert.ok((c.update?.wallMs ?? 0) >= 5, `update ${c.update?.wallMs} ms`);
});
