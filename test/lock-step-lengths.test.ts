/** agent/lock-steps.ts boundLength: the padded length of a queued forward whose rows are bounded, not known. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { boundLength } from "../server/qrag/agent/lock-steps.ts";

test("a queued forward's padded length: a power of two up to 64 tokens, then the next multiple of 64, never past max_len, never below the bound", () => {
  assert.deepEqual([0, 1, 3, 14, 33, 64].map((n) => boundLength(n, 512)), [1, 1, 4, 16, 64, 64], "short rows as before");
  // babilong-gpu's bounds: the question and up to 5 pieces of at most 64 tokens each
  assert.deepEqual([65, 145, 192, 193, 340].map((n) => boundLength(n, 512)), [128, 192, 192, 256, 384], "a power of two would give 128, 256, 256, 256, 512");
  assert.equal(boundLength(600, 512), 512, "cut at max_len, as the rows are");
  assert.equal(boundLength(100, 96), 96);
  for (let n = 1; n <= 512; n++) assert.ok(boundLength(n, 512) >= n, `bound ${n}`);
});
