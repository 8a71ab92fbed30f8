/** Where the layer tail (model/webgpu/layer-tail.ts) applies: widths its thread layout takes, few rows, a device that binds and holds it. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { layerTailFits, layerTailShader, setLayerTail, TAIL_MAX_ROWS, tailNeedsQkvBuffer } from "../server/qrag/model/webgpu/layer-tail.ts";

/** lavapipe's, the H100's and the H200's limits as Dawn reports them (backend/webgpu.ts asks for the adapter's). */
const LIMITS = { maxStorageBuffersPerShaderStage: 16, maxComputeWorkgroupStorageSize: 16384, maxComputeInvocationsPerWorkgroup: 256 };

test("the layer tail takes the reference's widths (128, 512) and the counts shape's (4, 16) up to TAIL_MAX_ROWS rows; not BERT-base's 768, a hidden width it cannot chunk, more rows, a device binding 15 buffers or holding less workgroup memory, nor with --layer-tail 0; its next QKV needs a buffer of its own where fc2's input is under 3·d", () => {
  for (const [d, F] of [[128, 512], [4, 16], [32, 128], [64, 256], [16, 64], [128, 128]]) assert.ok(layerTailFits(LIMITS, d, F, TAIL_MAX_ROWS), `${d}, ${F}`);
  for (const [d, F] of [[768, 3072], [192, 768], [12, 48], [128, 48], [128, 8], [2, 16]]) assert.ok(!layerTailFits(LIMITS, d, F, 64), `${d}, ${F}`);
  assert.deepEqual([[128, 512], [128, 384], [128, 128], [32, 64], [192, 128]].map(([d, F]) => tailNeedsQkvBuffer(d, F)), [false, false, true, true, false]);
  assert.ok(!layerTailFits(LIMITS, 128, 512, TAIL_MAX_ROWS + 1));
  assert.ok(!layerTailFits({ ...LIMITS, maxStorageBuffersPerShaderStage: 15 }, 128, 512, 64));
  // d 128: 16 rows, a 64-column hidden chunk, the lanes' sums, the row stats and the key lanes' softmax states are 15,488 bytes
  assert.ok(!layerTailFits({ ...LIMITS, maxComputeWorkgroupStorageSize: 15_487 }, 128, 512, 64));
  assert.ok(layerTailFits({ ...LIMITS, maxComputeWorkgroupStorageSize: 15_488 }, 128, 512, 64));
  assert.ok(!layerTailFits({ ...LIMITS, maxComputeInvocationsPerWorkgroup: 128 }, 128, 512, 64));
  setLayerTail(false);
  try {
    assert.ok(!layerTailFits(LIMITS, 128, 512, 64));
  } finally {
    setLayerTail(true);
  }
});

test("the layer tail's WGSL binds 16 storage buffers (14 after the last layer: it only reads the stream, writes the final LayerNorm's rows and no QKV), draws the attention's mask where thr > 0, and refuses widths it does not fit", () => {
  const count = (code: string, what: RegExp) => code.match(what)?.length ?? 0;
  const mid = layerTailShader(128, 512, false, 32, 4);
  const last = layerTailShader(128, 512, true, 32, 1);
  assert.equal(count(mid, /var<storage, read>/g), 14);
  assert.equal(count(mid, /var<storage, read_write>/g), 2);
  assert.match(mid, /var<storage, read_write> x:/, "the stream in place");
  assert.equal(count(last, /var<storage, read>/g), 13);
  assert.equal(count(last, /var<storage, read_write>/g), 1);
  assert.match(last, /var<storage, read_write> y:/);
  assert.doesNotMatch(last, /qkv\[/);
  assert.match(mid, /qkv\[/);
  assert.match(mid, /if \(u\.thr > 0u\) \{ w = p \* maskKeyed\(u\.k0c, u\.k1c/);
  assert.match(mid, /lm\[tid \+ 64u \* i\]/, "4 key lanes: a pair's lanes 64 threads apart");
  assert.doesNotMatch(last, /lm\[/, "one thread a query: no lanes to combine");
  assert.throws(() => layerTailShader(192, 768, false, 48), /width 192, hidden 768, heads of 48 do not fit/);
  assert.throws(() => layerTailShader(128, 512, false, 48), /heads of 48 do not fit/);
  assert.throws(() => layerTailShader(128, 512, false, 32, 3), /do not fit/);
});
