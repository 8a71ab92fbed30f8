/** Where the layer tail (model/webgpu/layer-tail.ts) applies: widths its thread layout takes, few rows, a device that binds and holds it. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { layerTailFits, layerTailShader, setLayerTail, TAIL_MAX_ROWS } from "../server/qrag/model/webgpu/layer-tail.ts";

/** lavapipe's, the H100's and the H200's limits as Dawn reports them (backend/webgpu.ts asks for the adapter's). */
const LIMITS = { maxStorageBuffersPerShaderStage: 16, maxComputeWorkgroupStorageSize: 16384, maxComputeInvocationsPerWorkgroup: 256 };

test("the layer tail takes the reference's widths (128, 512) and the counts shape's (4, 16) up to TAIL_MAX_ROWS rows; not BERT-base's 768, a hidden width it cannot chunk, more rows, a device binding 15 buffers or holding less workgroup memory, nor with --layer-tail 0", () => {
  for (const [d, F] of [[128, 512], [4, 16], [32, 128], [64, 256], [16, 64], [128, 128]]) assert.ok(layerTailFits(LIMITS, d, F, TAIL_MAX_ROWS), `${d}, ${F}`);
  for (const [d, F] of [[768, 3072], [192, 768], [12, 48], [128, 48], [128, 8], [2, 16]]) assert.ok(!layerTailFits(LIMITS, d, F, 64), `${d}, ${F}`);
  assert.ok(!layerTailFits(LIMITS, 128, 512, TAIL_MAX_ROWS + 1));
  assert.ok(!layerTailFits({ ...LIMITS, maxStorageBuffersPerShaderStage: 15 }, 128, 512, 64));
  // d 128: 16 rows, a 64-column hidden chunk, the lanes' sums and the row stats are 13,440 bytes
  assert.ok(!layerTailFits({ ...LIMITS, maxComputeWorkgroupStorageSize: 13_439 }, 128, 512, 64));
  assert.ok(layerTailFits({ ...LIMITS, maxComputeWorkgroupStorageSize: 13_440 }, 128, 512, 64));
  assert.ok(!layerTailFits({ ...LIMITS, maxComputeInvocationsPerWorkgroup: 128 }, 128, 512, 64));
  setLayerTail(false);
  try {
    assert.ok(!layerTailFits(LIMITS, 128, 512, 64));
  } finally {
    setLayerTail(true);
  }
});

test("the layer tail's WGSL binds 16 storage buffers (13 after the last layer: 12 read, and it writes the final LayerNorm's rows and no QKV), and refuses widths it does not fit", () => {
  const count = (code: string, what: RegExp) => code.match(what)?.length ?? 0;
  const mid = layerTailShader(128, 512, false);
  const last = layerTailShader(128, 512, true);
  assert.equal(count(mid, /var<storage, read>/g) + count(mid, /var<storage, read_write>/g), 16);
  assert.equal(count(last, /var<storage, read>/g), 12);
  assert.match(last, /var<storage, read_write> y:/);
  assert.doesNotMatch(last, /qkv\[/);
  assert.match(mid, /qkv\[/);
  assert.throws(() => layerTailShader(192, 768, false), /width 192, hidden 768 do not fit/);
});
