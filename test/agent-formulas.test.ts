import { test } from "node:test";
import assert from "node:assert/strict";
import * as tf from "@tensorflow/tfjs";
import { softValue, softValueHead } from "../server/qrag/agent/soft-value.ts";
import { boltzmannTop5, greedyAction, uniformAvailable } from "../server/qrag/agent/policy.ts";
import { lambdaTargets, withBootstrapColumn } from "../server/qrag/agent/lambda-returns.ts";
import { exploreEpsAt } from "../server/qrag/agent/iteration.ts";
import { lrFactor } from "../server/qrag/agent/schedule.ts";
import { AdamW, clipByGlobalNorm } from "../server/qrag/agent/adamw.ts";
import { topkIndices } from "../server/qrag/agent/topk.ts";
import { Learner } from "../server/qrag/agent/learner.ts";
import { QNetworks } from "../server/qrag/agent/networks.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { softValueDevice } from "../server/qrag/agent/device-scoring.ts";
import { ParallelEnvs } from "../server/qrag/agent/rollout.ts";
import { rolloutSettings } from "../server/qrag/agent/iteration.ts";
import { buildSource } from "../server/qrag/data/sources.ts";
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
  close(softValueHead(q, avail, 0.1), softValueSpec(q, avail, 0.1), 1e-9);
  // only the top-5 decides: index 4's availability changes nothing; index 6 (the max) counts once
  // it is available, and then dominates
  close(softValueHead(q, u8([1, 1, 1, 1, 0, 1, 0]), 0.1), softValueHead(q, avail, 0.1), 0);
  close(softValueHead(q, u8([1, 1, 1, 1, 1, 1, 1]), 0.1), 2 + 0.1 * Math.log(1 + Math.exp(-10) + Math.exp(-11) + Math.exp(-12) + Math.exp(-13)), 2e-6);
});

/**
 * The spec formula written out directly (independent of topkIndices and of the engine's loop):
 * top-k of all candidates by a stable sort (ties to the lower index), m = max of that set, then
 * m + α·log(max(Σ_{available members} exp((q − m)/α), 1e-10)), all in float64.
 */
function softValueSpec(q: ArrayLike<number>, avail: ArrayLike<number>, alpha: number, k = 5): number {
  const top = Array.from(q, (_, j) => j)
    .sort((a, b) => q[b] - q[a] || a - b)
    .slice(0, k);
  const m = Math.max(...top.map((j) => q[j]));
  let s = 0;
  for (const j of top) if (avail[j] === 1) s += Math.exp((q[j] - m) / alpha);
  return m + alpha * Math.log(Math.max(s, 1e-10));
}

test("soft value: agrees with the spec formula on random heads, masks, α and k", () => {
  const rng = new Rng(17);
  let masked = 0;
  for (let trial = 0; trial < 400; trial++) {
    const n = 1 + Math.floor(rng.next() * 12);
    // coarse values make ties common (the tie rule matters for which masked slots are in the top-k)
    const q = Float32Array.from({ length: n }, () => Math.round((rng.next() * 4 - 2) * 4) / 4);
    const avail = Uint8Array.from({ length: n }, () => (rng.next() < 0.6 ? 1 : 0));
    const alpha = [0.01, 0.05, 0.3, 1, 4][trial % 5];
    const k = 1 + (trial % 8);
    const want = softValueSpec(q, avail, alpha, k);
    close(softValueHead(q, avail, alpha, k), want, 1e-9, `trial ${trial} q=${Array.from(q)} avail=${Array.from(avail)} α=${alpha} k=${k}`);
    const q2 = Float32Array.from(q, (x) => -x);
    close(softValue(q, q2, avail, alpha, k), want + softValueSpec(q2, avail, alpha, k), 1e-9, `trial ${trial}: v1 + v2`);
    if (want < Math.max(...q) - 20 * alpha) masked++;
  }
  assert.ok(masked > 10, `the all-top-k-masked branch was exercised (${masked} times)`);
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

test("explore_eps: with probability ε a uniform pick among the same top-5; ε = 0 draws nothing extra", () => {
  const logits = f32([1.0, 0.95, 0.9, 0.5, 0.97, 0.3, 2.0, 0.85]);
  const avail = u8([1, 1, 1, 1, 1, 1, 0, 1]);
  const top = [0, 4, 1, 2, 7];
  const rng = new Rng(5);
  const n = 20000, eps = 0.4;
  const counts = new Map<number, number>();
  // α ≈ 0: the Boltzmann half always takes the best (index 0), so the rest comes from ε alone
  for (let i = 0; i < n; i++) {
    const a = boltzmannTop5(logits, avail, 1e-9, rng, 5, eps);
    counts.set(a, (counts.get(a) ?? 0) + 1);
  }
  for (const j of counts.keys()) assert.ok(top.includes(j), `picked ${j} outside the available top-5`);
  close((counts.get(0) ?? 0) / n, 1 - eps + eps / 5, 0.015, "p(best)");
  for (const j of top.slice(1)) close((counts.get(j) ?? 0) / n, eps / 5, 0.01, `p(${j})`);
  // a pick draws the same count of numbers whatever it needs: one with ε = 0, three with ε > 0
  for (const [e, draws] of [[0, 1], [0.4, 3]]) {
    const a = new Rng(9), b = new Rng(9);
    for (let i = 0; i < 50; i++) boltzmannTop5(logits, avail, i % 2 ? 0.05 : 0, a, 5, e);
    for (let i = 0; i < 50 * draws; i++) b.nextU32();
    assert.equal(a.nextU32(), b.nextU32(), `ε ${e}`);
  }
});

test("explore_eps_updates: ε falls linearly to 0 by that update; 0 keeps it constant; bounded in the schema", () => {
  const annealed = resolveConfig({ preset: "tiny", overrides: ["algo.hyperparams.explore_eps=0.3", "algo.hyperparams.explore_eps_updates=1000"] });
  close(exploreEpsAt(annealed, 0), 0.3, 1e-12, "ε at 0");
  close(exploreEpsAt(annealed, 250), 0.225, 1e-12, "ε at 250");
  close(exploreEpsAt(annealed, 500), 0.15, 1e-12, "ε at 500");
  assert.equal(exploreEpsAt(annealed, 1000), 0);
  assert.equal(exploreEpsAt(annealed, 5000), 0);
  const constant = resolveConfig({ preset: "tiny", overrides: ["algo.hyperparams.explore_eps=0.3"] });
  assert.equal(constant.algo.hyperparams.explore_eps_updates, 0);
  assert.equal(exploreEpsAt(constant, 5000), 0.3);
  assert.throws(() => resolveConfig({ preset: "tiny", overrides: ["algo.hyperparams.explore_eps_updates=-5"] }), /explore_eps_updates/);
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

test("λ-returns' bootstrap column: each row gains reward 0, not done, its bootstrap value", () => {
  const w = withBootstrapColumn(rows, f32([9, 8]), 2, 4);
  assert.deepEqual(Array.from(w.reward), Array.from(f32([0, 0, 1, 0.3, 0, 0, 1, 0, 0, 0])));
  assert.deepEqual(Array.from(w.notDone), [1, 1, 1, 1, 1, 1, 0, 1, 1, 1]);
  assert.deepEqual(Array.from(w.value), Array.from(f32([0.2, 0.4, 0.6, 0.8, 9, 0.5, 0.7, 0.1, 0.3, 8])));
});

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
});

test("AdamW: one and two steps on a scalar with weight decay, by hand", () => {
  const p = tf.variable(tf.scalar(1.0), true, "adamw_p1");
  const opt = new AdamW([p], { beta1: 0.9, beta2: 0.98, eps: 1e-6, weightDecay: 0.01 });
  const before = tf.memory().numTensors;
  const g1 = tf.scalar(0.5);
  opt.step([g1], 0.1);
  // p ← 1·(1 − .1·.01) = .999; m = .05, v = .02·.25 = .005; m̂ = .5, √v̂ = √(.005/.02) = .5
  const p1 = 0.999 - (0.1 / (1 - 0.9)) * 0.05 / (Math.sqrt(0.005) / Math.sqrt(1 - 0.98) + 1e-6);
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

/** torch.optim.AdamW written out per element in float64 (decay, moments, bias correction, ε). */
function adamwSpec(p0: number[], grads: number[][], lrs: number[], c: { beta1: number; beta2: number; eps: number; weightDecay: number }): number[][] {
  const p = [...p0];
  const m = p.map(() => 0);
  const v = p.map(() => 0);
  const out: number[][] = [];
  grads.forEach((g, k) => {
    const t = k + 1;
    const lr = lrs[k];
    for (let i = 0; i < p.length; i++) {
      p[i] *= 1 - lr * c.weightDecay;
      m[i] = c.beta1 * m[i] + (1 - c.beta1) * g[i];
      v[i] = c.beta2 * v[i] + (1 - c.beta2) * g[i] * g[i];
      const mHat = m[i] / (1 - c.beta1 ** t);
      const denom = Math.sqrt(v[i]) / Math.sqrt(1 - c.beta2 ** t) + c.eps;
      p[i] -= (lr * mHat) / denom;
    }
    out.push([...p]);
  });
  return out;
}

test("AdamW: five steps on a vector and a matrix with a changing LR agree with the torch formula", () => {
  const cfg = { beta1: 0.8, beta2: 0.95, eps: 1e-4, weightDecay: 0.1 };
  const p0 = [0.5, -1.25, 2, 0];
  const w0 = [[1, -2], [0.25, 3]];
  const p = tf.variable(tf.tensor1d(p0), true, "adamw_vec");
  const w = tf.variable(tf.tensor2d(w0), true, "adamw_mat");
  const opt = new AdamW([p, w], cfg);
  const rng = new Rng(5);
  const lrs = [0.05, 0.2, 0.1, 0.01, 0.3];
  const gp: number[][] = [];
  const gw: number[][] = [];
  for (const lr of lrs) {
    // gradients of mixed sign and scale, including an exact zero (v stays 0 there for a while)
    const a = p0.map((_, i) => (i === 3 && gp.length < 2 ? 0 : (rng.next() * 2 - 1) * 10 ** (i - 1)));
    const b = [0, 1, 2, 3].map(() => rng.next() * 4 - 2);
    gp.push(a);
    gw.push(b);
    const ga = tf.tensor1d(a);
    const gb = tf.tensor2d(b, [2, 2]);
    opt.step({ adamw_vec: ga, adamw_mat: gb }, lr);
    tf.dispose([ga, gb]);
  }
  const wantP = adamwSpec(p0, gp, lrs, cfg).at(-1)!;
  const wantW = adamwSpec(w0.flat(), gw, lrs, cfg).at(-1)!;
  closeAll(p.dataSync(), wantP, 2e-5);
  closeAll(w.dataSync(), wantW, 2e-5);
  // and the spec itself moved the parameters (not a no-op comparison)
  assert.ok(wantP.some((x, i) => Math.abs(x - p0[i]) > 0.05) && wantW.some((x, i) => Math.abs(x - w0.flat()[i]) > 0.05));
  assert.deepEqual(opt.getState().steps, [5, 5]);
  tf.dispose([p, w]);
  opt.dispose();
});

test("Learner: α follows the LR schedule (α = α0·lr_t/lr0) through warm-up and decay", async () => {
  const config = resolveConfig({ preset: "tiny" });
  const algo = {
    ...config.algo,
    hyperparams: { ...config.algo.hyperparams, alpha: 0.01 },
    optimizer: { ...config.algo.optimizer, lr: 1e-3 },
    scheduler: { type: "warmup_linear" as const, warmup: 2, ratio: 0 },
  };
  const nets = new QNetworks({ ...algo.encoder, dim: 16, vocab_size: 256, hidden: 32 }, new Rng(3));
  const learner = new Learner(nets, algo, 6, 1);
  const batch = {
    states: [["where is mary?", "mary went to the kitchen."], ["where is john?"]],
    actionTexts: ["mary went to the kitchen.", "john moved to the garden."],
    positions: Int32Array.from([0, 20]),
    targets: Float32Array.from([1, 0]),
  };
  const lengths = { maxActionLength: 16, maxInMemory: 16 };
  assert.equal(learner.alpha, 0.01, "α = α0 before the first optimizer step");
  // warm-up over 2 updates then linear decay to 0 at update 6: factors 0, .5, 1, .75, .5, .25, 0.
  // Update k runs at lr0·f(k−1) and leaves α = α0·f(k).
  const wantLr = [0, 0.5e-3, 1e-3, 0.75e-3, 0.5e-3, 0.25e-3];
  const wantAlpha = [0.005, 0.01, 0.0075, 0.005, 0.0025, 0];
  for (let k = 0; k < 6; k++) {
    const { applied } = await learner.microStep(batch, lengths);
    assert.ok(applied, `micro-step ${k} applied an update (accumulate 1)`);
    close(applied.lr, wantLr[k], 1e-15, `lr of update ${k + 1}`);
    close(applied.alpha, wantAlpha[k], 1e-15, `α after update ${k + 1}`);
    assert.equal(learner.alpha, applied.alpha);
    close(learner.alpha / 0.01, learner.lr / 1e-3, 1e-12, `α/α0 = lr/lr0 after update ${k + 1}`);
  }
  assert.equal(learner.getState().alpha, 0);
  learner.dispose();
  nets.dispose();
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

test("soft value, joint heads: the soft maximum of q1 + q2, never above v1 + v2; host and tfjs agree; the rollouts' targets use it", async () => {
  // each head's maximum sits on a different candidate: v1 + v2 counts a value no single pick has
  const both = u8([1, 1]);
  close(softValue(f32([1, 0]), f32([0, 1]), both, 0.01), 2 + 0.02 * Math.log(1 + Math.exp(-100)), 1e-6);
  close(softValue(f32([1, 0]), f32([0, 1]), both, 0.01, 5, "joint"), 1 + 0.01 * Math.log(2), 1e-6);
  const rng = new Rng(23);
  await tf.setBackend("cpu");
  for (let trial = 0; trial < 50; trial++) {
    const n = 2 + Math.floor(rng.next() * 10);
    const q1 = Float32Array.from({ length: n }, () => rng.next() * 2 - 1);
    const q2 = Float32Array.from({ length: n }, () => rng.next() * 2 - 1);
    const avail = Uint8Array.from({ length: n }, (_, j) => (j === 0 || rng.next() < 0.7 ? 1 : 0));
    const alpha = [0.01, 0.1, 0][trial % 3];
    const joint = softValue(q1, q2, avail, alpha, 5, "joint");
    close(joint, softValueHead(Float32Array.from(q1, (x, j) => x + q2[j]), avail, alpha, 5), 1e-9, `trial ${trial}`);
    if (avail.slice(0, Math.min(5, n)).every((a) => a === 1)) assert.ok(joint <= softValue(q1, q2, avail, alpha, 5) + 1e-9, `trial ${trial}: joint ≤ v1 + v2`);
    const dev = tf.tidy(() => softValueDevice(tf.tensor2d(q1, [1, n]), tf.tensor2d(q2, [1, n]), tf.tensor2d(Float32Array.from(avail), [1, n]), alpha, 5, "joint").dataSync()[0]);
    close(dev, joint, 1e-5, `trial ${trial}: tfjs`);
  }
  assert.equal(resolveConfig({ preset: "tiny" }).algo.hyperparams.soft_value_heads, "per_head", "the reference by default");
  assert.throws(() => resolveConfig({ preset: "tiny", overrides: ["algo.hyperparams.soft_value_heads=max"] }), /algo\.hyperparams\.soft_value_heads/);
  const values = async (heads: string) => {
    const config = resolveConfig({ preset: "tiny", overrides: ["envs_parallel=4", "batch_size=8", `algo.hyperparams.soft_value_heads=${heads}`] });
    const nets = new QNetworks(config.algo.encoder, new Rng(1));
    const envs = new ParallelEnvs(buildSource(config, "train"), rolloutSettings(config), new Rng(2));
    const batch = await envs.collect(nets, { random: false, alpha: 0.01, exploreEps: 0 });
    envs.dispose();
    nets.dispose();
    return Array.from(batch.value);
  };
  const perHead = await values("per_head");
  const joint = await values("joint");
  assert.equal(joint.length, perHead.length);
  assert.ok(joint.some((v, i) => v < perHead[i] - 1e-6), "joint targets differ from the per-head ones");
  assert.ok(joint.every((v, i) => v <= perHead[i] + 1e-6), "and never exceed them (same states: the same seeds and weights)");
});

test("absorb_completion: the targets stop at the completing step and after it, the episode runs on", async () => {
  const rollout = async (absorb: boolean) => {
    const config = resolveConfig({ preset: "tiny", overrides: ["envs_parallel=4", "batch_size=32", "envs.feedback.never_terminate=true", `algo.hyperparams.absorb_completion=${absorb}`] });
    const nets = new QNetworks(config.algo.encoder, new Rng(1));
    const envs = new ParallelEnvs(buildSource(config, "train"), rolloutSettings(config), new Rng(2));
    const batch = await envs.collect(nets, { random: true, alpha: 0.01, exploreEps: 0 });
    envs.dispose();
    nets.dispose();
    return batch;
  };
  assert.equal(resolveConfig({ preset: "tiny" }).algo.hyperparams.absorb_completion, false, "the reference bootstraps by default");
  const ref = await rollout(false);
  const abs = await rollout(true);
  assert.deepEqual(abs.reward, ref.reward, "the same episodes: only the targets' flags change");
  let completions = 0;
  let absorbed = 0;
  for (let e = 0; e < ref.E; e++) {
    let completed = false;
    for (let t = 0; t < ref.L; t++) {
      const k = e * ref.L + t;
      if (ref.reward[k] > 0) completed = true; // completion is the only reward (per_fact_reward 0)
      if (ref.reward[k] > 0) completions++;
      assert.equal(abs.notDone[k], completed ? 0 : ref.notDone[k], `env ${e} step ${t}`);
      if (completed && ref.notDone[k] === 1) absorbed++;
      if (ref.notDone[k] === 0) completed = false; // the episode ended (max_steps): a fresh one follows
    }
  }
  assert.ok(completions > 0 && absorbed > completions, `episodes ran on past completion (${completions} completions, ${absorbed} absorbed steps)`);
  // so a completing pick's λ-target is its reward, and a later pick's is 0
  const G = lambdaTargets({ reward: abs.reward, notDone: abs.notDone, value: abs.value }, abs.E, abs.L, 0.99, 0.65);
  for (let e = 0; e < abs.E; e++) {
    for (let t = 0; t < abs.L - 1; t++) if (abs.notDone[e * abs.L + t] === 0) close(G[e * (abs.L - 1) + t], abs.reward[e * abs.L + t], 1e-6);
  }
});
