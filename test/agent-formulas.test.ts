import { test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs";
import { softValue, softValueHead } from "../server/qrag/agent/soft-value.ts";
import { boltzmannTop5, greedyAction, uniformAvailable } from "../server/qrag/agent/policy.ts";
import { lambdaTargets } from "../server/qrag/agent/lambda-returns.ts";
import { lrFactor } from "../server/qrag/agent/schedule.ts";
import { AdamW, clipByGlobalNorm } from "../server/qrag/agent/adamw.ts";
import { topkIndices } from "../server/qrag/agent/topk.ts";
import { Rng } from "../server/qrag/util/rng.ts";

const f32 = (a: number[]) => Float32Array.from(a);
const u8 = (a: number[]) => Uint8Array.from(a);
const close = (a: number, b: number, tol = 1e-6, msg = "") => assert.ok(Math.abs(a - b) <= tol, `${msg} ${a} vs ${b}`);
const closeAll = (a: ArrayLike<number>, b: number[], tol = 1e-6) => {
  assert.equal(a.length, b.length);
  for (let i = 0; i < b.length; i++) close(a[i], b[i], tol, `[${i}]`);
};

test("topk: largest first, ties to the lower index, k > N", () => {
  assert.deepEqual(topkIndices([1, 3, 2, 3, 0], 3), [1, 3, 2]);
  assert.deepEqual(topkIndices([1, 2], 5), [1, 0]);
  assert.deepEqual(topkIndices([], 5), []);
});

test("soft value: top-5 over all candidates, masked max sets m but adds nothing", () => {
  // index 6 (2.0) is unavailable but in the top-5 (it sets m); index 4 (0.6) is available but
  // not in the top-5, so it is ignored. Available top-5 members: 1.0, 0.9, 0.8, 0.7.
  const q = f32([1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 2.0]);
  const avail = u8([1, 1, 1, 1, 1, 1, 0]);
  // 2 + 0.1·ln(e^-10 + e^-11 + e^-12 + e^-13) = 1 + 0.1·ln(1 + e^-1 + e^-2 + e^-3)
  const hand = 1 + 0.1 * Math.log(1 + Math.exp(-1) + Math.exp(-2) + Math.exp(-3));
  close(softValueHead(q, avail, 0.1), hand, 2e-6);
  close(hand, 1.0440190, 1e-7);
});

test("soft value: all top-5 masked → max − 23.03·α; N < 5; v1 + v2; α = 0", () => {
  const q = f32([5, 4, 3, 2, 1, 0]);
  const avail = u8([0, 0, 0, 0, 0, 1]); // only index 5 available, outside the top-5
  close(softValueHead(q, avail, 0.01), 5 - 0.2302585, 1e-6);
  close(softValueHead(q, avail, 0.01), 5 + 0.01 * Math.log(1e-10), 1e-6);
  // N = 2 < k: top-2, m = 0.3, v = 0.3 + 0.5·ln(1 + e^-0.4)
  const a = f32([0.3, 0.1]);
  const b = f32([-0.2, 0.4]);
  const both = u8([1, 1]);
  const va = 0.3 + 0.5 * Math.log(1 + Math.exp(-0.4));
  const vb = 0.4 + 0.5 * Math.log(1 + Math.exp(-1.2));
  close(softValueHead(a, both, 0.5), va);
  close(softValue(a, b, both, 0.5), va + vb);
  // one of two masked: only the other contributes, m is still the max of both
  close(softValueHead(a, u8([0, 1]), 0.5), 0.3 + 0.5 * Math.log(Math.exp(-0.4)), 1e-6);
  // α = 0 → hard max over available top-k (no NaN); nothing available → m
  close(softValueHead(a, u8([0, 1]), 0), 0.1);
  close(softValueHead(q, avail, 0), 5);
  // k = 1 keeps only the maximum
  close(softValueHead(a, both, 0.5, 1), 0.3);
});

test("greedy and uniform actions respect the mask", () => {
  assert.equal(greedyAction(f32([0.1, 0.9, 0.9, 2]), u8([1, 1, 1, 0])), 1);
  assert.throws(() => greedyAction(f32([1]), u8([0])), RangeError);
  const rng = new Rng(3);
  const counts = [0, 0, 0, 0, 0];
  for (let i = 0; i < 6000; i++) counts[uniformAvailable(u8([1, 0, 1, 0, 1]), rng)]++;
  assert.equal(counts[1] + counts[3], 0);
  for (const i of [0, 2, 4]) assert.ok(Math.abs(counts[i] - 2000) < 200, `${counts}`);
});

test("boltzmann: only top-5 available, frequencies = softmax((l − max)/α) over them", () => {
  const logits = f32([1.0, 0.95, 0.9, 0.5, 0.97, 0.3, 2.0, 0.85]);
  const avail = u8([1, 1, 1, 1, 1, 1, 0, 1]);
  const alpha = 0.05;
  const top = [0, 4, 1, 2, 7]; // top-5 among the available by logit
  const w = top.map((j) => Math.exp((logits[j] - 1.0) / alpha));
  const Z = w.reduce((s, x) => s + x, 0);
  const rng = new Rng(11);
  const n = 20000;
  const counts = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const a = boltzmannTop5(logits, avail, alpha, rng);
    counts.set(a, (counts.get(a) ?? 0) + 1);
  }
  for (const j of counts.keys()) assert.ok(top.includes(j), `picked ${j} outside the available top-5`);
  top.forEach((j, t) => close((counts.get(j) ?? 0) / n, w[t] / Z, 0.015, `p(${j})`));
  // fewer than 5 available: top-5 includes masked slots (min − 1), which get probability 0
  const few = u8([1, 0, 0, 1, 0, 0, 0, 0]);
  let zero = 0;
  for (let i = 0; i < n; i++) {
    const a = boltzmannTop5(logits, few, 0.5, rng);
    assert.ok(a === 0 || a === 3);
    if (a === 0) zero++;
  }
  close(zero / n, 1 / (1 + Math.exp(-1)), 0.015, "p(0)"); // exp(0) vs exp((0.5 − 1)/0.5)
  assert.equal(boltzmannTop5(logits, avail, 0, rng), 0); // α = 0 → greedy, no NaN
  assert.equal(boltzmannTop5(logits, avail, 1e-30, rng), 0);
});

// Small hand example, γ = 0.9, λ = 0.5, L = 4 (3 targets per row).
//   row 0: R = [0, 0, 1, .3], ND = [1, 1, 1, 1], V = [.2, .4, .6, .8]
//     G[2] = 1 + .9·.8 = 1.72 (both modes)
//     intended:  G[1] = .9·(.5·.6 + .5·1.72) = 1.044;   G[0] = .9·(.5·.4 + .5·1.044) = .6498
//     reference: nq = ND[2]·V[3] = .8 (not V[2] = .6):
//                G[1] = .9·.8 + .45·(1.72 − .8) = 1.134; nq = V[1] = .4
//                G[0] = .9·.4 + .45·(1.134 − .4) = .6903
//   row 1 (terminal in the middle): R = [0, 1, 0, 0], ND = [1, 0, 1, 1], V = [.5, .7, .1, .3]
//     G[2] = .9·.3 = .27; G[1] = R[1] = 1 (both); G[0] = .9·(.5·.7 + .5·1) = .765 (both)
const rows = {
  reward: f32([0, 0, 1, 0.3, 0, 1, 0, 0]),
  notDone: f32([1, 1, 1, 1, 1, 0, 1, 1]),
  value: f32([0.2, 0.4, 0.6, 0.8, 0.5, 0.7, 0.1, 0.3]),
};

test("λ-returns: intended and reference forms by hand (E = 2, L = 4)", () => {
  closeAll(lambdaTargets(rows, 2, 4, 0.9, 0.5, "intended"), [0.6498, 1.044, 1.72, 0.765, 1, 0.27]);
  closeAll(lambdaTargets(rows, 2, 4, 0.9, 0.5, "reference"), [0.6903, 1.134, 1.72, 0.765, 1, 0.27]);
  // E = 1 gives the first row alone
  const one = { reward: rows.reward.slice(0, 4), notDone: rows.notDone.slice(0, 4), value: rows.value.slice(0, 4) };
  closeAll(lambdaTargets(one, 1, 4, 0.9, 0.5), [0.6498, 1.044, 1.72]);
  assert.throws(() => lambdaTargets(one, 2, 4, 0.9, 0.5), RangeError);
});

test("λ-returns: the modes differ exactly at t = L−3, and only propagate from there", () => {
  const I = lambdaTargets(rows, 2, 4, 0.9, 0.5, "intended");
  const R = lambdaTargets(rows, 2, 4, 0.9, 0.5, "reference");
  // t = L−2 agrees; t = L−3 differs by γ·(1−λ)·(nd[L−2]·V[L−1] − V[L−2]) = .45·(.8 − .6) = .09
  close(R[2] - I[2], 0, 0);
  close(R[1] - I[1], 0.09, 1e-6);
  // earlier targets differ only through G[t+1]: by γλ·nd_t times the difference after them
  close(R[0] - I[0], 0.45 * 0.09, 1e-6);
  // with λ = 0 nothing propagates: only t = L−3 differs
  const I0 = lambdaTargets(rows, 2, 4, 0.9, 0, "intended");
  const R0 = lambdaTargets(rows, 2, 4, 0.9, 0, "reference");
  const diff = Array.from(R0, (x, i) => Math.abs(x - I0[i]) > 1e-7);
  assert.deepEqual(diff, [false, true, false, false, false, false]);
  // the reference is the intended recursion with V[L−2] replaced by nd[L−2]·V[L−1]
  const patched = { ...rows, value: rows.value.slice() };
  patched.value[2] = rows.notDone[2] * rows.value[3];
  patched.value[6] = rows.notDone[6] * rows.value[7];
  closeAll(lambdaTargets(patched, 2, 4, 0.9, 0.5, "intended"), Array.from(R));
  // a terminal last kept transition does not bootstrap: G[L−2] = r
  const term = { reward: f32([0, 0, 0.7, 5]), notDone: f32([1, 1, 0, 1]), value: f32([0, 0, 0, 9]) };
  for (const mode of ["intended", "reference"] as const) closeAll(lambdaTargets(term, 1, 4, 0.9, 0.5, mode), [0.9 * 0.5 * 0.9 * 0.5 * 0.7, 0.9 * 0.5 * 0.7, 0.7]);
});

test("schedules: warm-up linear (incl. the jump when ratio > 0), quarter cosine, constant", () => {
  const wl = { type: "warmup_linear" as const, warmup: 1000, total: 50000, ratio: 0 };
  for (const [s, f] of [[0, 0], [500, 0.5], [1000, 1], [25500, 0.5], [50000, 0], [60000, 0]]) close(lrFactor(s, wl), f, 1e-12, `wl@${s}`);
  const wr = { type: "warmup_linear" as const, warmup: 1000, total: 10000, ratio: 0.1 };
  close(lrFactor(500, wr), 0.45, 1e-12);
  close(lrFactor(999, wr), 0.9 * 0.999, 1e-12); // warm-up only reaches 1 − ratio …
  close(lrFactor(1000, wr), 1, 1e-12); // … then jumps to 1
  close(lrFactor(5500, wr), 0.55, 1e-12);
  close(lrFactor(10000, wr), 0.1, 1e-12);
  const cos = { type: "cosine" as const, warmup: 1000, total: 10000, ratio: 0.1 };
  close(lrFactor(500, cos), 0.5, 1e-12);
  close(lrFactor(1000, cos), 1, 1e-12);
  close(lrFactor(5500, cos), 0.1 + 0.9 * Math.SQRT1_2, 1e-12); // cos(π/4) at half way
  close(lrFactor(10000, cos), 0.1, 1e-12);
  close(lrFactor(20000, cos), 0.1, 1e-12);
  const c = { type: "constant" as const, warmup: 0, total: 100, ratio: 0 };
  close(lrFactor(0, c), 1, 0);
  // α follows the LR: α0 · lr_t/lr0
  close(0.01 * lrFactor(500, wl), 0.005, 1e-15);
});

test("AdamW: one and two steps on a scalar with weight decay, by hand", () => {
  const p = tf.variable(tf.scalar(1.0), true, "adamw_p1");
  const opt = new AdamW([p], { beta1: 0.9, beta2: 0.98, eps: 1e-6, weightDecay: 0.01 });
  const before = tf.memory().numTensors;
  const g1 = tf.scalar(0.5);
  opt.step([g1], 0.1);
  // p ← 1·(1 − .1·.01) = .999; m = .05, v = .02·.25 = .005; m̂ = .5, √v̂ = √(.005/.02) = .5
  const p1 = 0.999 - (0.1 / (1 - 0.9)) * 0.05 / (Math.sqrt(0.005) / Math.sqrt(1 - 0.98) + 1e-6);
  close(p1, 0.8990002, 1e-7);
  close(p.dataSync()[0], p1, 1e-6);
  const saved = opt.getState();
  // step 2, g = −.2: m = .9·.05 − .1·.2 = .025; v = .98·.005 + .02·.04 = .0057
  const g2 = tf.scalar(-0.2);
  opt.step({ adamw_p1: g2 }, 0.1);
  const p2 = p1 * 0.999 - (0.1 / (1 - 0.81)) * 0.025 / (Math.sqrt(0.0057) / Math.sqrt(1 - 0.9604) + 1e-6);
  close(p.dataSync()[0], p2, 1e-6);
  assert.equal(tf.memory().numTensors, before + 2, "only the two gradients we created are new"); // no leaks
  assert.deepEqual([saved.stepCount, saved.steps, Array.from(saved.m[0]), saved.names], [1, [1], [Math.fround(0.05)], ["adamw_p1"]]);
  close(saved.v[0][0], 0.005, 1e-9);
  // restoring the state into a fresh optimizer reproduces step 2
  const q = tf.variable(tf.scalar(p1), true, "adamw_q1");
  const opt2 = new AdamW([q]);
  opt2.setState(saved);
  opt2.step([g2], 0.1);
  close(q.dataSync()[0], p2, 1e-6);
  // a variable without a gradient is left alone (torch skips params whose grad is None)
  const r = tf.variable(tf.scalar(3), true, "adamw_r1");
  const opt3 = new AdamW([p, r]);
  opt3.step([g1, null], 0.1);
  assert.equal(r.dataSync()[0], 3);
  assert.deepEqual(opt3.getState().steps, [1, 0]);
  for (const x of [g1, g2, p, q, r]) x.dispose();
  opt.dispose();
  opt2.dispose();
  opt3.dispose();
});

test("clipByGlobalNorm: torch scaling max_norm/(norm + 1e-6) only when < 1", () => {
  const a = tf.tensor1d([3]);
  const b = tf.tensor2d([[4, 0]]);
  const before = tf.memory().numTensors;
  const { grads, norm } = clipByGlobalNorm([a, b], 2);
  close(norm, 5, 1e-6);
  const s = 2 / (5 + 1e-6);
  closeAll(grads[0].dataSync(), [3 * s]);
  closeAll(grads[1].dataSync(), [4 * s, 0]);
  const big = clipByGlobalNorm({ x: a, y: b }, 10);
  close(big.norm, 5, 1e-6);
  closeAll(big.grads.x.dataSync(), [3]);
  assert.equal(tf.memory().numTensors, before + 4); // just the returned tensors
  tf.dispose([a, b, ...grads, big.grads.x, big.grads.y]);
});
