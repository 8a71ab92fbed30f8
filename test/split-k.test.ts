import { test } from "node:test";
import assert from "node:assert/strict";
import { kSplit, SPLIT_TARGET, splitScratchFloats, weightGradients } from "../server/qrag/model/webgpu/split-k.ts";
import { tileFor } from "../server/qrag/model/webgpu/matmul.ts";
import { rowWorkgroups } from "../server/qrag/model/webgpu/row-reduce.ts";

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

test("a layer's weight gradients and LayerNorm sums: products at the flush, four of one tile to a program (one of another tile alone); every sum one program per SUMS_PER_PROGRAM, from parts of one scratch buffer into the gradients' buffer; a third LayerNorm before a flush and a product out of the layer's order throw", () => {
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
  const K = 4096, d = 128;
  // five split products (the fifth past a program's four) and a wide one that stays whole (another tile)
  const shapes = [{ m: 512, n: 128 }, { m: 128, n: 512 }, { m: 128, n: 128 }, { m: 128, n: 384 }, { m: 128, n: 128 }];
  const wg = weightGradients(b, shapes, K, { rows: K, d });
  assert.equal(bufs.length, 1, "one scratch buffer");
  const scratch = bufs[0];
  const G = { floats: 0 };
  const grad = (i: number) => ({ of: G, offset: i * 1024, size: 4 }) as never;
  const act = (i: number) => ({ act: i }) as never;
  for (const [i, g] of shapes.entries()) wg.gradient({ a: act(100), b: [act(200)], out: [grad(i)], m: g.m, n: g.n, k: K, trans: { a: true }, sums: [grad(50 + i)] });
  wg.gradient({ a: act(100), b: [act(200)], out: [grad(9)], m: 768, n: 3072, k: K, trans: { a: true }, sums: [grad(59)] });
  const ln = [wg.lnSums(grad(70), grad(71)), wg.lnSums(grad(72), grad(73))];
  assert.throws(() => wg.lnSums(grad(74), grad(75)), /a third LayerNorm's sums before a flush/);
  assert.equal(steps.length, 0, "nothing before the flush");
  wg.flush();
  assert.deepEqual(steps.map((s) => s.key), ["matmul-64x64-k16-t16x16-aligned-tA-cs-g4", "matmul-64x64-k16-t16x16-aligned-tA-cs", "matmul-64x128-k8-t16x8-aligned-tA-cs", "qrag_partial_sums_14"]);
  const sums = steps[3];
  // the gradients' buffer bound over the span the sums write: grad(0) … grad(73)
  assert.deepEqual(sums.refs, [scratch, { of: G, offset: 0, size: 73 * 1024 + 4 }]);
  // the split products' partials and the LayerNorms' are parts of the scratch buffer, each aligned and apart
  const parts = [...(steps[0].refs.slice(8) as { of: unknown; offset: number; size: number }[]), ...(steps[1].refs.slice(2) as { of: unknown; offset: number; size: number }[]), ...(ln as unknown as { of: unknown; offset: number; size: number }[])];
  for (const p of parts) assert.ok(p.of === scratch && p.offset % 256 === 0, JSON.stringify(p));
  const sorted = [...parts].sort((x, y) => x.offset - y.offset);
  sorted.slice(1).forEach((p, i) => assert.ok(p.offset >= sorted[i].offset + sorted[i].size, "parts overlap"));
  // per sum: length, parts, source and destination offsets (floats); fc2's weight, then its bias; a LayerNorm's dγ then dβ over its workgroups' rows
  const u = sums.uniforms as [string, number][];
  assert.deepEqual(u.slice(0, 8).map((x) => x[1]), [512 * 128, 16, parts[0].offset / 4, 0, 128, 16, parts[1].offset / 4, 50 * 256]);
  const [gx, gy] = rowWorkgroups(K, d);
  const wgs = Math.min(gx * gy, 256);
  assert.deepEqual(u.slice(40, 48).map((x) => x[1]), [d, wgs, ln[0].offset / 4, 70 * 256, d, wgs, ln[0].offset / 4 + wgs * d, 71 * 256]);
  assert.equal(sums.threads, 512 * 128 + 128 * 512 + 2 * 128 * 128 + 128 * 384 + 128 + 512 + 2 * 128 + 384 + 4 * d);
  wg.flush();
  assert.equal(steps.length, 4, "nothing pending after a flush");
  wg.lnSums(grad(74), grad(75));
  // the next layer in another order: its partials are sized for the given order
  assert.throws(() => wg.gradient({ a: act(100), b: [act(200)], out: [grad(0)], m: 128, n: 384, k: K, trans: { a: true }, sums: [grad(50)] }), /a 128×384 product split 16 ways is not the layer's gradient 1/);
});
