import { test } from "node:test";
import assert from "node:assert/strict";
import { PACK_ALIGN, packLayout } from "../server/qrag/model/webgpu/grad-pack.ts";
import { gradientsFit, transformerGradSizes } from "../server/qrag/model/webgpu/recorded-encoder.ts";

test("a pack's layout: each variable at an offset aligned to 256 bytes, segments within the float bound (a larger variable alone), totals aligned; unsegmented a run of variables lies as in one buffer", () => {
  const sizes = [35, 64, 1, 130 * 70, 24, 24];
  const one = packLayout(sizes);
  assert.equal(PACK_ALIGN, 64);
  assert.deepEqual(one.seg, [0, 0, 0, 0, 0, 0]);
  assert.deepEqual(one.offsets, [0, 64, 128, 192, 192 + 9152, 192 + 9152 + 64]);
  assert.deepEqual(one.totals, [192 + 9152 + 128]);
  const cut = packLayout(sizes, 128);
  assert.deepEqual(cut.seg, [0, 0, 1, 2, 3, 3]);
  assert.deepEqual(cut.offsets, [0, 64, 0, 0, 0, 64]);
  assert.deepEqual(cut.totals, [128, 64, 9152, 128]);
  // a segment's variables keep their distances from the unsegmented layout: one copy a run
  for (let i = 1; i < sizes.length; i++) {
    if (cut.seg[i] === cut.seg[i - 1]) assert.equal(cut.offsets[i] - cut.offsets[i - 1], one.offsets[i] - one.offsets[i - 1]);
  }
});

test("a keep plan's gradient buffer fits the device's maxBufferSize (WebGPU's default 256 MiB where it says none), counting each gradient's alignment", () => {
  const tiny = { vocab_size: 300, max_len: 64, dim: 32, hidden: 64, heads: 4, layers: 2, dropout: 0 };
  const sizes = transformerGradSizes(tiny);
  assert.equal(sizes.length, 2 + 12 * 2 + 2);
  const bytes = sizes.reduce((a, n) => a + Math.ceil(n / 64) * 256, 0);
  assert.ok(gradientsFit({ limits: { maxBufferSize: bytes } } as never, sizes));
  assert.ok(!gradientsFit({ limits: { maxBufferSize: bytes - 1 } } as never, sizes));
  // a BERT-base-sized table alone is over the default
  assert.ok(!gradientsFit({ limits: {} } as never, [30522 * 768, 2 ** 26]));
  assert.ok(gradientsFit({ limits: {} } as never, [30522 * 768]));
});
