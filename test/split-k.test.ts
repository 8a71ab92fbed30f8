import { test } from "node:test";
import assert from "node:assert/strict";
import { kSplit, SPLIT_TARGET, splitScratchFloats } from "../server/qrag/model/webgpu/split-k.ts";
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

test("the partials' scratch: the largest split product's per part index, none where nothing splits", () => {
  const f = splitScratchFloats([{ m: 128, n: 384 }, { m: 128, n: 128 }, { m: 128, n: 512 }, { m: 512, n: 128 }], 4096);
  assert.deepEqual(f, { c: [16 * 128 * 512], s: [16 * 512] });
  const bert = splitScratchFloats([{ m: 128, n: 128, parts: 3 }, { m: 128, n: 512 }], 4096);
  assert.equal(bert.c.length, 3, "Q, K and V each a partial buffer");
  assert.deepEqual(splitScratchFloats([{ m: 768, n: 768, parts: 3 }, { m: 768, n: 3072 }], 32768), { c: [], s: [] });
});
