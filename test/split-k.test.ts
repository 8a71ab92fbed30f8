import { test } from "node:test";
import assert from "node:assert/strict";
import { kSplit, SPLIT_TARGET, splitScratchFloats, weightGradients } from "../server/qrag/model/webgpu/split-k.ts";
import { tileFor } from "../server/qrag/model/webgpu/matmul.ts";

const tilesOf = (m: number, n: number, parts = 1) => {
  const t = tileFor(m, parts * n, false);
  return parts * Math.ceil(n / (t.tn * t.wx)) * Math.ceil(m / (t.tm * t.wy));
};

test("K splits: a power of two, within the workgroup target, each part at least minRows rows and whole bk slices; the largest such", () => {
  const { workgroups, minRows, maxParts } = SPLIT_TARGET;
  for (const [m, n, parts] of [[128, 384, 1], [128, 128, 1], [128, 512, 1], [512, 128, 1], [32, 96, 1], [128, 128, 3], [768, 768, 3], [768, 3072, 1], [3072, 768, 1]]) {
    for (const k of [48, 320, 384, 512, 1000, 2048, 4096, 4100, 32768]) {
      const s = kSplit(m, n, k, parts);
      const tiles = tilesOf(m, n, parts), bk = tileFor(m, parts * n, false).bk;
      const fits = (x: number) => x <= maxParts && x * tiles <= workgroups && k % (x * bk) === 0 && k / x >= minRows;
      assert.ok(Number.isInteger(Math.log2(s)), `${m}×${n}×${parts}, K ${k}: ${s} is no power of two`);
      assert.ok(s === 1 || fits(s), `${m}×${n}×${parts}, K ${k}: split ${s} breaks a bound`);
      assert.ok(!fits(2 * s), `${m}×${n}×${parts}, K ${k}: ${2 * s} parts fit too`);
    }
  }
});

test("K splits where they matter: the reference workload's weight gradients (12–16 tiles, 2,048–4,096 rows) split 16 ways; BERT-base's (432+ tiles) and short or odd K stay whole", () => {
  for (const [m, n] of [[128, 384], [128, 512], [512, 128]]) for (const k of [2048, 4096]) assert.equal(kSplit(m, n, k), 16, `${m}×${n}, K ${k}`);
  assert.equal(kSplit(128, 128, 4096), 16, "4 tiles: the parts' cap");
  assert.equal(kSplit(768, 768, 32768, 3), 1);
  assert.equal(kSplit(768, 3072, 32768), 1);
  assert.equal(kSplit(128, 384, 200), 1, "K under 2·minRows");
  assert.equal(kSplit(128, 384, 4100), 1, "K not a multiple of 2·bk");
});

test("the partials' scratch: each split product's (and part's) own, in the layer's order, none where nothing splits", () => {
  const f = splitScratchFloats([{ m: 512, n: 128 }, { m: 128, n: 512 }, { m: 128, n: 128 }, { m: 128, n: 384 }], 4096);
  assert.deepEqual(f, { c: [16 * 512 * 128, 16 * 128 * 512, 16 * 128 * 128, 16 * 128 * 384], s: [16 * 128, 16 * 512, 16 * 128, 16 * 384] });
  const bert = splitScratchFloats([{ m: 128, n: 512 }, { m: 128, n: 128, parts: 3 }], 4096);
  assert.equal(bert.c.length, 4, "fc's and Q, K and V each a partial buffer");
  assert.deepEqual(splitScratchFloats([{ m: 128, n: 384 }, { m: 128, n: 128 }], 200), { c: [], s: [] }, "K too short to split");
  assert.deepEqual(splitScratchFloats([{ m: 768, n: 768, parts: 3 }, { m: 768, n: 3072 }], 32768), { c: [], s: [] });
});

test("a layer's weight gradients: the split ones' products into partials of their own, their sums one program per SUMS_PER_PROGRAM at the flush (bindings: partials, then outputs), the whole one a product alone; out of the layer's order it throws", () => {
  const steps: { key: string; refs: unknown[]; uniforms: unknown[]; threads?: number }[] = [];
  const bufs: { floats: number }[] = [];
  const b = {
    buf: (floats: number) => {
      const x = { floats } as unknown as { floats: number; size: number; destroy(): void };
      bufs.push(x);
      return x as never;
    },
    step: (s: never) => (steps.push(s), s),
    flat: (key: string, _code: () => string, refs: unknown[], uniforms: unknown[], threads: number) => (steps.push({ key, refs, uniforms, threads }), {} as never),
  };
  const K = 4096;
  // five split products (the fifth past a program's four) and a wide one that stays whole
  const shapes = [{ m: 512, n: 128 }, { m: 128, n: 512 }, { m: 128, n: 128 }, { m: 128, n: 384 }, { m: 128, n: 128 }];
  const wg = weightGradients(b, shapes, K);
  assert.equal(bufs.length, 10, "a partial buffer and a sums buffer per split product");
  const out = (i: number) => ({ out: i }) as never;
  for (const [i, g] of shapes.entries()) wg.gradient({ a: out(100), b: [out(200)], out: [out(i)], m: g.m, n: g.n, k: K, trans: { a: true }, sums: [out(50 + i)] });
  wg.gradient({ a: out(100), b: [out(200)], out: [out(9)], m: 768, n: 3072, k: K, trans: { a: true }, sums: [out(59)] });
  assert.equal(steps.length, 6, "products only before the flush");
  wg.flush();
  const sums = steps.slice(6);
  assert.deepEqual(sums.map((s) => s.key), ["qrag_split_sum_4", "qrag_split_sum_1"]);
  assert.deepEqual(sums[0].refs, [bufs[0], bufs[5], bufs[1], bufs[6], bufs[2], bufs[7], bufs[3], bufs[8], out(0), out(50), out(1), out(51), out(2), out(52), out(3), out(53)]);
  assert.deepEqual(sums[1].refs, [bufs[4], bufs[9], out(4), out(54)]);
  assert.deepEqual(sums[0].uniforms.slice(0, 6), [["u", 512 * 128], ["u", 128], ["u", 16], ["u", 128 * 512], ["u", 512], ["u", 16]]);
  assert.equal(sums[0].threads, 512 * 128 + 128 * 512 + 128 * 128 + 128 * 384);
  wg.flush();
  assert.equal(steps.length, 8, "nothing pending after a flush");
  // the next layer in another order: its partials are sized for the given order
  assert.throws(() => wg.gradient({ a: out(100), b: [out(200)], out: [out(0)], m: 128, n: 384, k: K, trans: { a: true }, sums: [out(50)] }), /a 128×384 product split 16 ways is not the layer's gradient 1/);
});
