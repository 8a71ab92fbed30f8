/**
 * Errors the WebGPU device reports asynchronously reach the run as what they are
 * (server/qrag/backend/webgpu-errors.ts): on lavapipe, a 192 MiB tensor passes the adapter's 128 MiB
 * storage binding limit. Skipped without an adapter, except under QRAG_REQUIRE_WEBGPU=1.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { webgpuSkip as skip } from "./webgpu-skip.ts";
import { runCaseFile } from "./device-case-runner.ts";

type Outcome = { ok: boolean; name: string; message: string };
type ErrorCase = Record<"small" | "big" | "consequence" | "after", Outcome>;

test("a device error is raised after the work that caused it, instead of the failure it causes later, and only once", { skip }, () => {
  const r = runCaseFile<ErrorCase>("test/webgpu-error-cases.ts", "errors");
  assert.ok(r.small.ok, JSON.stringify(r.small));
  assert.equal(r.big.name, "WebgpuDeviceError", JSON.stringify(r.big));
  assert.match(r.big.message, /^WebGPU error: .*maximum storage buffer binding size/);
  assert.equal(r.consequence.name, "WebgpuDeviceError", `the cause, not the garbage: ${JSON.stringify(r.consequence)}`);
  assert.ok(r.after.ok, `raised once: ${JSON.stringify(r.after)}`);
});
