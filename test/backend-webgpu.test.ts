/**
 * The webgpu backend on the software Vulkan driver (Mesa's lavapipe, Debian `mesa-vulkan-drivers`
 * ≥ 24, which .ci/run installs): forced with QRAG_BACKEND=webgpu it runs tfjs ops that equal the
 * cpu backend's; on auto a software adapter is never picked, and a machine without a Vulkan
 * driver gets one line saying so and falls back. Machines without lavapipe skip the tests that need
 * it, except under QRAG_REQUIRE_WEBGPU=1 (CI), where its absence is a failure.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import * as tf from "@tensorflow/tfjs";
import { pickBackend } from "../server/qrag/backend/pick.ts";
import { installWebgpu } from "../server/qrag/backend/webgpu.ts";
import { dawnPolls, SPIN_MS } from "../server/qrag/backend/dawn-poll.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { webgpuMissing, webgpuSkip } from "./webgpu-skip.ts";

const ROOT = path.resolve(import.meta.dirname, "..");

/** Runs a snippet in a fresh process (the backend choice is per process) and returns its JSON. */
function fresh(code: string, env: Record<string, string> = {}): unknown {
  const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], {
    cwd: ROOT,
    env: { ...process.env, QRAG_BACKEND: "", ...env },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  return JSON.parse(out.trim().split("\n").at(-1)!);
}

const skip = webgpuSkip;

test("a read awaiting long GPU work does not spin a core: Dawn's poll is recognized and, after the first SPIN_MS, runs at most once a millisecond", { skip }, async () => {
  await pickBackend("webgpu");
  const a = tf.randomNormal([512, 512]);
  // ~4 GFLOP: on lavapipe a wait of a tenth of a second or more
  const y = tf.tidy(() => {
    let z: tf.Tensor = a;
    for (let i = 0; i < 16; i++) z = tf.div(tf.matMul(z, a), 25);
    return z;
  });
  const before = { ...dawnPolls };
  const t0 = performance.now();
  await y.data();
  const ms = performance.now() - t0;
  tf.dispose([a, y]);
  const timed = dawnPolls.timed - before.timed;
  assert.ok(ms > 4 * SPIN_MS, `the wait took ${ms.toFixed(1)} ms: too short to tell`);
  // each poll schedules the next, so once on the timer the rest of the wait is too (spinning, a
  // core polls ~100–200 times a millisecond); at most one a tick of the event loop's clock
  assert.ok(timed > 0, "no poll of Dawn's went on the timer: its callback was not recognized");
  assert.ok(timed <= ms + 2, `${timed} polls on the timer in ${ms.toFixed(1)} ms`);
});

test("webgpu forced: a software adapter is used, named, and its ops equal the cpu backend's", { skip }, async () => {
  assert.equal(webgpuMissing, "", "QRAG_REQUIRE_WEBGPU=1 but no adapter");
  const info = await pickBackend("webgpu");
  assert.equal(info.backend, "webgpu");
  assert.equal(tf.getBackend(), "webgpu");
  assert.match(info.device, /^webgpu: .+, software$/);
  assert.equal(info.adapter?.fallback, true);
  assert.ok((info.adapter?.maxStorageBuffersPerShaderStage ?? 0) > 8, "the device gets the adapter's storage-buffer limit, not the default 8");

  const rng = new Rng(5);
  const rand = (n: number) => Float32Array.from({ length: n }, () => rng.next() * 2 - 1);
  const a = rand(33 * 17);
  const b = rand(17 * 9);
  // a 12-input AddN needs more than the default 8 storage buffers per stage (lavapipe offers 16)
  const parts = Array.from({ length: 12 }, () => rand(40));
  const compute = async () => {
    const mm = tf.matMul(tf.tensor2d(a, [33, 17]), tf.tensor2d(b, [17, 9]));
    const sm = tf.softmax(mm);
    const sum = tf.addN(parts.map((p) => tf.tensor1d(p)));
    const out = [await mm.data(), await sm.data(), await sum.data()];
    tf.dispose([mm, sm, sum]);
    return out;
  };
  const gpu = await compute();
  await pickBackend("cpu");
  const cpu = await compute();
  for (let k = 0; k < cpu.length; k++) {
    let d = 0;
    for (let i = 0; i < cpu[k].length; i++) d = Math.max(d, Math.abs(cpu[k][i] - gpu[k][i]));
    assert.ok(d < 1e-5, `output ${k} differs by ${d}`);
  }
});

test("webgpu on auto: a machine without a GPU does not load Dawn; a software adapter is passed over", { skip }, async () => {
  const r = fresh(`const { pickBackend } = await import("./server/qrag/backend/pick.ts"); const i = await pickBackend(); console.log(JSON.stringify(i));`) as { backend: string; skipped?: string[] };
  assert.notEqual(r.backend, "webgpu");
  const reason = r.skipped?.find((s) => s.startsWith("webgpu:")) ?? "";
  const hasGpuNode = fs.readdirSync("/dev").some((f) => /^nvidia\d+$/.test(f)) || (fs.existsSync("/dev/dri") && fs.readdirSync("/dev/dri").some((f) => f.startsWith("renderD")));
  assert.match(reason, hasGpuNode ? /^webgpu: only a software WebGPU adapter/ : /^webgpu: no GPU device \(\/dev\/nvidia\*, \/dev\/dri\/renderD\*\)$/);
  // past the device check, Dawn's software adapter is still refused on auto
  await assert.rejects(installWebgpu(false, { skipDeviceCheck: true }), /^Error: only a software WebGPU adapter \(.+\); not used unless QRAG_BACKEND=webgpu$/);
});

test("no Vulkan driver: forced webgpu fails with one clear line; auto falls back", () => {
  const noDriver = { VK_ICD_FILENAMES: "/nonexistent/icd.json", VK_DRIVER_FILES: "/nonexistent/icd.json" };
  const forced = fresh(
    `const { pickBackend } = await import("./server/qrag/backend/pick.ts"); try { await pickBackend("webgpu"); console.log(JSON.stringify({ ok: true })); } catch (e) { console.log(JSON.stringify({ error: e.message })); }`,
    noDriver,
  ) as { error?: string };
  assert.match(forced.error ?? "", /^no WebGPU adapter: the Vulkan loader (found no driver for a GPU|libvulkan\.so\.1 is not installed)/);
  assert.ok(!forced.error!.includes("\n"), "one line");
  const auto = fresh(`const { pickBackend } = await import("./server/qrag/backend/pick.ts"); console.log(JSON.stringify(await pickBackend()));`, noDriver) as { backend: string; skipped?: string[] };
  assert.equal(auto.backend, "wasm");
  assert.ok(auto.skipped?.some((s) => /^webgpu: no (GPU device|WebGPU adapter)/.test(s)), JSON.stringify(auto.skipped));
});
