/**
 * Model building blocks: backend picker, mm / embedScatter / embedBag / segmentMean gradients
 * against tfjs's own ops on the cpu backend (and explicitly cpu vs wasm), gelu, layerNorm,
 * dropout, and the per-head attention against the dense reference.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs";
import { parseBackendPref, pickBackend } from "../server/qrag/backend/pick.ts";
import { wasmThreadsWanted } from "../server/qrag/backend/wasm-threads.ts";
import {
  dropout,
  dropoutMask,
  embedBag,
  embedScatter,
  gelu,
  layerNorm,
  mm,
  nextPow2,
  segmentMean,
} from "../server/qrag/model/ops.ts";
import { attentionBatched, attentionPerHead, denseLayout } from "../server/qrag/model/attention.ts";
import { Rng } from "../server/qrag/util/rng.ts";

const info = await pickBackend("wasm");

type Arrays = Float32Array[];
type Fn = (...xs: tf.Tensor[]) => tf.Tensor;

/** Value and gradients of sum(f(xs) ⊙ w) on the named backend, as plain arrays. */
async function valueAndGrads(backend: string, f: Fn, inputs: { data: Float32Array; shape: number[] }[], seed = 3): Promise<Arrays> {
  if (backend === "wasm") await pickBackend("wasm");
  else await tf.setBackend(backend);
  try {
    let out: Arrays = [];
    tf.tidy(() => {
      const xs = inputs.map((x) => tf.tensor(x.data, x.shape));
      const y = f(...xs);
      const w = tf.tensor(randArray(y.size, new Rng(seed)), y.shape);
      const g = tf.grads((...a: tf.Tensor[]) => tf.sum(tf.mul(f(...a), w)))(xs);
      out = [y, ...g].map((t) => Float32Array.from(t.dataSync() as Float32Array));
    });
    return out;
  } finally {
    await pickBackend("wasm");
  }
}

function randArray(n: number, rng: Rng, scale = 1): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = rng.normal() * scale;
  return a;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length, "length");
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

function assertClose(a: Arrays, b: Arrays, tol: number, what: string): void {
  assert.equal(a.length, b.length);
  a.forEach((x, i) => {
    const d = maxAbsDiff(x, b[i]);
    assert.ok(d <= tol, `${what}: output ${i} differs by ${d} (tol ${tol})`);
  });
}

test("pickBackend: wasm by default, idempotent, clear errors", async () => {
  assert.equal(info.backend, "wasm");
  const threads = wasmThreadsWanted();
  assert.match(info.device, threads === 1 ? /^wasm \(1 thread(, SIMD)?\)$/ : new RegExp(`^wasm \\(${threads} threads(, SIMD)?\\)$`));
  const again = await pickBackend("wasm");
  assert.deepEqual(again, info);
  assert.equal(tf.getBackend(), "wasm");
  assert.throws(() => parseBackendPref("quantum"), /unknown tfjs backend "quantum"/);
  assert.equal(parseBackendPref("tfjs-node-gpu"), "tensorflow-gpu");
  await assert.rejects(pickBackend("tensorflow"), /@tensorflow\/tfjs-node-gpu is not installed.*; @tensorflow\/tfjs-node is not installed/);
  await assert.rejects(pickBackend("gpu"), /@tensorflow\/tfjs-node-gpu is not installed/);
  assert.equal(tf.getBackend(), "wasm", "a failed forced pick leaves the backend alone");
  const cpu = await pickBackend("cpu");
  assert.deepEqual(cpu, { backend: "cpu", device: "cpu" });
  assert.deepEqual(await pickBackend("wasm"), info);
});

test("mm gradients equal tf.matMul gradients (cpu reference; cpu vs wasm explicit)", async () => {
  const rng = new Rng(1);
  const cases: [number[], number[]][] = [
    [[5, 7], [7, 3]],
    [[4, 6, 5], [4, 5, 3]],
    [[2, 6, 5], [5, 4]],
    [[3, 2], [2, 9]], // wide output: transposed weight-gradient path
  ];
  for (const [sa, sb] of cases) {
    const inputs = [sa, sb].map((shape) => ({ shape, data: randArray(shape.reduce((x, y) => x * y, 1), rng) }));
    const ref = (a: tf.Tensor, b: tf.Tensor) =>
      b.rank === 2 && a.rank === 3
        ? tf.reshape(tf.matMul(tf.reshape(a, [-1, a.shape[2] as number]) as tf.Tensor2D, b as tf.Tensor2D), [a.shape[0], a.shape[1] as number, b.shape[1] as number])
        : tf.matMul(a as tf.Tensor3D, b as tf.Tensor3D);
    const cpuRef = await valueAndGrads("cpu", ref as Fn, inputs);
    const cpuMm = await valueAndGrads("cpu", mm as Fn, inputs);
    const wasmMm = await valueAndGrads("wasm", mm as Fn, inputs);
    assertClose(cpuMm, cpuRef, 1e-5, `mm vs matMul on cpu ${sa}·${sb}`);
    assertClose(wasmMm, cpuRef, 1e-4, `mm on wasm vs matMul on cpu ${sa}·${sb}`);
  }
});

test("embedScatter equals tf.gather (value and gradient, repeated ids; cpu vs wasm)", async () => {
  const rng = new Rng(2);
  const V = 11, D = 6;
  const ids = Int32Array.from([3, 0, 3, 10, 7, 3, 1]);
  const inputs = [{ shape: [V, D], data: randArray(V * D, rng) }];
  const cpuGather = await valueAndGrads("cpu", ((t: tf.Tensor) => tf.gather(t, tf.tensor1d(ids, "int32"))) as Fn, inputs);
  const cpuScatter = await valueAndGrads("cpu", ((t: tf.Tensor) => embedScatter(t as tf.Tensor2D, ids)) as Fn, inputs);
  const wasmScatter = await valueAndGrads("wasm", ((t: tf.Tensor) => embedScatter(t as tf.Tensor2D, tf.tensor1d(ids, "int32"))) as Fn, inputs);
  assertClose(cpuScatter, cpuGather, 1e-6, "embedScatter cpu");
  assertClose(wasmScatter, cpuGather, 1e-6, "embedScatter wasm vs gather cpu");
  assert.throws(() => tf.tidy(() => embedScatter(tf.zeros([V, D]) as tf.Tensor2D, Int32Array.from([V]))), /outside/);
});

test("embedBag is the masked mean of embeddings with the gather gradient", async () => {
  const rng = new Rng(3);
  const V = 9, D = 4, B = 4, L = 4;
  // row 1 empty (middle), row 3 empty (last row)
  const ids = Int32Array.from([1, 5, 5, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
  const mask = Float32Array.from([1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
  const inputs = [{ shape: [V, D], data: randArray(V * D, rng) }];
  const ref = (t: tf.Tensor) => {
    const g = tf.reshape(tf.gather(t, tf.tensor1d(ids, "int32")), [B, L, D]);
    const sums = tf.sum(tf.mul(g, tf.tensor3d(mask, [B, L, 1])), 1);
    return tf.mul(sums, tf.tensor2d([1 / 3, 0, 1, 0], [B, 1]));
  };
  const cpuRef = await valueAndGrads("cpu", ref as Fn, inputs);
  const wasmBag = await valueAndGrads("wasm", ((t: tf.Tensor) => embedBag(t as tf.Tensor2D, ids, mask, B, L)) as Fn, inputs);
  assertClose(wasmBag, cpuRef, 1e-6, "embedBag");
  assert.ok(wasmBag[0].slice(D, 2 * D).every((x) => x === 0) && wasmBag[0].slice(3 * D).every((x) => x === 0), "empty rows give 0");
});

test("segmentMean equals a gather-based mean (value and gradient)", async () => {
  const rng = new Rng(4);
  const lengths = [2, 0, 3, 1, 0];
  const R = 6, D = 3;
  const inputs = [{ shape: [R, D], data: randArray(R * D, rng) }];
  const ref = (x: tf.Tensor) => {
    const rows: tf.Tensor[] = [];
    let r = 0;
    for (const L of lengths) {
      rows.push(L === 0 ? tf.zeros([D]) : tf.mul(tf.mean(tf.slice(x, [r, 0], [L, D]), 0), 0.1));
      r += L;
    }
    return tf.stack(rows);
  };
  const cpuRef = await valueAndGrads("cpu", ref as Fn, inputs);
  const wasmSeg = await valueAndGrads("wasm", ((x: tf.Tensor) => segmentMean(x as tf.Tensor2D, lengths, 0.1)) as Fn, inputs);
  assertClose(wasmSeg, cpuRef, 1e-6, "segmentMean");
});

test("gelu (erf and tanh) values and gradients", async () => {
  const xs = Float32Array.from([-3, -1, -0.5, 0, 0.3, 1, 2.5]);
  const inputs = [{ shape: [xs.length], data: xs }];
  // Autodiff of the textbook formulas on cpu as the reference.
  const erfRef = (x: tf.Tensor) => tf.mul(tf.mul(x, 0.5), tf.add(tf.erf(tf.mul(x, Math.SQRT1_2)), 1));
  const c = Math.sqrt(2 / Math.PI);
  const tanhRef = (x: tf.Tensor) =>
    tf.mul(tf.mul(x, 0.5), tf.add(tf.tanh(tf.mul(tf.add(x, tf.mul(tf.mul(tf.mul(x, x), x), 0.044715)), c)), 1));
  assertClose(await valueAndGrads("wasm", ((x: tf.Tensor) => gelu(x, "erf")) as Fn, inputs), await valueAndGrads("cpu", erfRef as Fn, inputs), 2e-6, "gelu erf");
  assertClose(await valueAndGrads("wasm", ((x: tf.Tensor) => gelu(x, "tanh")) as Fn, inputs), await valueAndGrads("cpu", tanhRef as Fn, inputs), 2e-6, "gelu tanh");
  // Known values: GELU(1) = Φ(1) = 0.8413447, GELU(−1) = −0.1586553.
  const v = tf.tidy(() => gelu(tf.tensor1d([1, -1])).dataSync());
  assert.ok(Math.abs(v[0] - 0.8413447) < 1e-6 && Math.abs(v[1] + 0.1586553) < 1e-6, `gelu(±1) = ${v}`);
});

test("layerNorm matches the composite formula (value and all gradients)", async () => {
  const rng = new Rng(5);
  const inputs = [
    { shape: [2, 3, 8], data: randArray(48, rng, 2) },
    { shape: [8], data: randArray(8, rng) },
    { shape: [8], data: randArray(8, rng) },
  ];
  const ref = (x: tf.Tensor, g: tf.Tensor, b: tf.Tensor) => {
    const { mean, variance } = tf.moments(x, -1, true);
    return tf.add(tf.mul(tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, 1e-5))), g), b);
  };
  const cpuRef = await valueAndGrads("cpu", ref as Fn, inputs);
  const wasmLn = await valueAndGrads("wasm", ((x: tf.Tensor, g: tf.Tensor, b: tf.Tensor) => layerNorm(x, g as tf.Tensor1D, b as tf.Tensor1D)) as Fn, inputs);
  assertClose(wasmLn, cpuRef, 2e-5, "layerNorm");
});

test("dropout: identity unless training; seeded masks with the right rate and scale", () => {
  tf.tidy(() => {
    const x = tf.ones([200, 50]);
    assert.equal(dropout(x, 0.1, false, new Rng(1)), x, "eval mode returns the input tensor");
    assert.equal(dropout(x, 0, true, new Rng(1)), x, "rate 0 returns the input tensor");
    const a = dropout(x, 0.25, true, new Rng(9)).dataSync();
    const b = dropout(x, 0.25, true, new Rng(9)).dataSync();
    assert.deepEqual(a, b, "same seed, same mask");
    let zeros = 0;
    for (const v of a) {
      if (v === 0) zeros++;
      else assert.ok(Math.abs(v - 1 / 0.75) < 1e-6, `kept value ${v}`);
    }
    assert.ok(Math.abs(zeros / a.length - 0.25) < 0.02, `drop fraction ${zeros / a.length}`);
  });
  const m = dropoutMask(100001, 0.1, new Rng(2));
  let mean = 0;
  for (const v of m) mean += v;
  assert.ok(Math.abs(mean / m.length - 1) < 0.01, `mask mean ${mean / m.length}`);
  assert.deepEqual([nextPow2(0), nextPow2(1), nextPow2(26), nextPow2(32), nextPow2(33)], [1, 1, 32, 32, 64]);
});

test("per-head attention equals the dense −1e9-masked reference on real rows (value and gradients)", () => {
  const rng = new Rng(6);
  const B = 3, T = 8, d = 16, H = 4, N = B * T;
  const mask = new Float32Array(N);
  const lens = [8, 5, 1];
  for (let b = 0; b < B; b++) for (let t = 0; t < lens[b]; t++) mask[b * T + t] = 1;
  const real = new Float32Array(N * d);
  for (let r = 0; r < N; r++) if (mask[r]) real.fill(1, r * d, (r + 1) * d);
  tf.tidy(() => {
    const q = tf.tensor2d(randArray(N * d, rng), [N, d]);
    const k = tf.tensor2d(randArray(N * d, rng), [N, d]);
    const v = tf.tensor2d(randArray(N * d, rng), [N, d]);
    // Weights only on real rows: PAD query rows differ by design (0 in the per-head version).
    const w = tf.mul(tf.tensor2d(randArray(N * d, rng), [N, d]), tf.tensor2d(real, [N, d]));
    const dense = (a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) =>
      attentionBatched(a as tf.Tensor2D, b as tf.Tensor2D, c as tf.Tensor2D, { batch: B, len: T, heads: H, mask, dropout: 0, training: false });
    const perHead = (a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) =>
      attentionPerHead(a as tf.Tensor2D, b as tf.Tensor2D, c as tf.Tensor2D, { heads: H, layout: denseLayout(mask, B, T), dropout: 0, training: false });
    const yd = tf.mul(dense(q, k, v), w).dataSync();
    const yp = tf.mul(perHead(q, k, v), w).dataSync();
    assert.ok(maxAbsDiff(yd, yp) < 1e-5, "forward");
    const gd = tf.grads((a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) => tf.sum(tf.mul(dense(a, b, c), w)))([q, k, v]);
    const gp = tf.grads((a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) => tf.sum(tf.mul(perHead(a, b, c), w)))([q, k, v]);
    for (let i = 0; i < 3; i++) assert.ok(maxAbsDiff(gd[i].dataSync(), gp[i].dataSync()) < 1e-5, `grad ${i}`);
    // With dropout: a seeded run is reproducible, and its gradient is consistent with its value
    // (f is linear in v, so ⟨∂f/∂v, v⟩ = f).
    const args = { heads: H, layout: denseLayout(mask, B, T), dropout: 0.3, training: true };
    const f1 = tf.sum(tf.mul(attentionPerHead(q, k, v, { ...args, rng: new Rng(7) }), w)).dataSync()[0];
    const gv = tf.grad((c: tf.Tensor) => tf.sum(tf.mul(attentionPerHead(q, k, c as tf.Tensor2D, { ...args, rng: new Rng(7) }), w)))(v);
    const lin = tf.sum(tf.mul(gv, v)).dataSync()[0];
    assert.ok(Math.abs(f1 - lin) < 1e-4 * Math.max(1, Math.abs(f1)), `dropout grad consistency ${f1} vs ${lin}`);
    // Grouping of (sequence, head) blocks into shared matmuls changes nothing, dropout included
    // (masks are drawn per block): one block per group, the default, and everything in one group.
    const outs = [1, undefined, 1000].map((groupRows) => {
      const fn = (c: tf.Tensor) => tf.sum(tf.mul(attentionPerHead(q, k, c as tf.Tensor2D, { ...args, rng: new Rng(8), groupRows }), w));
      return [fn(v).dataSync()[0], ...tf.grad(fn)(v).dataSync()];
    });
    assert.ok(maxAbsDiff(outs[0], outs[1]) < 1e-5 && maxAbsDiff(outs[0], outs[2]) < 1e-5, "grouping invariance");
    const g1 = tf.grads((a: tf.Tensor, b: tf.Tensor, c: tf.Tensor) =>
      tf.sum(tf.mul(attentionPerHead(a as tf.Tensor2D, b as tf.Tensor2D, c as tf.Tensor2D, { heads: H, layout: denseLayout(mask, B, T), dropout: 0, training: false, groupRows: 1000 }), w)),
    )([q, k, v]);
    for (let i = 0; i < 3; i++) assert.ok(maxAbsDiff(gd[i].dataSync(), g1[i].dataSync()) < 1e-5, `grouped grad ${i}`);
  });
});
