import { test } from "node:test";
import assert from "node:assert/strict";
import { Rng } from "../server/qrag/util/rng.ts";

test("rng is deterministic by seed and restorable from state", () => {
  const a = new Rng(7), b = new Rng(7), c = new Rng(8);
  const xs = Array.from({ length: 5 }, () => a.nextU32());
  assert.deepEqual(xs, Array.from({ length: 5 }, () => b.nextU32()));
  assert.notDeepEqual(xs, Array.from({ length: 5 }, () => c.nextU32()));
  const st = a.getState();
  const next = [a.next(), a.next()];
  const d = new Rng(st);
  assert.deepEqual([d.next(), d.next()], next);
});

test("sampleWithoutReplacement gives distinct in-range values and int is roughly uniform", () => {
  const r = new Rng(1);
  const s = r.sampleWithoutReplacement(10, 10);
  assert.deepEqual([...s].sort((x, y) => x - y), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const counts = new Array(4).fill(0);
  for (let i = 0; i < 40000; i++) counts[r.int(4)]++;
  for (const c of counts) assert.ok(Math.abs(c - 10000) < 400, `bucket ${c}`);
});
