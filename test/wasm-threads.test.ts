/**
 * Multi-threaded tfjs-wasm in Node (server/qrag/backend/wasm-threads.ts): the thread setting, and real
 * child processes with 1 and 2 threads whose results are finite, agree with each other and with
 * an independent computation (plain JS / tfjs cpu), leave no shim or temp file behind, and exit
 * on their own.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import * as tf from "@tensorflow/tfjs";
import { createEncoder } from "../server/qrag/model/factory.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { MAX_WASM_THREADS, wasmThreadsAuto, wasmThreadsWanted } from "../server/qrag/backend/wasm-threads.ts";

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

/**
 * What the child computes, recomputed here without wasm: the first 50 entries of the matMul
 * (row 0 of a·b) in float64 from the same seeded inputs, and the same encoder forward on tfjs's
 * plain-JS cpu backend. The child prints only those first 50 values of each result.
 */
async function reference(): Promise<{ product: number[]; emb: number[]; embShape: number[] }> {
  const rng = new Rng(7);
  const rand = (n: number) => Float32Array.from({ length: n }, () => rng.next() * 2 - 1);
  const a = rand(300 * 256);
  const b = rand(256 * 200);
  const product = Array.from({ length: 50 }, (_, j) => {
    let s = 0;
    for (let k = 0; k < 256; k++) s += a[k] * b[k * 200 + j];
    return s;
  });
  await tf.setBackend("cpu");
  const enc = createEncoder(
    { type: "transformer", dim: 64, vocab_size: 512, hidden: 128, layers: 1, heads: 2, max_len: 64, dropout: 0.1, init_std: 0.02 },
    new Rng(1),
  );
  const texts = Array.from({ length: 40 }, (_, i) => `mary went to the kitchen ${i} then the garden`);
  const y = enc.forward(enc.packActions(texts, 32), false);
  const out = { product, emb: Array.from(y.dataSync().slice(0, 50)), embShape: [...y.shape] };
  y.dispose();
  enc.dispose();
  return out;
}

const maxDiff = (a: number[], b: number[]) => Math.max(...a.map((v, i) => Math.abs(v - b[i])));

test("2 wasm threads: same results as 1 thread, shims removed, temp files gone, process exits", async () => {
  const [one, two] = [await child(1), await child(2)];
  assert.match(one.device, /^wasm \(1 thread(, SIMD)?\)$/);
  assert.match(two.device, /^wasm \(2 threads(, SIMD)?\)$/);
  assert.ok(two.nativeBlob, "the global Blob is restored after initialisation");
  assert.deepEqual(two.tmpLeft, [], "the worker/main scripts written for emscripten are removed");

  const ref = await reference();
  assert.deepEqual(ref.embShape, [40, 64], "the encoder embeds 40 texts into 64 dimensions");
  // the reference is a real, varied embedding (so agreeing with it means something)
  assert.ok(Math.max(...ref.emb) - Math.min(...ref.emb) > 0.01, `reference embedding spread: ${ref.emb.slice(0, 8)}`);
  for (const [name, r] of [["1 thread", one], ["2 threads", two]] as const) {
    assert.equal(r.product.length, 50, `${name}: the first 50 matMul entries`);
    assert.equal(r.emb.length, 50, `${name}: the first 50 values of the [40, 64] embedding`);
    assert.ok([...r.product, ...r.emb].every(Number.isFinite), `${name}: finite values`);
    // a 256-term float32 dot product of values up to ~10 against float64
    assert.ok(maxDiff(r.product, ref.product) < 1e-3, `${name}: matMul vs plain JS, max |Δ| ${maxDiff(r.product, ref.product)}`);
    assert.ok(maxDiff(r.emb, ref.emb) < 1e-5, `${name}: embedding vs the cpu backend, max |Δ| ${maxDiff(r.emb, ref.emb)}`);
  }
  assert.ok(maxDiff(two.product, one.product) < 1e-4, `matMul 2 vs 1 thread, max |Δ| ${maxDiff(two.product, one.product)}`);
  assert.ok(maxDiff(two.emb, one.emb) < 1e-5, `embedding 2 vs 1 thread, max |Δ| ${maxDiff(two.emb, one.emb)}`);
});
