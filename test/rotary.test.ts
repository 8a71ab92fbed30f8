/**
 * Rotary positions of action embeddings (docs/method.md §2.3): hand-computed values, identical
 * rotation of both halves, floored/clamped positions, tf vs JS paths, the fused candidate scorer
 * against twinQ, and its speed at N = 400,000.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs";
import { pickBackend } from "../server/qrag/backend/pick.ts";
import { Rotary, defaultRotary, positionsNone, rotateJs, rotateTf, scoreCandidates } from "../server/qrag/model/rotary.ts";
import { twinQ, twinQAll } from "../server/qrag/model/qfunction.ts";
import { Rng } from "../server/qrag/util/rng.ts";

await pickBackend("wasm");

function randArray(n: number, rng: Rng): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = rng.normal();
  return a;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

test("D=8 rotation at positions 1 and 3 matches hand-computed values", () => {
  // D = 8 → each half has h = 4 dims = 2 pairs; freqs = 10000^(−2k/4) = [1, 0.01].
  const x = Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]);
  const rot = (p: number): number[] => {
    const c0 = Math.cos(p * 1), s0 = Math.sin(p * 1);
    const c1 = Math.cos(p * 0.01), s1 = Math.sin(p * 0.01);
    return [
      1 * c0 - 2 * s0, 2 * c0 + 1 * s0, // pair (x0, x1), θ0
      3 * c1 - 4 * s1, 4 * c1 + 3 * s1, // pair (x2, x3), θ1
      5 * c0 - 6 * s0, 6 * c0 + 5 * s0, // second half, same angles
      7 * c1 - 8 * s1, 8 * c1 + 7 * s1,
    ];
  };
  const out = new Float32Array(16);
  const two = new Float32Array(16);
  two.set(x, 0);
  two.set(x, 8);
  rotateJs(two, 2, 8, Int32Array.from([1, 3]), out);
  assert.ok(maxAbsDiff(out.subarray(0, 8), rot(1)) < 1e-6, `p=1: ${out.subarray(0, 8)}`);
  assert.ok(maxAbsDiff(out.subarray(8), rot(3)) < 1e-6, `p=3: ${out.subarray(8)}`);
  const viaTf = tf.tidy(() => rotateTf(tf.tensor2d(two, [2, 8]), Int32Array.from([1, 3])).dataSync());
  assert.ok(maxAbsDiff(viaTf, [...rot(1), ...rot(3)]) < 1e-6, "rotateTf");
  // Position 0 is the identity.
  rotateJs(x, 1, 8, Int32Array.from([0]), out);
  assert.ok(maxAbsDiff(out.subarray(0, 8), x) < 1e-7);
});

test("both halves rotate identically; positions are floored and clamped to the table", () => {
  const D = 128;
  const rng = new Rng(1);
  const half = randArray(D / 2, rng);
  const x = new Float32Array(D);
  x.set(half, 0);
  x.set(half, D / 2);
  const out = new Float32Array(D);
  rotateJs(x, 1, D, Int32Array.from([37]), out);
  assert.deepEqual(out.subarray(0, D / 2), out.subarray(D / 2));
  const r = defaultRotary(D);
  assert.equal(r.half, 64);
  assert.equal(r.pairs, 32);
  assert.equal(r.maxPositions, 1000);
  const at = (p: number) => {
    const o = new Float32Array(D);
    rotateJs(x, 1, D, [p], o);
    return o;
  };
  assert.deepEqual(at(2.7), at(2));
  assert.deepEqual(at(17.999), at(17));
  assert.deepEqual(at(-3), at(0));
  assert.deepEqual(at(5000), at(999));
  assert.notDeepEqual(at(998), at(999));
  const viaTf = tf.tidy(() => rotateTf(tf.tensor2d(x, [1, D]), [2.7]).dataSync());
  assert.ok(maxAbsDiff(viaTf, at(2)) < 1e-6, "rotateTf floors too");
  // Rotation is orthogonal: norms are preserved.
  const n0 = x.reduce((s, v) => s + v * v, 0), n1 = at(123).reduce((s, v) => s + v * v, 0);
  assert.ok(Math.abs(n0 - n1) < 1e-4 * n0);
});

test("rotateTf equals rotateJs; its gradient is Rᵀ·dy", () => {
  const D = 32, B = 50;
  const rng = new Rng(2);
  const raw = randArray(B * D, rng);
  const pos = new Int32Array(B);
  for (let i = 0; i < B; i++) pos[i] = rng.int(140);
  const js = new Float32Array(B * D);
  rotateJs(raw, B, D, pos, js);
  tf.tidy(() => {
    const x = tf.tensor2d(raw, [B, D]);
    assert.ok(maxAbsDiff(rotateTf(x, pos).dataSync(), js) < 1e-5);
    // f(x) = <w, R x> is linear, so f(x) = <∇f, x> for any x, and ∇f = Rᵀw has |w|'s norm.
    const w = tf.tensor2d(randArray(B * D, rng), [B, D]);
    const f = (t: tf.Tensor) => tf.sum(tf.mul(w, rotateTf(t as tf.Tensor2D, pos)));
    const g = tf.grad(f)(x);
    for (const probe of [x, tf.tensor2d(randArray(B * D, rng), [B, D])]) {
      const lhs = f(probe).dataSync()[0];
      const rhs = tf.sum(tf.mul(g, probe)).dataSync()[0];
      assert.ok(Math.abs(lhs - rhs) < 1e-3, `${lhs} vs ${rhs}`);
    }
    const gn = tf.sum(tf.square(g)).dataSync()[0], wn = tf.sum(tf.square(w)).dataSync()[0];
    assert.ok(Math.abs(gn - wn) < 1e-3 * wn);
    // Disabled rotary / positionsNone: identity.
    assert.equal(rotateTf(x, positionsNone), x);
    assert.equal(new Rotary(D, { mode: "none" }).rotateTf(x, pos), x);
  });
});

test("scoreCandidates equals twinQ on rotated candidates (unsorted positions, none mode)", () => {
  const D = 64, N = 1000;
  const rng = new Rng(3);
  const s = randArray(D, rng);
  const raw = randArray(N * D, rng);
  const pos = new Int32Array(N);
  for (let i = 0; i < N; i++) pos[i] = i < 600 ? Math.floor((18 * i) / 599) : rng.int(140);
  const q1 = new Float32Array(N), q2 = new Float32Array(N);
  scoreCandidates(s, raw, pos, q1, q2);
  tf.tidy(() => {
    const rotated = rotateTf(tf.tensor2d(raw, [N, D]), pos);
    const sT = tf.tile(tf.tensor2d(s, [1, D]), [N, 1]) as tf.Tensor2D;
    const ref = twinQ(sT, rotated);
    assert.ok(maxAbsDiff(q1, ref.q1.dataSync()) < 1e-4, "q1");
    assert.ok(maxAbsDiff(q2, ref.q2.dataSync()) < 1e-4, "q2");
    // twinQAll agrees with twinQ
    const all = twinQAll(tf.tensor2d(s, [1, D]), rotated);
    assert.ok(maxAbsDiff(all.q1.dataSync(), q1) < 1e-4 && maxAbsDiff(all.q2.dataSync(), q2) < 1e-4, "twinQAll");
    // Without rotation: plain split dot product.
    scoreCandidates(s, raw, positionsNone, q1, q2);
    const plain = twinQ(sT, tf.tensor2d(raw, [N, D]));
    assert.ok(maxAbsDiff(q1, plain.q1.dataSync()) < 1e-4 && maxAbsDiff(q2, plain.q2.dataSync()) < 1e-4, "none");
  });
  const none = new Rotary(D, { mode: "none" });
  const n1 = new Float32Array(N), n2 = new Float32Array(N);
  none.scoreCandidates(s, raw, pos, n1, n2);
  assert.deepEqual([n1, n2], [q1, q2]);
  // Hand check of one candidate: q1 + q2 = ⟨s, a⟩ at position 0.
  const z1 = new Float32Array(1), z2 = new Float32Array(1);
  scoreCandidates(s, raw.subarray(0, D), Int32Array.from([0]), z1, z2);
  let dot = 0;
  for (let i = 0; i < D; i++) dot += s[i] * raw[i];
  assert.ok(Math.abs(z1[0] + z2[0] - dot) < 1e-4);
});

test("twinQ: half dot products with gradients", () => {
  tf.tidy(() => {
    const s = tf.tensor2d([[1, 2, 3, 4], [0, 1, 0, 1]]);
    const a = tf.tensor2d([[1, 1, 1, 1], [2, 3, 4, 5]]);
    const { q1, q2 } = twinQ(s, a);
    assert.deepEqual(Array.from(q1.dataSync()), [3, 3]);
    assert.deepEqual(Array.from(q2.dataSync()), [7, 5]);
    const g = tf.grad((x: tf.Tensor) => {
      const r = twinQ(x as tf.Tensor2D, a);
      return tf.sum(tf.add(tf.mul(r.q1, 2), r.q2));
    })(s);
    assert.deepEqual(Array.from(g.dataSync()), [2, 2, 1, 1, 4, 6, 4, 5]);
  });
});

test("scoreCandidates handles N = 400,000 at D = 128 quickly", () => {
  const D = 128, N = 400_000;
  const rng = new Rng(4);
  const raw = new Float32Array(N * D);
  for (let i = 0; i < raw.length; i++) raw[i] = rng.next() - 0.5;
  const s = randArray(D, rng);
  const pos = new Int32Array(N);
  // Relative positions: 3 selected chunks split the document into 4 segments.
  const cuts = [0, 90_000, 250_000, 310_000, N];
  for (let k = 0; k < 4; k++) {
    const len = cuts[k + 1] - cuts[k];
    for (let j = 0; j < len; j++) pos[cuts[k] + j] = 20 * k + Math.floor((18 * j) / (len - 1));
  }
  const q1 = new Float32Array(N), q2 = new Float32Array(N);
  scoreCandidates(s, raw, pos, q1, q2); // warm-up (JIT)
  const t0 = performance.now();
  scoreCandidates(s, raw, pos, q1, q2);
  const ms = performance.now() - t0;
  console.log(`scoreCandidates N=400,000 D=128: ${ms.toFixed(1)} ms`);
  assert.ok(ms < 1000, `took ${ms} ms`);
  // Spot check a few rows against an explicit rotation.
  const one = new Float32Array(D);
  for (const j of [0, 123_456, 399_999]) {
    rotateJs(raw.subarray(j * D, (j + 1) * D), 1, D, [pos[j]], one);
    let a = 0, b = 0;
    for (let i = 0; i < D / 2; i++) a += s[i] * one[i];
    for (let i = D / 2; i < D; i++) b += s[i] * one[i];
    assert.ok(Math.abs(a - q1[j]) < 1e-4 && Math.abs(b - q2[j]) < 1e-4, `row ${j}`);
  }
});
