/**
 * Multi-threaded tfjs-wasm in Node (server/qrag/wasm-threads.ts): the thread setting, and real
 * child processes with 1 and 2 threads that must agree, leave no shim or temp file behind, and
 * exit on their own.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { MAX_WASM_THREADS, wasmThreadsAuto, wasmThreadsWanted } from "../server/qrag/wasm-threads.ts";

const run = promisify(execFile);
const CHILD = path.resolve("test/fixtures/scripts/wasm-threads-child.ts");

test("QRAG_WASM_THREADS: auto is one per core (1…8), explicit counts, bad values named", () => {
  const cores = Math.max(1, Math.min(MAX_WASM_THREADS, os.cpus().length));
  assert.equal(wasmThreadsWanted(""), cores);
  assert.equal(wasmThreadsWanted("auto"), cores);
  assert.equal(wasmThreadsWanted("1"), 1);
  assert.equal(wasmThreadsWanted(" 3 "), 3);
  // the dashboard's local worker keeps a core free, still within 1…8 on any machine
  assert.equal(wasmThreadsAuto(1), Math.max(1, Math.min(MAX_WASM_THREADS, os.cpus().length - 1)));
  assert.equal(wasmThreadsAuto(os.cpus().length + 4), 1);
  assert.ok(wasmThreadsAuto(-64) <= MAX_WASM_THREADS);
  for (const bad of ["0", "9", "1.5", "two", "-2"]) {
    assert.throws(() => wasmThreadsWanted(bad), new RegExp(`QRAG_WASM_THREADS: expected an integer 1…8 or "auto", got "${bad.trim()}"`));
  }
});

async function child(threads: number): Promise<{ device: string; nativeBlob: boolean; product: number[]; emb: number[]; tmpLeft: string[] }> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-wasm-test-"));
  try {
    // A hung pool would keep the child alive: the timeout turns that into a failure.
    const { stdout } = await run(process.execPath, ["--import", "tsx", CHILD], {
      env: { ...process.env, QRAG_WASM_THREADS: String(threads), TMPDIR: tmp },
      timeout: 60_000,
    });
    const line = stdout.trim().split("\n").at(-1)!;
    return { ...JSON.parse(line), tmpLeft: fs.readdirSync(tmp).filter((f) => f.startsWith("qrag-wasm-")) };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

test("2 wasm threads: same results as 1 thread, shims removed, temp files gone, process exits", async () => {
  const [one, two] = [await child(1), await child(2)];
  assert.match(one.device, /^wasm \(1 thread(, SIMD)?\)$/);
  assert.match(two.device, /^wasm \(2 threads(, SIMD)?\)$/);
  assert.ok(two.nativeBlob, "the global Blob is restored after initialisation");
  assert.deepEqual(two.tmpLeft, [], "the worker/main scripts written for emscripten are removed");
  assert.equal(two.product.length, 50);
  two.product.forEach((v, i) => assert.ok(Math.abs(v - one.product[i]) < 1e-4, `matMul[${i}]: ${v} vs ${one.product[i]}`));
  two.emb.forEach((v, i) => assert.ok(Math.abs(v - one.emb[i]) < 1e-5, `embedding[${i}]: ${v} vs ${one.emb[i]}`));
  assert.ok(one.emb.some((v) => v !== 0), "the encoder produced a real embedding");
});
