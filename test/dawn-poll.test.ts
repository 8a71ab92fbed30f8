/**
 * Dawn's event polling (server/qrag/backend/dawn-poll.ts) with a stand-in for dawn.node's
 * AsyncRunner: a native-looking callback (no name, no parameters) that polls and schedules itself
 * again with the global setImmediate until its wait is over, as AsyncRunner does while a
 * `mapAsync` is pending. The real Dawn is checked in backend-webgpu.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { promisify } from "node:util";
import { dawnPolls, GPU_SPIN_MS, installDawnPolling, SPIN_MS, spinMsFor } from "../server/qrag/backend/dawn-poll.ts";

installDawnPolling();

/** A wait of `ms` polled the way AsyncRunner polls: resolves with the times its polls ran (ms after the wait began). */
function asyncRunnerWait(ms: number): Promise<number[]> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const runs: number[] = [];
    // Function.prototype through a Proxy: callable, name "", length 0, and printed as native code
    const tick: () => void = new Proxy(Function.prototype, {
      apply() {
        const t = performance.now() - t0;
        runs.push(t);
        if (t < ms) setImmediate(tick);
        else resolve(runs);
      },
    }) as () => void;
    setImmediate(tick);
  });
}

test("a wait longer than SPIN_MS is polled at once for SPIN_MS, then once a millisecond: 60 ms take about 60 polls after the first SPIN_MS, not thousands", async () => {
  const before = { ...dawnPolls };
  const runs = await asyncRunnerWait(60);
  const late = runs.filter((t) => t > SPIN_MS + 1);
  // after the spin, on a 1 ms timer: one poll per tick of the event loop's millisecond clock (two
  // may fall closer in real time: libuv's clock is read once per loop turn), so at most ~60 in the
  // 60 ms; a spinning loop polls ~100 times a millisecond
  assert.ok(late.length >= 1 && late.length <= 62, `${late.length} polls after the first ${SPIN_MS + 1} ms`);
  assert.ok(dawnPolls.immediate > before.immediate, "the wait's first polls ran at once");
  // each poll schedules the next: past the spin every one is timed, save one scheduled inside it that ran late
  assert.ok(dawnPolls.timed - before.timed >= late.length - 1, `${dawnPolls.timed - before.timed} of the ${late.length} late polls waited on the timer`);
});

test("a wait begun right after another is polled at once again (its own spin), and a short one is never put on the timer", async () => {
  await asyncRunnerWait(20);
  const before = { ...dawnPolls };
  const runs = await asyncRunnerWait(0.2);
  assert.ok(runs.length >= 1);
  assert.equal(dawnPolls.timed - before.timed, 0, "a 0.2 ms wait right after a long one waited on the timer");
  assert.equal(dawnPolls.immediate - before.immediate, runs.length);
});

test("other callbacks are scheduled as before: in order, with their arguments; promisify(setImmediate) still resolves with its value", async () => {
  const order: string[] = [];
  await new Promise<void>((resolve) => {
    setImmediate((a: string) => order.push(a), "first");
    setImmediate(function named() {
      order.push("second");
    });
    // a promise's resolver is native too, but takes a parameter
    new Promise<string>((r) => setImmediate(r, "resolved")).then((v) => order.push(v));
    setImmediate(() => setImmediate(resolve));
  });
  assert.deepEqual(order.slice(0, 2), ["first", "second"]);
  assert.ok(order.includes("resolved"));
  assert.equal(await promisify(setImmediate)("value"), "value");
});

test("a CPU adapter (lavapipe) spins 2 ms of a wait, a GPU 50: the training loop's reads there keep polling at once", () => {
  assert.equal(spinMsFor(true), SPIN_MS);
  assert.equal(spinMsFor(false), GPU_SPIN_MS);
  assert.ok(GPU_SPIN_MS >= 20 * SPIN_MS);
});
