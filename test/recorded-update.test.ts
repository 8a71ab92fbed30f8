/**
 * The transformer's taped forward and backward recorded as our own WebGPU programs (one tfjs op;
 * model/webgpu/recorded-train.ts) on lavapipe, against the tfjs path it replaces. Each case runs in
 * a fresh process (recorded-update-cases.ts); machines without an adapter skip, except under
 * QRAG_REQUIRE_WEBGPU=1 (CI).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { webgpuSkip as skip } from "./webgpu-skip.ts";
import { runCaseFile } from "./device-case-runner.ts";
import { CONFIG } from "./recorded-batches.ts";
import { kSplit, PRODUCTS_PER_PROGRAM, SUMS_PER_PROGRAM } from "../server/qrag/model/webgpu/split-k.ts";

const runCase = <T>(name: string): T => runCaseFile<T>("test/recorded-update-cases.ts", name);

test("recorded encoder backward: the loss within 1e-6 of its terms' size (Σ|y·R|: the loss cancels) and every variable's gradient within 1e-5 of the tfjs path (eval and train mode, B×T 3×16, 5×64, 2×256, 40×256 in eval mode (more row blocks than a LayerNorm's partial sums), width 64 (aligned loads) at 6×64, weight gradients split along K, repeated ids (a real id in more than TOK_SEG rows: its token row summed in parts) and PAD, two forwards of one shape in one tape)", { skip }, () => {
  const r = runCase<{ worst: Record<string, { loss: number; grad: number; at: string }>; rngAfter: boolean; trainCalls: number; variables: number; gradNorm: number }>("grads");
  assert.equal(Object.keys(r.worst).length, 15, Object.keys(r.worst).join(", "));
  for (const [k, w] of Object.entries(r.worst)) {
    assert.ok(w.loss <= 1e-6, `${k}: loss diff ${w.loss} of the terms' Σ|y·R|`);
    assert.ok(w.grad <= 1e-5, `${k}: gradient of ${w.at} rel. diff ${w.grad}`);
  }
  assert.equal(r.variables, 28);
  assert.ok(r.gradNorm > 1, `the gradients are too small to compare (${r.gradNorm})`);
  assert.ok(r.rngAfter, "the dropout Rngs differ after the same calls");
  assert.equal(r.trainCalls, 17, "the recorded path did not run for every call");
});

test("recorded encoder forward+backward: one dispatch per program, 0 tfjs kernels inside, a second call creates no buffers, bind groups or pipelines", { skip }, () => {
  const r = runCase<{ created: { plans: number; buffers: number; bindGroups: number; pipelines: number }[]; counts: { tfjsKernels: number; fused: number; submits: number }[]; kernelsInside: number; layers: number }>("cache");
  const L = r.layers;
  // forward (train mode): 5 per layer (QKV, layer 0's computing the embedding and the first LN as it loads them; attention with its own
  // mask, proj with residual+LN, fc1 with GELU, fc2 with residual+LN: the last one is the final LN
  // and pools, its sequences fitting one row block);
  // backward: the final LN dx (with the mask of the branch below; it reads the pooling's gradient), per layer 8 (dX of each
  // linear, fc2's times GELU's gradient; each LN's dx with its dγ, dβ as partial sums; 2 attention drawing their mask inline),
  // the four dW with db's column sums, PRODUCTS_PER_PROGRAM to a program, and at the layer's end the sums of the split products'
  // partials (6×64 rows: all four split, 2 parts each) and of two LNs' partials, SUMS_PER_PROGRAM to a program; after the last
  // layer the sums of layer 0's first LN, in one program with the tokens' gradient (independent neighbours: fused-steps.ts); positions
  const splits = [[CONFIG.dim, 3 * CONFIG.dim], [CONFIG.dim, CONFIG.dim], [CONFIG.dim, CONFIG.hidden], [CONFIG.hidden, CONFIG.dim]].filter(([m, n]) => kSplit(m, n, 6 * 64) > 1).length;
  assert.equal(splits, 4);
  const programs = 5 * L + (3 + (8 + Math.ceil(4 / PRODUCTS_PER_PROGRAM) + Math.ceil((2 * splits + 4) / SUMS_PER_PROGRAM)) * L);
  for (const c of r.counts) {
    assert.equal(c.fused, programs);
    // the tfjs kernels of the loss around the op: the op itself, Sum and its gradient's kernels
    assert.ok(c.tfjsKernels <= 5, `${c.tfjsKernels} tfjs kernels`);
    // the forward, the loss's kernels and the backward in tfjs's command encoder: one submit, the read's
    assert.equal(c.submits, 1);
  }
  assert.equal(r.kernelsInside, 0);
  assert.equal(r.created[0].plans, 1);
  for (const c of r.created.slice(1)) assert.deepEqual(c, { plans: 0, buffers: 0, bindGroups: 0, pipelines: 0 });
});
