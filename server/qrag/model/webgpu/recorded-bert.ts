/**
 * The hf BERT encoder's forward without a gradient (hf/bert.ts `bertDense` + the ÷10 masked mean
 * of hf/encoder.ts) as our own WGSL programs recorded into tfjs's pending command encoder, as
 * recorded-encoder.ts does for the transformer: no tfjs kernel runs inside it.
 *
 * Why: the paper's recipe encodes with an hf BERT on the device; bertDense is ~10 tfjs kernels per
 * layer (~0.075 ms of host JavaScript each on an H200), 65 policy forwards per iteration.
 *
 * Programs (the generators of matmul.ts, attention.ts, gelu-layernorm.ts, residual-layernorm.ts,
 * dropout.ts): the embedding sum word[id] + pos[t] + type[0]; its LayerNorm (eps from config.json)
 * times the embedding dropout's mask; per layer Q, K, V matmul+bias (one program, three outputs) →
 * attention (separate q, k, v) → output matmul+bias → LN(x + dropout(h)) → fc1 matmul+bias → GELU
 * (erf, or tanh for gelu_new) / ReLU → fc2 matmul+bias → LN(x + dropout(h)); masked mean ÷10; each
 * LN(x + dropout(h)) is the epilogue of the product before it where a row fits one tile (d ≤ 128:
 * 5 programs a layer with erf GELU; BERT-base, 7). The dropout
 * keys are drawn from the encoder's Rng in the order the tfjs path draws them (embedding; per layer
 * attention, then the two sub-layer ends), so train-mode outputs are the same.
 *
 * Plans share recorded-encoder.ts's cache (its LRU and byte bound), keyed apart ("bert:" and the
 * architecture: encoders of one model share a plan, their weights are bound per call); the forward
 * itself is recorded-encoder.ts's submitForward.
 */
import * as tf from "@tensorflow/tfjs";
import type { Rng } from "../../util/rng.ts";
import type { BertConfig } from "../hf/bert.ts";
import { dropoutKeepScale, dropThreshold } from "../../util/mask-hash.ts";
import { storageDecls, uniformStruct, webgpuBackend, WG } from "./raw-program.ts";
import {
  admitPlan, cachedPlan, drawKeys, recorderOn, finishPlan, linearPartsStep, linearStep, planBound, poolFuses, planBuffers, recorderApplies, recorderBinds, recorderStats, residualFuses, roomyPlan, rowsWithin, subLayerEnd, submitForward, USAGE,
  programList, type BackendLike, type BackPlan, type BufferLike, type DeviceLike, type Plan, type PlanHome, type ProgramList, type ResLnArgs, type UniformValues,
} from "./recorded-encoder.ts";
import { attentionGrid, attentionLanes, attentionTile, forwardCode as attentionForwardCode } from "./attention.ts";
import { geluFwd, geluTanhFwd, lnFwd, lnFwdShader, reluFwd } from "./gelu-layernorm.ts";
import { enableHalf, halfActive, halfKey, readAct, writeAct } from "./half-storage.ts";
import { rowLanes, rowWorkgroups } from "./row-reduce.ts";
import { MASK_AT_WGSL } from "./dropout.ts";

/** Variables before the layers (word, pos, type, emb LN γ β) and per layer (bert.ts LAYER's order). */
export const N_EMB = 5;
export const PER_LAYER = 16;

/** e = word[ids[row]] + pos[row % T] + type[0], one thread per element (e f16 with `half`). */
export const embedShader = (half: boolean): string => `${enableHalf(half)}${uniformStruct(["n: u32", "T: u32", "d: u32"])}
${storageDecls(["ids:i32", "word", "pos", "tt"], [half ? "e:f16" : "e"])}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = threadIndex(gid);
  if (i >= u.n) { return; }
  let row = i / u.d;
  let c = i % u.d;
  e[i] = ${writeAct(half, "(word[u32(ids[row]) * u.d + c] + pos[(row % u.T) * u.d + c]) + tt[c]")};
}`;

/** The embedding LayerNorm times the dropout mask (ops.ts `dropout` after `layerNorm`). */
export const lnDropFwd = (n: number, half = false) => lnFwdShader({
  n, fields: ["rows: u32", "n: u32", "eps: f32", "thr: u32", "keep: f32", "k0: u32", "k1: u32"], read: ["x", "gamma", "beta"], write: ["y", "stats"],
  extra: MASK_AT_WGSL, first: `let a = ${readAct(half, "x[o + k]")};`, src: "x", post: " * maskAt(o + k)", half: half ? ["x", "y"] : [],
});

/** The activation's program (f16 storage with `half`). */
export const ACT: Record<BertConfig["act"], [string, (half: boolean) => string]> = {
  gelu: ["qrag_gelu_fwd", geluFwd],
  gelu_tanh: ["qrag_gelu_tanh_fwd", geluTanhFwd],
  relu: ["qrag_relu_fwd", reluFwd],
};

/**
 * The recorded forward of an HfBertEncoder's `vars` (bertSpecs order): the pooled [B, d] (masked
 * mean ÷10), or null where it does not apply (not on webgpu, the recorder off, an id outside the
 * vocabulary, a buffer over the binding limit, a head too wide for workgroup memory): the caller
 * runs bertDense, which draws the dropout keys itself.
 */
export function recordedBertForward(vars: readonly tf.Variable[], c: BertConfig, ids: Int32Array, mask: Float32Array, B: number, T: number, training: boolean, rng: Rng): tf.Tensor2D | null {
  if (T > c.maxPositions || !recorderApplies(c.vocab, ids, B, T)) return null;
  const be = webgpuBackend() as BackendLike;
  const plan = bertPlanFor(be.device as DeviceLike, c, B, T, training);
  if (!plan) return null;
  recorderStats.calls++;
  return submitForward(be, plan, vars, ids, mask, drawKeys(plan, rng));
}

/** The no-grad plan of B rows of T tokens (made on a miss, and kept), or null where none is recorded (recordedRowsOfTokens runs it). */
export function bertNoGradPlan(c: BertConfig, B: number, T: number, training: boolean): Plan | null {
  if (!recorderOn() || B === 0 || T === 0 || T > c.maxPositions) return null;
  return bertPlanFor((webgpuBackend() as BackendLike).device as DeviceLike, c, B, T, training);
}

/** The cached plan of this architecture and shape (made on a miss), or null when it cannot be recorded. */
function bertPlanFor(device: DeviceLike, c: BertConfig, B: number, T: number, training: boolean): Plan | null {
  const { key: base, family: rowless, hp, ap } = bertPlanKey(c, B, T, training);
  const half = halfKey(halfActive(device));
  const key = `${base}${half}`;
  const hit = cachedPlan(device, key);
  if (hit) return hit;
  if (!bertFits(device, c, B, T)) return null;
  const family = `${rowless}${half}`;
  return admitPlan(device, buildBertPlan(device, c, key, B, T, hp, ap, null, { family, room: roomyPlan(device, family, B) }));
}

/** The plan key of this architecture, shape and mode (dropout rates), the key without the rows (its family: roomyPlan), and the rates. */
export function bertPlanKey(c: BertConfig, B: number, T: number, training: boolean): { key: string; family: string; hp: number; ap: number } {
  const hp = training ? c.hiddenDropout : 0, ap = training ? c.attnDropout : 0;
  const arch = `bert:${c.vocab}-${c.maxPositions}-${c.typeVocab}-${c.hidden}-${c.intermediate}-${c.heads}-${c.layers}-${c.act}-${c.eps}`;
  return { key: `${arch}-${B}x${T}-${hp}-${ap}`, family: `${arch}-*x${T}-${hp}-${ap}`, hp, ap };
}

/** BERT's variables' sizes in bertSpecs order: its backward's gradients. */
export function bertGradSizes(c: BertConfig): number[] {
  const d = c.hidden, F = c.intermediate;
  const sizes = [c.vocab * d, c.maxPositions * d, c.typeVocab * d, d, d];
  for (let l = 0; l < c.layers; l++) sizes.push(d * d, d, d * d, d, d * d, d, d * d, d, d, d, d * F, F, F * d, d, d, d);
  return sizes;
}

/** Whether this BERT and shape can be recorded: heads dividing the width, the programs' bindings granted, every buffer within the binding limit, a head within workgroup memory. */
export function bertFits(device: DeviceLike, c: BertConfig, B: number, T: number): boolean {
  const d = c.hidden, F = c.intermediate, H = c.heads, N = B * T;
  if (d % H !== 0 || !recorderBinds(device)) return false;
  const sizes = [N * F, N * d, c.vocab * d, c.maxPositions * d, d * F].map((n) => n * 4);
  const limit = device.limits.maxStorageBufferBindingSize ?? 128 * 2 ** 20;
  if (Math.max(...sizes) > limit) return false;
  const wgBytes = device.limits.maxComputeWorkgroupStorageSize ?? 16384;
  return 2 * 4 * (d / H) <= wgBytes; // attentionTile's smallest tile
}

/**
 * The bytes of a no-grad plan's buffers (buildBertPlan's without a backward, before 16-byte
 * rounding; the uniform slots' bound); `half`: its activations f16. Per token about 37 KB for
 * BERT-base in f32: a sub-batch of 1,024 chunks × 64 tokens (2.4 GB) is over the no-grad plans'
 * budget and would run through tfjs (bertDense) instead.
 */
export function bertForwardBytes(c: BertConfig, B: number, T: number, half = false): number {
  const d = c.hidden, F = c.intermediate, H = c.heads, L = c.layers, N = B * T;
  // e, x, q, k, v, ctx, mid, h (not where the residual fuses); fc2's input (GELU in fc1's epilogue) or fc1's output and the activation's
  const fused = residualFuses(d);
  const acts = (fused ? 7 : 8) * N * d + (c.act === "gelu" ? 1 : 2) * N * F;
  // ids, mask, pooling weights, row stats, the attention's row stats, the pooled output
  const f32 = 3 * N + 2 * N + 2 * B * H * T + B * d;
  // uniform slots: embedding, its LayerNorm; per layer Q/K/V, attention, fc1, the two sub-layer ends
  // (each two programs where the residual does not fuse) and the activation unless it is fc1's
  // epilogue; pooling (unless the last sub-layer end pools)
  const perLayer = 5 + (fused ? 0 : 2) + (c.act === "gelu" ? 0 : 1);
  return (half ? 2 : 4) * acts + 4 * f32 + 256 * (2 + perLayer * L + (poolFuses(d, T) ? 0 : 1));
}

/** Rows of T tokens one no-grad plan holds: within the no-grad plans' budget and every buffer within the binding limit. */
export function bertForwardRows(c: BertConfig, T: number): number {
  const device = webgpuBackend().device as DeviceLike;
  const half = halfActive(device);
  return rowsWithin(device, (B) => bertForwardBytes(c, B, T, half), planBound("plain"), Math.max(c.intermediate, c.hidden), T);
}

/** What the forward keeps per layer l for the backward (x[l] is layer l's input, x[L] the output). */
export interface BertActs {
  /** The embedding sum (the embedding LayerNorm's input) and its row stats. */
  e: BufferLike;
  embSt: BufferLike;
  x: BufferLike[];
  q: BufferLike[];
  k: BufferLike[];
  v: BufferLike[];
  ctx: BufferLike[];
  attSt: BufferLike[];
  /** LN₁'s input x + h·m and stats; its output mid (fc1's input). */
  v1: BufferLike[];
  st1: BufferLike[];
  mid: BufferLike[];
  /** fc1's output before and after the activation. */
  f1: BufferLike[];
  f2: BufferLike[];
  v2: BufferLike[];
  st2: BufferLike[];
}

/** The dropout draw of each site (undefined where it does not drop). */
export interface BertSites {
  emb?: number;
  att: (number | undefined)[];
  res1: (number | undefined)[];
  res2: (number | undefined)[];
}

/** What the forward's builder hands the backward's. */
export interface BertBuilder extends ProgramList {
  device: DeviceLike;
  c: BertConfig;
  B: number;
  T: number;
  hp: number;
  ap: number;
  /** The activations are f16 (half-storage.ts). */
  half: boolean;
  buf(floats: number, usage?: number): BufferLike;
  acts: BertActs;
  sites: BertSites;
  mask: BufferLike;
  poolW: BufferLike;
}

/**
 * The plan of the forward (the program list above), and with `extend` (recorded-bert-train.ts's
 * backward builder) a keep plan: every layer's activations in buffers of their own, the sub-layer
 * ends' x + h·m and row stats and fc1's output before its activation kept, the backward's programs
 * added after the forward's. Without a backward the layers share their buffers (layer inputs
 * alternate with the mid-layer stream, x → mid → x; e holds the embedding sum and then the fused
 * sub-layer ends' x + h·m) and erf GELU is fc1's matmul epilogue.
 */
export function buildBertPlan(device: DeviceLike, c: BertConfig, key: string, B: number, T: number, hp: number, ap: number, extend: ((b: BertBuilder) => BackPlan) | null, home?: PlanHome): Plan {
  const d = c.hidden, F = c.intermediate, H = c.heads, N = B * T, L = c.layers;
  const keep = extend !== null;
  // activations stored as f16 (half-storage.ts), a taped forward's kept ones too
  const half = halfActive(device);
  const pb = planBuffers(device, home?.room);
  const buf = pb.buf;
  const act = (n: number): BufferLike => pb.act(n, half);
  const ids = buf(N), mask = buf(N), poolW = buf(N);
  /** `one` for each of `count` uses. */
  const shared = (one: BufferLike, count = L): BufferLike[] => Array.from({ length: count }, () => one);
  /** `count` buffers of their own when keeping activations, else one shared by all (`mk` makes one). */
  const per = (n: number, count = L, mk: (n: number) => BufferLike = act): BufferLike[] => (keep ? Array.from({ length: count }, () => mk(n)) : shared(mk(n), count));
  const e = act(N * d), stats = buf(N * 2);
  const f2 = per(N * F);
  const acts: BertActs = {
    e, embSt: stats, x: per(N * d, L + 1),
    q: per(N * d), k: per(N * d), v: per(N * d), ctx: per(N * d), attSt: per(B * H * T * 2, L, buf),
    v1: keep ? per(N * d) : shared(e), st1: keep ? per(N * 2, L, buf) : shared(stats), mid: per(N * d),
    // without a backward, erf GELU is fc1's epilogue and fc1's value before it is not kept
    f1: keep || c.act !== "gelu" ? per(N * F) : f2, f2,
    v2: keep ? per(N * d) : shared(e), st2: keep ? per(N * 2, L, buf) : shared(stats),
  };
  // a sub-layer's output before its residual (not read by a backward), where the residual + LayerNorm is a program of its own
  const h = residualFuses(d) ? null : act(N * d);
  // the pooling in the last residual + LayerNorm program (poolFuses implies residualFuses)
  const pools = poolFuses(d, T);
  const pooled = buf(B * d, USAGE.STORAGE | USAGE.COPY_SRC);

  let draws = 0;
  /** thr, keep, k0, k1 of a dropout site of rate p (its key drawn in this order per call when p > 0). */
  const maskFields = (p: number): { fields: UniformValues; draw?: number } =>
    p > 0 ? { fields: [["u", dropThreshold(p)], ["f", dropoutKeepScale(p)], ["u", 0], ["u", 0]], draw: draws++ } : { fields: [["u", 0], ["f", 1], ["u", 0], ["u", 0]] };
  const sites: BertSites = { att: [], res1: [], res2: [] };
  const b: BertBuilder = Object.assign(programList(), { device, c, B, T, hp, ap, half, buf, acts, sites, mask, poolW });
  const lanes = rowLanes(d);
  const rows = rowWorkgroups(N, d);
  const lnDims: UniformValues = [["u", N], ["u", d], ["f", c.eps]];

  b.flat(`qrag_bert_embed${halfKey(half)}`, () => embedShader(half), [ids, { weight: 0 }, { weight: 1 }, { weight: 2 }, e], [["u", N * d], ["u", T], ["u", d]], N * d);
  const em = maskFields(hp);
  sites.emb = em.draw;
  if (hp > 0) b.step({ key: `qrag_ln_drop_fwd_${lanes}${halfKey(half)}`, code: () => lnDropFwd(d, half), refs: [e, { weight: 3 }, { weight: 4 }, acts.x[0], acts.embSt], uniforms: [...lnDims, ...em.fields], grid: rows, stride: 0, draw: em.draw });
  else b.step({ key: `qrag_ln_fwd_${lanes}${halfKey(half)}`, code: () => lnFwd(d, half), refs: [e, { weight: 3 }, { weight: 4 }, acts.x[0], acts.embSt], uniforms: lnDims, grid: rows, stride: 0 });

  const dh = d / H;
  const tile = attentionTile(dh, device.limits.maxComputeWorkgroupStorageSize ?? 16384);
  // the attention draws its dropout mask itself (a backward draws it again from the same key)
  const keyLanes = attentionLanes(B, H, T, dh, tile);
  const attKey = `qrag_attn_fwd_separate_${dh}_${tile}_${ap > 0 ? "inline" : "nodrop"}${keyLanes > 1 ? `_l${keyLanes}` : ""}${halfKey(half)}`;
  const attCode = () => attentionForwardCode(dh, "separate", ap > 0 ? "inline" : false, tile, half, keyLanes);
  const attUniforms: UniformValues = [["u", B], ["u", T], ["u", H], ["u", d], ["f", 1 / Math.sqrt(dh)]];
  /** h = a·W + b (variables w, w + 1), y = LN(xi + h·m) with γ, β variables g, g + 1; v = xi + h·m and the row stats (subLayerEnd). */
  const residualLn = (a: BufferLike, w: number, k: number, xi: BufferLike, g: number, y: BufferLike, v: BufferLike, st: BufferLike, pool?: ResLnArgs["pool"]): number | undefined => {
    const m = maskFields(hp);
    for (const step of subLayerEnd({ a, w, xi, g, y, v, stats: st, m: N, n: d, k, eps: c.eps, mask: m, half, pool }, h)) b.step(step);
    return m.draw;
  };
  const [actName, actShader] = ACT[c.act];
  const actKey = `${actName}${halfKey(half)}`, actCode = () => actShader(half);
  const linear = (a: BufferLike, w: number, out: BufferLike, n: number, k: number, gelu = false): void => {
    b.step(linearStep(a, w, out, N, n, k, gelu, undefined, half));
  };
  for (let l = 0; l < L; l++) {
    const o = N_EMB + l * PER_LAYER; // q w b, k w b, v w b, o w b, ln1 γ β, fc1 w b, fc2 w b, ln2 γ β
    const x = acts.x[l];
    b.step(linearPartsStep(x, [o, o + 2, o + 4], [acts.q[l], acts.k[l], acts.v[l]], N, d, d, half));
    const m = maskFields(ap);
    sites.att.push(m.draw);
    b.step({ key: attKey, code: attCode, refs: [acts.q[l], acts.k[l], acts.v[l], mask, acts.ctx[l], acts.attSt[l]], uniforms: ap > 0 ? [...attUniforms, ...m.fields] : attUniforms, grid: attentionGrid(B, H, T, keyLanes), stride: 0, draw: m.draw });
    sites.res1.push(residualLn(acts.ctx[l], o + 6, d, x, o + 8, acts.mid[l], acts.v1[l], acts.st1[l]));
    if (!keep && c.act === "gelu") linear(acts.mid[l], o + 10, acts.f2[l], F, d, true); // GELU in fc1's epilogue
    else {
      linear(acts.mid[l], o + 10, acts.f1[l], F, d);
      b.flat(actKey, actCode, [acts.f1[l], acts.f2[l]], [["u", N * F]], N * F);
    }
    sites.res2.push(residualLn(acts.f2[l], o + 12, F, acts.mid[l], o + 14, acts.x[l + 1], acts.v2[l], acts.st2[l], l + 1 === L && pools ? { T, poolW, pooled } : undefined));
  }
  return finishPlan(b, pb, extend, { key, training: hp > 0 || ap > 0, ids, mask, poolW, pooled, last: acts.x[L], d, draws, half, pooledAlready: pools, home });
}
