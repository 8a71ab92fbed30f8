/**
 * The hf BERT encoder's forward with a gradient, recorded (issue 27): as recorded-train.ts does
 * for the transformer, ONE tfjs op for tfjs's tape (recorded-train.ts recordedTrainOp, a
 * `tf.customGrad` over the encoder's variables), its forward our own programs on a plan that keeps
 * every layer's activations, its gradient the backward of recorded-bert-backward.ts recorded into
 * the same plan. No tfjs kernel runs inside either; the function is hf/bert.ts `bertDense` + the
 * ÷10 masked mean (hf/encoder.ts), the dropout masks the ones its tfjs path draws.
 *
 * Why: the paper's recipe (hf BERT) spends its update in bertDense under the tape, hundreds of tfjs
 * kernels forward and backward for 12 layers (~0.075 ms of host JavaScript each on an H200).
 *
 * Forward programs (recorded-bert.ts's without a gradient, but keeping what the backward reads):
 * e = word[id] + pos[t] + type[0]; x₀ = LN(e)·mask (e and the row stats kept); per layer Q, K, V matmul+bias
 * (separate buffers) → attention (its dropout mask drawn inline, as the backward draws it again) → output matmul+bias → mid = LN(x + h·m) (v = x + h·m and the row stats kept) → fc1
 * matmul+bias (pre-activation kept) → activation → fc2 matmul+bias → LN(mid + h·m); masked mean
 * ÷10: 3 + 10 per layer programs. Dropout keys: embedding, per layer attention then the two
 * sub-layer ends (the tfjs path's order), each only where its rate is > 0 in train mode.
 */
import * as tf from "@tensorflow/tfjs";
import type { Rng } from "../../util/rng.ts";
import type { BertConfig } from "../hf/bert.ts";
import type { TapedForward } from "../encoder.ts";
import { dropoutKeepScale, dropThreshold } from "../../util/mask-hash.ts";
import { foldThreads, webgpuBackend } from "./raw-program.ts";
import {
  admitPlan, cachedPlan, keepKey, linearStep, MAX_PLAN_BYTES, planBuffers, POOL_WGSL, recorderApplies, recorderStats, USAGE,
  type BackendLike, type BackPlan, type BufferLike, type DeviceLike, type Plan, type UniformValues,
} from "./recorded-encoder.ts";
import { recordedTrainOp, runTaped } from "./recorded-train.ts";
import { attentionGrid, attentionTile, forwardCode as attentionForwardCode } from "./attention.ts";
import { lnFwd } from "./gelu-layernorm.ts";
import { resLnFwd } from "./residual-layernorm.ts";
import { rowLanes, rowWorkgroups } from "./row-reduce.ts";
import { ACT, bertFits, bertPlanKey, EMBED_WGSL, lnDropFwd, N_EMB, PER_LAYER } from "./recorded-bert.ts";
import { buildBertBackward, type BertActs, type BertBuilder, type BertSites } from "./recorded-bert-backward.ts";

/**
 * The pooled encoding [B, d] of an HfBertEncoder's `vars` (bertSpecs order) as one differentiable
 * op, or null where the recorder does not apply (as recordedBertForward: the caller runs bertDense).
 */
export function recordedBertTrain(vars: readonly tf.Variable[], c: BertConfig, ids: Int32Array, mask: Float32Array, B: number, T: number, training: boolean, rng: Rng): tf.Tensor2D | null {
  const plan = tapedPlan(c, ids, B, T, training);
  return plan && recordedTrainOp(webgpuBackend() as BackendLike, plan, vars, ids, mask, rng);
}

/** The same forward and its backward without tfjs's tape (the learner's device pass), or null. */
export function recordedBertTaped(vars: readonly tf.Variable[], c: BertConfig, ids: Int32Array, mask: Float32Array, B: number, T: number, training: boolean, rng: Rng): TapedForward | null {
  const plan = tapedPlan(c, ids, B, T, training);
  return plan && runTaped(webgpuBackend() as BackendLike, plan, vars, ids, mask, rng);
}

function tapedPlan(c: BertConfig, ids: Int32Array, B: number, T: number, training: boolean): Plan | null {
  if (T > c.maxPositions || !recorderApplies(c.vocab, ids, B, T)) return null;
  return bertTrainPlanFor(webgpuBackend().device as DeviceLike, c, B, T, training);
}

/** A keep plan of this architecture and shape (recorded-encoder.ts keepKey), made on a miss; null when it cannot be recorded. */
function bertTrainPlanFor(device: DeviceLike, c: BertConfig, B: number, T: number, training: boolean): Plan | null {
  const { key: base, hp, ap } = bertPlanKey(c, B, T, training);
  const key = keepKey(device, base);
  const hit = cachedPlan(device, key);
  if (hit) return hit;
  if (!bertFits(device, c, B, T)) return null;
  // over the cache's byte bound (admitPlan would refuse it): not made, rather than its buffers
  // created and destroyed on every update (BERT-base keeps ~0.6 MB of activations per token)
  if (bertTrainBytes(c, B, T) > MAX_PLAN_BYTES) return null;
  return admitPlan(device, buildBertTrainPlan(device, c, key, B, T, hp, ap));
}

/** The bytes of a keep plan's buffers (buildBertTrainPlan's and buildBertBackward's, before 16-byte rounding; the uniform slots' bound). */
export function bertTrainBytes(c: BertConfig, B: number, T: number): number {
  const d = c.hidden, F = c.intermediate, H = c.heads, L = c.layers, N = B * T;
  const params = (c.vocab + c.maxPositions + c.typeVocab + 2) * d + L * (4 * d * d + 2 * d * F + 9 * d + F);
  const forward = 3 * N + N * d + 2 * N + (L + 1) * N * d + L * (7 * N * d + 2 * B * H * T + 4 * N + 2 * N * F) + N * d + B * d;
  const backward = params + B * d + 8 * N * d + B * H * T + 2 * N * F + 3 * N + 1;
  return 4 * (forward + backward) + 256 * (10 + 33 * L);
}

function buildBertTrainPlan(device: DeviceLike, c: BertConfig, key: string, B: number, T: number, hp: number, ap: number): Plan {
  const d = c.hidden, F = c.intermediate, H = c.heads, N = B * T, L = c.layers;
  const pb = planBuffers(device);
  const buf = pb.buf;
  const ids = buf(N), mask = buf(N), poolW = buf(N);
  const per = (floats: number, count = L): BufferLike[] => Array.from({ length: count }, () => buf(floats));
  const acts: BertActs = {
    e: buf(N * d), embSt: buf(N * 2), x: per(N * d, L + 1),
    q: per(N * d), k: per(N * d), v: per(N * d), ctx: per(N * d), attSt: per(B * H * T * 2),
    v1: per(N * d), st1: per(N * 2), mid: per(N * d), f1: per(N * F), f2: per(N * F), v2: per(N * d), st2: per(N * 2),
  };
  const h = buf(N * d); // a sub-layer's output before its residual (not read by the backward)
  const pooled = buf(B * d, USAGE.STORAGE | USAGE.COPY_SRC);

  let draws = 0;
  /** thr, keep, k0, k1 of a dropout site of rate p (its key drawn in this order per call when p > 0). */
  const maskFields = (p: number): { fields: UniformValues; draw?: number } =>
    p > 0 ? { fields: [["u", dropThreshold(p)], ["f", dropoutKeepScale(p)], ["u", 0], ["u", 0]], draw: draws++ } : { fields: [["u", 0], ["f", 1], ["u", 0], ["u", 0]] };
  const sites: BertSites = { att: [], res1: [], res2: [] };
  let slots = 0;
  const b: BertBuilder = {
    device, c, B, T, hp, ap, buf, acts, sites, mask, poolW,
    list: [],
    step: (s) => {
      const st = { ...s, slot: slots++ };
      b.list.push(st);
      return st;
    },
    flat: (k, code, refs, uniforms, threads, draw) => {
      const { grid, stride } = foldThreads(k, threads);
      return b.step({ key: k, code, refs, uniforms, grid, stride, draw });
    },
  };
  const steps = b.list;
  const lanes = rowLanes(d);
  const rows = rowWorkgroups(N, d);
  const lnDims: UniformValues = [["u", N], ["u", d], ["f", c.eps]];

  b.flat("qrag_bert_embed", EMBED_WGSL, [ids, { weight: 0 }, { weight: 1 }, { weight: 2 }, acts.e], [["u", N * d], ["u", T], ["u", d]], N * d);
  const em = maskFields(hp);
  sites.emb = em.draw;
  if (hp > 0) b.step({ key: `qrag_ln_drop_fwd_${lanes}`, code: lnDropFwd(d), refs: [acts.e, { weight: 3 }, { weight: 4 }, acts.x[0], acts.embSt], uniforms: [...lnDims, ...em.fields], grid: rows, stride: 0, draw: em.draw });
  else b.step({ key: `qrag_ln_fwd_${lanes}`, code: lnFwd(d), refs: [acts.e, { weight: 3 }, { weight: 4 }, acts.x[0], acts.embSt], uniforms: lnDims, grid: rows, stride: 0 });

  const dh = d / H;
  const tile = attentionTile(dh, device.limits.maxComputeWorkgroupStorageSize ?? 16384);
  const attKey = `qrag_attn_fwd_separate_${dh}_${tile}_${ap > 0 ? "inline" : "nodrop"}`;
  const attCode = attentionForwardCode(dh, "separate", ap > 0 ? "inline" : false, tile);
  const attUniforms: UniformValues = [["u", B], ["u", T], ["u", H], ["u", d], ["f", 1 / Math.sqrt(dh)]];
  const resLnCode = resLnFwd(d);
  /** y = LN(xi + h·m) with γ, β variables g, g + 1; v = xi + h·m and the stats kept. */
  const residualLn = (xi: BufferLike, g: number, y: BufferLike, v: BufferLike, st: BufferLike): number | undefined => {
    const m = maskFields(hp);
    b.step({ key: `qrag_res_ln_fwd_${lanes}`, code: resLnCode, refs: [xi, h, { weight: g }, { weight: g + 1 }, y, v, st], uniforms: [...lnDims, ...m.fields], grid: rows, stride: 0, draw: m.draw });
    return m.draw;
  };
  const [actKey, actCode] = ACT[c.act];
  for (let l = 0; l < L; l++) {
    const o = N_EMB + l * PER_LAYER; // q w b, k w b, v w b, o w b, ln1 γ β, fc1 w b, fc2 w b, ln2 γ β
    const x = acts.x[l];
    b.step(linearStep(x, o, acts.q[l], N, d, d));
    b.step(linearStep(x, o + 2, acts.k[l], N, d, d));
    b.step(linearStep(x, o + 4, acts.v[l], N, d, d));
    const m = maskFields(ap);
    sites.att.push(m.draw);
    b.step({ key: attKey, code: attCode, refs: [acts.q[l], acts.k[l], acts.v[l], mask, acts.ctx[l], acts.attSt[l]], uniforms: ap > 0 ? [...attUniforms, ...m.fields] : attUniforms, grid: attentionGrid(B, H, T), stride: 0, draw: m.draw });
    b.step(linearStep(acts.ctx[l], o + 6, h, N, d, d));
    sites.res1.push(residualLn(x, o + 8, acts.mid[l], acts.v1[l], acts.st1[l]));
    b.step(linearStep(acts.mid[l], o + 10, acts.f1[l], N, F, d));
    b.flat(actKey, actCode, [acts.f1[l], acts.f2[l]], [["u", N * F]], N * F);
    b.step(linearStep(acts.f2[l], o + 12, h, N, d, F));
    sites.res2.push(residualLn(acts.mid[l], o + 14, acts.x[l + 1], acts.v2[l], acts.st2[l]));
  }
  b.flat("qrag_rec_pool", POOL_WGSL, [acts.x[L], poolW, pooled], [["u", B], ["u", T], ["u", d]], B * d);
  b.list = [];
  const back: BackPlan = buildBertBackward(b);
  const uniform = pb.uniform(slots);
  recorderStats.plans++;
  return { key, B, T, training: hp > 0 || ap > 0, bytes: pb.bytes, buffers: pb.buffers, ids, mask, poolW, pooled, uniform, steps, draws, back, owner: null, dead: false, pendingIn: { forward: null, backward: null } };
}
