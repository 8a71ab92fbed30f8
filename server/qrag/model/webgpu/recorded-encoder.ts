/**
 * The transformer encoder's forward without a gradient (model/transformer.ts `forwardDense`) as
 * our own WGSL programs recorded into tfjs's pending command encoder (no command buffer of its
 * own: it goes out with tfjs's next submit): no tfjs kernel runs inside it.
 *
 * Why: on a GPU the device path is host-bound by tfjs's per-op JavaScript (~0.075 ms a kernel);
 * the no-grad encoder forwards (rollout candidates and states, targets, evaluation) are most of a
 * training iteration's dispatches. Here one call costs ~25 dispatches' recording and no submit.
 *
 * Programs (the generators of matmul.ts, attention.ts, gelu-layernorm.ts, residual-layernorm.ts,
 * dropout.ts; only the embedding and the pooling are written here): the embedding gather +
 * positions with its dropout and layer 0's LN (one program, or up to d 256 the prologue of layer
 * 0's QKV product: matmul.ts embedLn); per layer QKV matmul+bias →
 * attention (drawing its dropout mask itself) → proj matmul+bias with residual+dropout+LN in its
 * epilogue → fc1 matmul+bias+GELU (GELU in the epilogue) → fc2 matmul+bias with residual+dropout+LN
 * (the next layer's or the final one) in its epilogue; masked mean ÷10 (in the last epilogue where
 * a sequence fits one row block, poolFuses): 5 per layer programs at d 128 and T ≤ 64 (3 + 11 per
 * layer as separate ops). The residual epilogue needs a row within one tile (d ≤ 128,
 * residualFuses); wider, the product and the residual + LN are two programs (2 + 7 per layer). A
 * no-grad forward of few rows (a rollout step's) runs everything after each layer's attention as one
 * program instead (layer-tail.ts: 2 per layer, the same bits). A taped forward (a backward follows) runs the same programs, the values its
 * backward reads written too (each residual's sum, fc1's value before GELU). The dropout keys are
 * drawn from the encoder's Rng in the order the tfjs path draws them, so the masks are the same.
 *
 * Caching: a plan per (B, T, training) holds the activation buffers and one uniform buffer (a
 * 256-byte slot per program), in a small LRU bounded by count and bytes (a taped forward's plan,
 * recorded-train.ts, keeps every layer's activations and its backward's programs and buffers); pipelines by shader key
 * (raw-program.ts's cache); each program's bind group is kept until a buffer it binds changes (the
 * weights' GPU buffers change when training assigns new values). Order with tfjs: the call is
 * recorded after tfjs's pending commands (which may write the weights or the inputs) and before
 * later ones; its inputs and uniforms reach the plan by copies in that order too (stagedCall,
 * staging-ring.ts), so a call of a plan still pending in the encoder needs no submit first. The
 * result is copied into a tfjs-owned buffer and returned as an ordinary tensor.
 */
import * as tf from "@tensorflow/tfjs";
import { noteDispatch, onePassPerProgram } from "../../backend/device.ts";
import { noteOutsideBytes } from "../../backend/gpu-memory.ts";
import type { Rng } from "../../util/rng.ts";
import { dropoutKeepScale, dropThreshold, maskKey } from "../../util/mask-hash.ts";
import { cachedPipeline, foldThreads, storageDecls, uniformStruct, webgpuBackend, WG, type GpuDeviceLike, type PipelineLike, type ShaderSource, type WebgpuBackendLike } from "./raw-program.ts";
import { halfName, isAligned, matmulShader, resLnTile, tileFor, tileName, transName, withOneTile, type MatmulTile, type MatmulTrans } from "./matmul.ts";
import { attentionGrid, attentionLanes, attentionTile, forwardCode as attentionForwardCode } from "./attention.ts";
import { lnFwdShader, type Activation } from "./gelu-layernorm.ts";
import { rowLanes, rowWorkgroups } from "./row-reduce.ts";
import { resLnFwd } from "./residual-layernorm.ts";
import { MASK_AT_WGSL } from "./dropout.ts";
import { maskedMeanWeights } from "../device-ops.ts";
import { POOL_SCALE } from "../encoder.ts";
import { ringRoom, stageAll, type Staged } from "./staging-ring.ts";
import { actBytes, enableHalf, halfActive, halfKey, readAct, writeAct } from "./half-storage.ts";
import { layerTailFits, layerTailShader, tailNeedsQkvBuffer, tailUniforms, TAIL_ROWS } from "./layer-tail.ts";
import { joinSteps, jointSchedule, SLOT_WORDS, uniformGridAt, type Joint, type ScheduledUnit } from "./fused-steps.ts";

/** GPUBufferUsage bits (the Dawn globals are untyped here). */
export const USAGE = { COPY_SRC: 0x04, COPY_DST: 0x08, UNIFORM: 0x40, STORAGE: 0x80 } as const;
/** Uniform slot per program: minUniformBufferOffsetAlignment's default (fused-steps.ts SLOT_WORDS words). */
const SLOT = SLOT_WORDS * 4;
/**
 * Plans kept (the oldest go first; their bytes are bounded per kind below, which binds first for
 * large encoders). One iteration of the reference workload uses about 7 shapes (candidates, states
 * of several padded lengths, targets, the update's two); with 6 the cache churned, 18 plans and
 * 636 buffers made over a counts run instead of 7 and 228 (bench dispatch-counts at max_len 256).
 * An hf encoder's length groups (length-groups.ts) make many more, rows of each padded length:
 * with 16, bert-tiny's `dispatch-bert` iteration built 39.5 plans (757 bind groups), with 64 it
 * built 19 (325), the groups' new row counts, each with buffers of its own (417 MiB an iteration);
 * as variants on a cached plan's buffers (roomyPlan) they make 4.7 MiB.
 */
const MAX_PLANS = 64;
/**
 * Variants (plans on another's buffers: roomyPlan) kept beside MAX_PLANS: each holds its programs,
 * bind groups and a uniform buffer, so an encoder's every row count of a length group can stay.
 */
const MAX_VARIANTS = 1024;
/**
 * The bytes each kind of plan may hold together, each its own budget so that neither evicts the
 * other's: no-grad plans (the rollout's many shapes) and keep plans (the update's passes, which
 * hold their activations for the backward: ~0.6 MB a token for BERT-base, 5.4 GiB for a pass of
 * 16 × 512, where tfjs's tape held 27 GB on an H100). Settable for tests (setPlanBounds).
 */
const planBounds = { plain: 1536 * 2 ** 20, keep: 8 * 2 ** 30 };
export type PlanKind = keyof typeof planBounds;
/** Plans that keep activations, per shape: a second taped forward before the first's backward takes another. */
const MAX_KEEP_INSTANCES = 2;
export const LN_EPS = 1e-5;

export interface BufferLike {
  size: number;
  destroy(): void;
}
interface PassLike {
  setPipeline(p: unknown): void;
  setBindGroup(i: number, g: unknown): void;
  dispatchWorkgroups(x: number, y: number, z: number): void;
  end(): void;
}
export interface EncoderLike {
  beginComputePass(d: object): PassLike;
  copyBufferToBuffer(src: BufferLike, so: number, dst: BufferLike, d0: number, size: number): void;
  clearBuffer(b: BufferLike, offset?: number, size?: number): void;
  finish(): unknown;
}
export interface DeviceLike extends GpuDeviceLike {
  createBuffer(d: { size: number; usage: number; label?: string }): BufferLike;
  createCommandEncoder(): EncoderLike;
  queue: { writeBuffer(b: BufferLike, offset: number, data: ArrayBufferView): void; submit(c: unknown[]): void };
}
export interface BackendLike extends WebgpuBackendLike {
  commandEncoder: WebgpuBackendLike["commandEncoder"];
  tensorMap: { get(id: object): { resource?: unknown } };
}

/** The transformer's configuration this needs (encoder.ts EncoderConfig's fields). */
export interface RecordedConfig {
  vocab_size: number;
  max_len: number;
  dim: number;
  hidden: number;
  heads: number;
  layers: number;
  dropout: number;
}

/**
 * Part of a plan's buffer a program binds: `size` bytes from `offset`, a multiple of PART_ALIGN
 * (a backward's gradients, each a part of one buffer that goes out in one copy).
 */
export interface BufferPart {
  of: BufferLike;
  offset: number;
  size: number;
}
/** Bytes a bound part's offset is a multiple of: WebGPU's default minStorageBufferOffsetAlignment, which no adapter may raise. */
export const PART_ALIGN = 256;

/**
 * Whether a backward's gradient buffer for variables of `sizes` (each at a PART_ALIGN-aligned
 * offset: recorded-backward.ts gradientParts) fits one buffer on this device (maxBufferSize,
 * WebGPU's default 256 MiB where it says none); a keep plan whose does not is not made.
 */
export function gradientsFit(device: DeviceLike, sizes: readonly number[]): boolean {
  const bytes = sizes.reduce((a, n) => a + Math.ceil((4 * n) / PART_ALIGN) * PART_ALIGN, 0);
  return bytes <= (device.limits.maxBufferSize ?? 2 ** 28);
}

/** The transformer's variables' sizes in transformer.ts's order: its backward's gradients. */
export function transformerGradSizes(c: RecordedConfig): number[] {
  const d = c.dim, F = c.hidden;
  const sizes = [c.vocab_size * d, c.max_len * d];
  for (let l = 0; l < c.layers; l++) sizes.push(d, d, d * 3 * d, 3 * d, d * d, d, d, d, d * F, F, F * d, d);
  sizes.push(d, d);
  return sizes;
}
/** A buffer a program binds: a plan's own, a part of one, or variable i's current GPU buffer. */
export type Ref = BufferLike | BufferPart | { weight: number };
export type UniformValues = ["u" | "f", number][];

export interface Step {
  key: string;
  code: ShaderSource;
  refs: Ref[];
  /** Uniform values after `stride`: [type, value]; mask keys are filled per call. */
  uniforms: UniformValues;
  /** The dropout draw (per call) whose k0, k1 are the last two of `uniforms`, when it drops. */
  draw?: number;
  /** Earlier sites' draws (layer-tail.ts: three sites in one program), in field order, their k0, k1 pairs right before the last two fields. */
  earlierDraws?: (number | undefined)[];
  grid: [number, number, number];
  stride: number;
  /** Its 256-byte slot of the plan's uniform buffer. */
  slot: number;
  /** Its bind groups, one per set of buffers it was recorded with (groupFor). */
  groups?: BoundGroup[];
  /** This step and the next as one program (fused-steps.ts), where both are recorded together. */
  joint?: Joint;
}

/**
 * The forward's activations: per layer when the plan keeps them for a backward (`keep`), else
 * the same few buffers for every layer. x[l] is layer l's input, x[L] the final LayerNorm's.
 */
export interface Acts {
  x: BufferLike[];
  mid: BufferLike[];
  hN1: BufferLike[];
  st1: BufferLike[];
  qkv: BufferLike[];
  ctx: BufferLike[];
  attSt: BufferLike[];
  hN2: BufferLike[];
  st2: BufferLike[];
  f1: BufferLike[];
  f2: BufferLike[];
  lnfSt: BufferLike;
}

/** The dropout draw of each site (undefined when not dropping): the backward applies the same masks. */
export interface Sites {
  emb?: number;
  att: (number | undefined)[];
  res1: (number | undefined)[];
  res2: (number | undefined)[];
}

/** What a backward adds to a plan (recorded-backward.ts). */
export interface BackPlan {
  steps: Step[];
  /** The upstream gradient [B, d] (copied in from tfjs's tensor). */
  dy: BufferLike;
  /** The variables' gradients, parts of `gradBuf` laid out as grad-pack.ts packLayout lays them (copied into a pack a run of one segment at a time, or each into a tfjs tensor). */
  grads: BufferPart[];
  gradBuf: BufferLike;
  /** gradBuf's floats: the layout's total. */
  gradFloats: number;
  /** Cleared before the pass (the token table's gradient: only the batch's rows are written). */
  clear: BufferPart[];
  /** The token rows' CSR (recorded-backward.ts tokenCsr), its partial rows, and the two steps whose uniforms take its counts. */
  csr: { dest: BufferLike; jobStart: BufferLike; pos: BufferLike; heavy: BufferLike; heavyStart: BufferLike; part: BufferLike; tok: Step; merge: Step };
}

export interface Plan {
  key: string;
  B: number;
  T: number;
  training: boolean;
  /** Its activations are stored as f16 (half-storage.ts). */
  half: boolean;
  bytes: number;
  buffers: BufferLike[];
  ids: BufferLike;
  mask: BufferLike;
  poolW: BufferLike;
  pooled: BufferLike;
  /** The last hidden states [B·T, d] that the pooling reads (f16 where `half`). */
  last: BufferLike;
  /** Whether the pooling is `steps`' last program (else the last residual + LayerNorm's epilogue pools). */
  poolApart: boolean;
  uniform: BufferLike;
  steps: Step[];
  /** Dropout draws per call (0 when not training or p = 0). */
  draws: number;
  back?: BackPlan;
  /** The taped forward whose activations this plan holds until its backward ran (keep plans). */
  owner: object | null;
  /** Evicted (its buffers destroyed). */
  dead: boolean;
  /** The tfjs command encoder its last forward / backward was recorded into (tfjsEncoderFor). */
  pendingIn: { forward: object | null; backward: object | null };
  /** Its key without the rows: no-grad plans of one family differ only in B (roomyPlan). */
  family?: string;
  /**
   * Set on a variant: the cached plan of its family with room for more rows whose buffers it runs
   * on (roomyPlan); a variant's own buffers are its uniform buffer alone.
   */
  base?: Plan;
}

/**
 * A plan's program list as its builders add to it (both encoders' forwards and backwards): `step`
 * appends to `list` (the forward's, or the backward's once it sets its own), each program taking
 * the plan's next uniform slot; `flat` is a one-thread-per-element program (its folded grid and
 * stride); `slots()` counts them all.
 */
export interface ProgramList {
  list: Step[];
  step(s: Omit<Step, "slot">): Step;
  flat(key: string, code: ShaderSource, refs: Ref[], uniforms: UniformValues, threads: number, draw?: number): Step;
  slots(): number;
}

export function programList(): ProgramList {
  let slots = 0;
  const p: ProgramList = {
    list: [],
    step: (s) => {
      const st = { ...s, slot: slots++ };
      p.list.push(st);
      return st;
    },
    flat: (key, code, refs, uniforms, threads, draw) => {
      const { grid, stride } = foldThreads(key, threads);
      return p.step({ key, code, refs, uniforms, grid, stride, draw });
    },
    slots: () => slots,
  };
  return p;
}

/** What buildPlan hands a backward builder. */
export interface PlanBuilder extends ProgramList {
  device: DeviceLike;
  c: RecordedConfig;
  B: number;
  T: number;
  dropping: boolean;
  /** The activations are f16 (half-storage.ts). */
  half: boolean;
  buf(floats: number, usage?: number): BufferLike;
  acts: Acts;
  sites: Sites;
  mask: BufferLike;
  poolW: BufferLike;
}

/** Counters for tests: what the recorder created (all plans together). */
export const recorderStats = { plans: 0, buffers: 0, bytes: 0, bindGroups: 0, calls: 0, trainCalls: 0, kernelsInside: 0 };

const plans = new WeakMap<object, Map<string, Plan>>();

let enabled = true;
/** Runs `fn` with the recorder on or off (tests and the bench compare it with the tfjs path it replaces), then restores the setting. */
export async function withRecorder<T>(on: boolean, fn: () => Promise<T>): Promise<T> {
  const was = enabled;
  enabled = on;
  try {
    return await fn();
  } finally {
    enabled = was;
  }
}

/** Embedding: x = (tok[ids[row]] + pos[row % T])·mask, one thread per element. */
/**
 * The embedding, token row + position row times the dropout mask, into x, and the first layer's
 * LayerNorm of it into y (its stats), one program of a group of threads per row.
 */
const embedLnFwd = (d: number, half: boolean) => lnFwdShader({
  n: d, fields: ["rows: u32", "n: u32", "eps: f32", "T: u32", "thr: u32", "keep: f32", "k0: u32", "k1: u32"],
  read: ["ids:i32", "tok", "pos", "gamma", "beta"], write: ["y", "x", "stats"], extra: MASK_AT_WGSL, src: "x",
  first: `let a = (tok[u32(ids[r]) * u.n + k] + pos[(r % u.T) * u.n + k]) * maskAt(o + k);\n    x[o + k] = ${writeAct(half, "a")};`,
  half: half ? ["x", "y"] : [],
});

/** Masked mean: y[b, c] = Σ_t w[b·T + t]·x[(b·T + t)·d + c] (w = mask·mul/count), one thread per output. */
export const poolShader = (half: boolean): string => `${enableHalf(half)}${uniformStruct(["B: u32", "T: u32", "d: u32"])}
${storageDecls([half ? "x:f16" : "x", "w"], ["y"])}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = threadIndex(gid);
  if (i >= u.B * u.d) { return; }
  let b = i / u.d;
  let c = i % u.d;
  var s = 0.0;
  for (var t = 0u; t < u.T; t++) {
    let r = b * u.T + t;
    s += ${readAct(half, "x[r * u.d + c]")} * w[r];
  }
  y[i] = s;
}`;

/** Whether the recorder takes this batch (on webgpu, ids inside the vocabulary). */
export function recorderApplies(vocab: number, ids: Int32Array, B: number, T: number): boolean {
  if (!recorderOn() || B === 0 || T === 0) return false;
  for (let i = 0; i < ids.length; i++) if (ids[i] < 0 || ids[i] >= vocab) return false;
  return true;
}

/**
 * The recorded forward of `vars` (transformer.ts's variable order) on a batch, or null where this
 * path does not apply (not on webgpu, a buffer over the device's binding limit, an id outside the
 * vocabulary): the caller then runs the tfjs path, which draws the dropout keys itself.
 */
export function recordedEncoderForward(vars: readonly tf.Variable[], c: RecordedConfig, ids: Int32Array, mask: Float32Array, B: number, T: number, training: boolean, rng: Rng): tf.Tensor2D | null {
  if (!recorderApplies(c.vocab_size, ids, B, T)) return null;
  const be = webgpuBackend() as BackendLike;
  const plan = planFor(be.device as DeviceLike, c, B, T, training && c.dropout > 0, null);
  if (!plan) return null;
  recorderStats.calls++;
  return submitForward(be, plan, vars, ids, mask, drawKeys(plan, rng));
}

/** Whether recorded programs run now: on webgpu with the recorder on. */
export function recorderOn(): boolean {
  return enabled && tf.getBackend() === "webgpu";
}

/** The transformer's no-grad plan of B rows of T tokens (made on a miss, and kept), or null where none is recorded. */
export function noGradPlan(c: RecordedConfig, B: number, T: number, training: boolean): Plan | null {
  if (!recorderOn() || B === 0 || T === 0) return null;
  return planFor((webgpuBackend() as BackendLike).device as DeviceLike, c, B, T, training && c.dropout > 0, null);
}

/**
 * The no-grad forward of `plan` (either encoder's) on a batch a program wrote on the device
 * (agent/lock-steps.ts), without the pooling, for a program that pools as it reads the rows
 * (lock-step.ts): `tokens` [2·B·T] holds the ids, then the mask as float bits, and is copied into
 * the plan's inputs in tfjs's command encoder, after the program that wrote it (the ids come from
 * the encoder's own packing of each piece, inside the vocabulary; the pooling weights are the
 * reading program's: a last program that pools anyway, poolFuses, pools stale ones, unread).
 * The last hidden states [B·T, d] come back as a tensor over the plan's own buffer (f16 pairs as
 * float32 elements where the plan's activations are half): read it before the plan's next call,
 * which writes that buffer again, and dispose it after (the buffer stays the plan's).
 */
export function recordedRowsOfTokens(plan: Plan, vars: readonly tf.Variable[], tokens: tf.Tensor, rng: Rng): tf.Tensor {
  const { B, T } = plan;
  if (tokens.size !== 2 * B * T) throw new Error(`recordedRowsOfTokens: ${tokens.size} values for 2 × ${B} × ${T}`);
  recorderStats.calls++;
  const be = webgpuBackend() as BackendLike;
  be.uploadToGPU(tokens.dataId);
  const enc = stagedForward(be, plan, vars, [], drawKeys(plan, rng));
  const src = be.tensorMap.get(tokens.dataId).resource as BufferLike;
  const n = B * T * 4;
  enc.copyBufferToBuffer(src, 0, plan.ids, 0, n);
  enc.copyBufferToBuffer(src, n, plan.mask, 0, n);
  be.commandQueueOwnedIds.add(tokens.dataId);
  recordSteps(be, enc, plan, plan.poolApart ? plan.steps.slice(0, -1) : plan.steps, vars);
  // the pooling's bind group made all the same: a plan's first call makes them all, not a later one in the hot loop
  if (plan.poolApart) bindGroupOf(be, be.device as DeviceLike, plan, plan.steps[plan.steps.length - 1], vars);
  const floats = B * T * (vars[0].shape[1] as number);
  const rows = tf.tensor({ buffer: plan.last, zeroCopy: true } as unknown as tf.TensorLike, [plan.half ? floats / 2 : floats], "float32");
  recordedIntoTfjs(be, [rows]);
  return rows;
}

/** This call's dropout keys (k0, k1 per draw), from the encoder's Rng in the tfjs path's order. */
export function drawKeys(plan: Plan, rng: Rng): number[] {
  const keys: number[] = [];
  for (let k = 0; k < plan.draws; k++) keys.push(...maskKey(rng));
  return keys;
}

/** The uniform slots of `steps` (contiguous slots) with this call's dropout keys, as bytes for plan.uniform at `offset`. */
function uniformSlots(steps: readonly Step[], keys: readonly number[]): { offset: number; data: Uint32Array } {
  const first = steps[0].slot;
  const uni = new ArrayBuffer(steps.length * SLOT);
  const u32 = new Uint32Array(uni);
  const f32 = new Float32Array(uni);
  for (const s of steps) {
    const o = ((s.slot - first) * SLOT) / 4;
    u32[o] = s.stride;
    s.uniforms.forEach(([ty, v], j) => {
      if (ty === "f") f32[o + 1 + j] = v;
      else u32[o + 1 + j] = v;
    });
    // its grid after its fields, where a joint program reads it (fused-steps.ts jointCode)
    const at = uniformGridAt(s.uniforms.length);
    if (at !== null) u32.set(s.grid, o + at);
    // k0, k1 are the last two fields; earlier sites' the pairs before them
    const earlier = s.earlierDraws ?? [];
    const sites = [...earlier.map((draw, i) => [draw, s.uniforms.length - 2 - 2 * (earlier.length - i)] as const), [s.draw, s.uniforms.length - 2] as const];
    for (const [draw, at] of sites) {
      if (draw === undefined) continue;
      u32[o + 1 + at] = keys[2 * draw];
      u32[o + 2 + at] = keys[2 * draw + 1];
    }
  }
  return { offset: first * SLOT, data: u32 };
}

/**
 * tfjs's pending command encoder with this call's inputs (`staged`) and the uniform slots of its
 * `steps` copied into the plan's buffers through the staging ring (staging-ring.ts), in order with
 * the encoder's other commands: a call of a plan already pending in it needs no submit first.
 */
export function stagedCall(be: BackendLike, plan: Plan, part: "forward" | "backward", vars: readonly tf.Variable[], staged: readonly Staged[], steps: readonly Step[], keys: readonly number[]): EncoderLike {
  // a call waiting in a joint scope on these buffers runs first: this call's inputs and uniforms would overwrite its
  if (waiting?.some((c) => storageOf(c.plan) === storageOf(plan))) flushJoint(be);
  const all = staged.filter((s) => s.data.byteLength > 0);
  if (steps.length > 0) {
    const u = uniformSlots(steps, keys);
    all.push({ dst: plan.uniform, offset: u.offset, data: u.data });
  }
  if (!ringRoom(be, all)) submitNow();
  const enc = ownRecording(() => tfjsEncoderFor(be, plan, part, vars));
  stageAll(be, enc, all);
  return enc;
}

function stagedForward(be: BackendLike, plan: Plan, vars: readonly tf.Variable[], staged: Staged[], keys: readonly number[]): EncoderLike {
  return stagedCall(be, plan, "forward", vars, staged, plan.steps, keys);
}

/**
 * tfjs's pending command encoder, ready for a recorded call of `plan` (its forward or its
 * backward): the call then goes out with tfjs's next submit (a read, or its batch size), in order
 * after tfjs's pending commands and before later ones, instead of in a command buffer of its own.
 * Its inputs and uniforms come in by copies in that order too (stagedCall).
 */
function tfjsEncoderFor(be: BackendLike, plan: Plan, part: "forward" | "backward", vars: readonly tf.Variable[]): EncoderLike {
  for (const v of vars) be.uploadToGPU(v.dataId);
  be.ensureCommandEncoderReady();
  be.endComputePassEncoder();
  const enc = be.commandEncoder as unknown as EncoderLike;
  plan.pendingIn[part] = enc;
  // tfjs keeps these buffers (a variable assigned meanwhile) until the encoder is submitted
  for (const v of vars) be.commandQueueOwnedIds.add(v.dataId);
  return enc;
}

/** After a call recorded into tfjs's encoder: its outputs are owned by the encoder; the call counts once toward tfjs's submit batch. */
export function recordedIntoTfjs(be: BackendLike, outputs: readonly tf.Tensor[]): void {
  for (const t of outputs) be.commandQueueOwnedIds.add(t.dataId);
  be.dispatchCountInPass++;
  if (tf.env().getNumber("WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE") <= be.dispatchCountInPass) be.submitQueue();
}

/** Before a plan's buffers are destroyed: a call of it still pending in tfjs's encoder is submitted. */
function submitPending(p: Plan): void {
  const be = webgpuBackend() as BackendLike;
  if (be.commandEncoder === null || (p.pendingIn.forward !== be.commandEncoder && p.pendingIn.backward !== be.commandEncoder)) return;
  submitNow();
}

/**
 * tfjs's pending commands (recorded calls among them) submitted now rather than at its next read
 * or batch, so the GPU starts on them while the host prepares what follows. Off webgpu, nothing.
 */
export function submitNow(): void {
  if (tf.getBackend() !== "webgpu") return;
  const be = webgpuBackend() as BackendLike;
  if (be.commandEncoder === null) return;
  be.endComputePassEncoder();
  be.submitQueue();
}

/** A call's programs waiting in a joint scope (recordJointly), and what it records after them. */
export interface WaitingCall {
  plan: Plan;
  part: "forward" | "backward";
  steps: readonly Step[];
  vars: readonly tf.Variable[];
  after: (enc: EncoderLike) => void;
}

let joining = true;
/**
 * The bench's `--join 0|1` (and tests): whether neighbours of a plan and two calls of a joint
 * scope run as joint programs (fused-steps.ts), or each program as a dispatch of its own.
 */
export function setJoining(on: boolean): void {
  joining = on;
}
export const joiningOn = (): boolean => joining;

/** The calls of the open joint scope, or null outside one. */
let waiting: WaitingCall[] | null = null;
/** Set while a call stages its inputs: tfjs's encoder is then readied for the call itself. */
let staging = false;

/** f, readying tfjs's encoder for a call of ours (not a foreign recording: flushBeforeOthers). */
function ownRecording<T>(f: () => T): T {
  staging = true;
  try {
    return f();
  } finally {
    staging = false;
  }
}

const hooked = new WeakSet<object>();

/**
 * Anything else recorded into tfjs's encoder while calls wait in a joint scope (a tfjs kernel, a
 * program or copy of ours, a read) records them first, so commands keep their order whatever runs
 * in the scope: every such recording readies tfjs's encoder first.
 */
function flushBeforeOthers(be: BackendLike): void {
  if (hooked.has(be)) return;
  hooked.add(be);
  const ready = be.ensureCommandEncoderReady.bind(be);
  be.ensureCommandEncoderReady = () => {
    if (waiting?.length && !staging) flushJoint(be);
    ready();
  };
}

/** A plan's storage: a variant runs on its base's buffers. */
const storageOf = (p: Plan): Plan => p.base ?? p;

/**
 * Runs f, whose recorded calls (forwards and backwards of different plans, with nothing else
 * recorded between them: devicePass's two encoders) wait until it returns and are then recorded
 * together: their programs interleaved, a program of each joined into one dispatch wherever they
 * may be (fused-steps.ts jointSchedule), each call's copies after its programs as before. Calls
 * on one plan's buffers run one after the other (stagedCall). Not nested.
 */
export function recordJointly<T>(f: () => T): T {
  if (waiting) throw new Error("recordJointly: scopes do not nest");
  if (!joining) return f();
  flushBeforeOthers(webgpuBackend() as BackendLike);
  waiting = [];
  try {
    return f();
  } finally {
    flushJoint(webgpuBackend() as BackendLike);
    waiting = null;
  }
}

/** Records `steps` of a staged call and then `after`, now, or at the joint scope's end. */
export function recordCall(be: BackendLike, enc: EncoderLike, call: WaitingCall): void {
  if (!waiting) {
    recordSteps(be, enc, call.plan, call.steps, call.vars);
    call.after(enc);
    return;
  }
  waiting.push(call);
}

/** Records the joint scope's waiting calls: two as one schedule, one (or more, in order) as they are. */
function flushJoint(be: BackendLike): void {
  const calls = waiting ?? [];
  if (!calls.length) return;
  waiting = [];
  // the encoder tfjs has now (a staging submit may have come between the calls)
  let enc: EncoderLike | undefined;
  for (const c of calls) enc = ownRecording(() => tfjsEncoderFor(be, c.plan, c.part, c.vars));
  if (calls.length === 2) recordTwo(be, enc!, calls[0], calls[1]);
  else for (const c of calls) recordSteps(be, enc!, c.plan, c.steps, c.vars);
  // each call's copies into the encoder tfjs has then: one's may submit (tfjs's batch of commands)
  for (const c of calls) c.after(ownRecording(() => tfjsEncoderFor(be, c.plan, c.part, c.vars)));
}

/** The schedule of two calls' programs, once per pair of program lists (plans are cached, their lists fixed). */
const schedules = new WeakMap<readonly Step[], WeakMap<readonly Step[], ScheduledUnit<Step>[]>>();

/** Two calls' programs in one compute pass, as jointSchedule interleaves and joins them. */
function recordTwo(be: BackendLike, enc: EncoderLike, c0: WaitingCall, c1: WaitingCall): void {
  const device = be.device as DeviceLike;
  let byB = schedules.get(c0.steps);
  if (!byB) schedules.set(c0.steps, (byB = new WeakMap()));
  let units = byB.get(c1.steps);
  if (!units) byB.set(c1.steps, (units = jointSchedule(c0.steps, c1.steps, device.limits)));
  dispatchAll(enc, units.map((u): Dispatch => {
    if (u.kind === "cross") return { key: u.joint.key, grid: u.joint.grid, group: groupFor(be, device, (u.joint.groups ??= []) as BoundGroup[], u.joint.key, u.joint.code, [[u.a, c0], [u.b, c1]]) };
    const c = u.list ? c1 : c0;
    return u.kind === "next" ? { key: u.joint.key, grid: u.joint.grid, group: jointGroupOf(be, device, c, u.step, u.joint) } : { key: u.step.key, grid: u.step.grid, group: bindGroupOf(be, device, c.plan, u.step, c.vars) };
  }));
}

/** A program to dispatch: its key (device.ts's counters), grid and bind group. */
interface Dispatch {
  key: string;
  grid: [number, number, number];
  group: BoundGroup;
}

/** `programs` in one compute pass of `enc` (a pass each while programs are timed: backend/gpu-timing.ts). */
function dispatchAll(enc: EncoderLike, programs: readonly Dispatch[]): void {
  const apart = onePassPerProgram();
  let pass = enc.beginComputePass({});
  programs.forEach((p, i) => {
    if (apart && i > 0) {
      pass.end();
      pass = enc.beginComputePass({});
    }
    pass.setPipeline(p.group.pipeline);
    pass.setBindGroup(0, p.group.bindGroup);
    pass.dispatchWorkgroups(p.grid[0], p.grid[1], p.grid[2]);
    noteDispatch(p.key);
  });
  pass.end();
}

/** Records `steps` into one compute pass of `enc`, a step and its next as their joint program where both are in the list. */
export function recordSteps(be: BackendLike, enc: EncoderLike, plan: Plan, steps: readonly Step[], vars: readonly tf.Variable[]): void {
  const device = be.device as DeviceLike;
  const programs: Dispatch[] = [];
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i];
    const next = joining && s.joint?.with === steps[i + 1] ? s.joint : undefined;
    if (next) i++;
    programs.push(next ? { key: next.key, grid: next.grid, group: jointGroupOf(be, device, { plan, vars }, s, next) } : { key: s.key, grid: s.grid, group: bindGroupOf(be, device, plan, s, vars) });
  }
  dispatchAll(enc, programs);
}

/** A new tfjs tensor of `shape`, filled by `enc` with a copy of `src`. */
export function copyOut(be: BackendLike, enc: EncoderLike, src: BufferLike | BufferPart, shape: number[]): tf.Tensor {
  const out = newTensor(be, shape);
  copyInto(enc, src, be, out);
  return out;
}

/** A new tfjs tensor of `shape` on the GPU, for a copy to fill (copyInto). */
function newTensor(be: BackendLike, shape: number[]): tf.Tensor {
  const out = be.makeTensorInfo(shape, "float32");
  be.uploadToGPU(out.dataId);
  return tf.engine().makeTensorFromTensorInfo(out);
}

/** `out`'s floats copied from `src` by `enc`. */
function copyInto(enc: EncoderLike, src: BufferLike | BufferPart, be: BackendLike, out: tf.Tensor): void {
  const [buf, at] = isPart(src) ? [src.of, src.offset] : [src, 0];
  enc.copyBufferToBuffer(buf, at, be.tensorMap.get(out.dataId).resource as BufferLike, 0, out.size * 4);
}

/** Whether a bound buffer is a part of one (BufferPart). */
const isPart = (b: unknown): b is BufferPart => typeof b === "object" && b !== null && "of" in b;

/** Writes the batch's inputs and records the forward into tfjs's command encoder; the pooled [B, d] as a tfjs tensor. */
export function submitForward(be: BackendLike, plan: Plan, vars: readonly tf.Variable[], ids: Int32Array, mask: Float32Array, keys: readonly number[]): tf.Tensor2D {
  const { B, T } = plan;
  const staged = [
    { dst: plan.ids, offset: 0, data: ids },
    { dst: plan.mask, offset: 0, data: mask },
    { dst: plan.poolW, offset: 0, data: maskedMeanWeights(mask, B, T, POOL_SCALE) },
  ];
  return recordSubmitted(be, stagedForward(be, plan, vars, staged, keys), plan, vars);
}

/** The forward of `plan` on the inputs its encoder's copies put in its buffers, recorded into `enc`: the pooled [B, d]. */
function recordSubmitted(be: BackendLike, enc: EncoderLike, plan: Plan, vars: readonly tf.Variable[]): tf.Tensor2D {
  const d = vars[0].shape[1] as number;
  const y = newTensor(be, [plan.B, d]) as tf.Tensor2D;
  recordCall(be, enc, {
    plan, part: "forward", steps: plan.steps, vars,
    after: (e) => {
      copyInto(e, plan.pooled, be, y);
      recordedIntoTfjs(be, [y]);
    },
  });
  return y;
}

/** A program's bind group and the buffers it binds. */
interface BoundGroup {
  pipeline: PipelineLike;
  bound: unknown[];
  bindGroup: unknown;
}

/** The step's bind group (groupFor). */
function bindGroupOf(be: BackendLike, device: DeviceLike, plan: Plan, s: Step, vars: readonly tf.Variable[]): BoundGroup {
  return groupFor(be, device, (s.groups ??= []), s.key, s.code, [[s, { plan, vars }]]);
}

/** A step and its next as their joint program (fused-steps.ts): its bind group (groupFor). */
function jointGroupOf(be: BackendLike, device: DeviceLike, call: { plan: Plan; vars: readonly tf.Variable[] }, s: Step, next: Joint): BoundGroup {
  return groupFor(be, device, (next.groups ??= []) as BoundGroup[], next.key, next.code, [[s, call], [next.with as Step, call]]);
}

/**
 * Bind groups a program keeps: one per set of buffers it is recorded with. Two encoders of one
 * shape (E_a at a rollout's start, E_a' after it) share a plan and bind their own variables.
 */
const GROUPS_KEPT = 4;

/**
 * The bind group of a program made of `parts` (a step each, of its plan and variables: their
 * bindings in order, then their uniform slots): one of `kept` that binds the same buffers, else
 * made and kept (the oldest dropped past GROUPS_KEPT).
 */
function groupFor(be: BackendLike, device: DeviceLike, kept: BoundGroup[], key: string, code: ShaderSource, parts: readonly (readonly [Step, { plan: Plan; vars: readonly tf.Variable[] }])[]): BoundGroup {
  const bound = parts.flatMap(([s, c]) => s.refs.map((r) => ("weight" in r ? be.tensorMap.get(c.vars[r.weight].dataId).resource : r)));
  const hit = kept.find((g) => g.bound.every((b, j) => b === bound[j]));
  if (hit) return hit;
  const pipeline = kept[0]?.pipeline ?? cachedPipeline(device, key, code);
  const entries: object[] = bound.map((b, j) => ({ binding: j, resource: isPart(b) ? { buffer: b.of, offset: b.offset, size: b.size } : { buffer: b } }));
  parts.forEach(([s, c], i) => entries.push({ binding: bound.length + i, resource: { buffer: c.plan.uniform, offset: s.slot * SLOT, size: SLOT } }));
  const group = { pipeline, bound, bindGroup: device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries }) };
  recorderStats.bindGroups++;
  if (kept.unshift(group) > GROUPS_KEPT) kept.pop();
  return group;
}

/**
 * What every matmul program of a plan shares: its tile (tileFor of the m × parts·n output unless
 * given), whether its loads are aligned, its key's head, the grid over `parts` column groups of
 * n, and the m, n, k uniforms its other fields follow.
 */
function tiled(m: number, n: number, k: number, parts = 1, tile = tileFor(m, parts * n)) {
  const aligned = isAligned(tile, m, n, k);
  const bm = tile.tm * tile.wy, bn = tile.tn * tile.wx;
  return {
    tile,
    aligned,
    head: `matmul-${tileName(tile)}-${aligned ? "aligned" : "checked"}`,
    grid: [parts * Math.ceil(n / bn), Math.ceil(m / bm), 1] as [number, number, number],
    uniforms: [["u", m], ["u", n], ["u", k], ["u", 0], ["u", 0]] as UniformValues,
  };
}

/** out [m, n] = a [m, k]·W + bias (then GELU with `gelu`, the value before it into `pre` when given), W and its bias variables w and w + 1 (our tiled matmul). */
export function linearStep(a: BufferLike, w: number, out: BufferLike, m: number, n: number, k: number, gelu = false, pre?: BufferLike, half = false): Omit<Step, "slot"> {
  const t = tiled(m, n, k);
  const epilogue = gelu && pre ? "keep" : gelu;
  const key = `${t.head}-bias${epilogue === "keep" ? "-gelu-keep" : epilogue ? "-gelu" : ""}${halfKey(half)}`;
  return { key, code: () => matmulShader(t.tile, t.aligned, { bias: true, gelu: epilogue, half: { a: half, c: half } }), refs: [a, { weight: w }, { weight: w + 1 }, out, ...(pre ? [pre] : [])], uniforms: t.uniforms, grid: t.grid, stride: 0 };
}

/**
 * Storage buffers a recorded plan's widest program binds: the last layer's product + residual +
 * LayerNorm + pooling (A, W, bias, x, γ, β, pooling weights; y, v, stats, pooled). Every adapter timed grants 16 (lavapipe, H100, H200); one
 * granting fewer runs the tfjs path.
 */
export const RECORDED_BINDINGS = 11;

/** Whether the device binds what the recorded plans' programs need. */
export function recorderBinds(device: DeviceLike): boolean {
  return (device.limits.maxStorageBuffersPerShaderStage ?? 8) >= RECORDED_BINDINGS;
}

/**
 * Whether a sub-layer's output product and the residual + LayerNorm after it run as one program
 * (matmul.ts resLnEpilogue): rows of d ≤ 128 fit one workgroup's tile. Wider (BERT-base's 768),
 * the product writes h and residual-layernorm.ts's program reads it.
 */
export function residualFuses(d: number): boolean {
  return resLnTile(d) !== null;
}

/** A sub-layer's end where residualFuses: y = LN(xi + (a·W + b)·m) with γ, β variables g, g + 1; v = xi + (a·W + b)·m and the row stats. */
export interface ResLnArgs {
  a: BufferLike;
  /** W and its bias: variables w and w + 1. */
  w: number;
  xi: BufferLike;
  g: number;
  y: BufferLike;
  v: BufferLike;
  stats: BufferLike;
  /** Rows, columns (d), depth. */
  m: number;
  n: number;
  k: number;
  eps: number;
  /** thr, keep, k0, k1 (k0, k1 filled per call by draw `draw`). */
  mask: { fields: UniformValues; draw?: number };
  half: boolean;
  /** The last layer's: also the masked-mean pooling of y into `pooled` (sequences of T rows, weights poolW), where poolFuses. */
  pool?: { T: number; poolW: BufferLike; pooled: BufferLike };
}

/** Whether the pooling rides on the last residual + LayerNorm program: rows of d fuse and each sequence's T rows lie in one row block. */
export function poolFuses(d: number, T: number): boolean {
  const tile = resLnTile(d);
  if (!tile) return false;
  const bm = tile.tm * tile.wy;
  return T <= bm && bm % T === 0;
}

/** The fused program of a sub-layer's end (residualFuses must hold). */
export function linearResLnStep(r: ResLnArgs): Omit<Step, "slot"> {
  const tile = resLnTile(r.n);
  if (!tile) throw new Error(`linearResLnStep: rows of ${r.n} columns do not fit one tile`);
  if (r.pool && !poolFuses(r.n, r.pool.T)) throw new Error(`linearResLnStep: sequences of ${r.pool.T} rows do not fit a row block`);
  const t = tiled(r.m, r.n, r.k, 1, tile);
  const p = r.pool;
  return {
    key: `${t.head}-bias-resln${p ? "-pool" : ""}${halfKey(r.half)}`,
    code: () => matmulShader(tile, t.aligned, { bias: true, half: { a: r.half, c: r.half }, resLn: p ? "pool" : true }),
    refs: [r.a, { weight: r.w }, { weight: r.w + 1 }, r.xi, { weight: r.g }, { weight: r.g + 1 }, ...(p ? [p.poolW] : []), r.y, r.v, r.stats, ...(p ? [p.pooled] : [])],
    uniforms: [...t.uniforms, ["u", p?.T ?? 0], ["f", r.eps], ...r.mask.fields],
    grid: t.grid,
    stride: 0,
    draw: r.mask.draw,
  };
}

/**
 * A sub-layer's end in both encoders' forwards (this file's, recorded-bert.ts's): h = a·W + b, then
 * y = LN(xi + h·m) with the sum into v and the row stats: one program where residualFuses (h null),
 * else the product into h and residual-layernorm.ts's program (the same mask).
 */
export function subLayerEnd(r: ResLnArgs, h: BufferLike | null): Omit<Step, "slot">[] {
  if (!h) return [linearResLnStep(r)];
  return [
    linearStep(r.a, r.w, h, r.m, r.n, r.k, false, undefined, r.half),
    { key: `qrag_res_ln_fwd_${rowLanes(r.n)}${halfKey(r.half)}`, code: () => resLnFwd(r.n, r.half), refs: [r.xi, h, { weight: r.g }, { weight: r.g + 1 }, r.y, r.v, r.stats], uniforms: [["u", r.m], ["u", r.n], ["f", r.eps], ...r.mask.fields], grid: rowWorkgroups(r.m, r.n), stride: 0, draw: r.mask.draw },
  ];
}

/** A backward's product (recorded-backward.ts, recorded-bert-backward.ts): what productStep computes. */
export interface Product {
  a: Ref;
  /** One operand B, or several sharing A (matmul.ts `parts`), each into its `out`. */
  b: Ref[];
  out: Ref[];
  m: number;
  n: number;
  k: number;
  trans: MatmulTrans;
  /** Plus R (single B only). */
  res?: BufferLike;
  /** A is an f16 activation (a weight's gradient Xᵀ·dY). */
  hA?: boolean;
  /**
   * out = (A·B)·f′(P) (matmul.ts actGrad): the activation `act`'s backward taken in, P its forward
   * input (f16 where `half`); single B, no R.
   */
  actGrad?: { act: Activation; p: BufferLike; half: boolean };
  /** Each B's column sums into these too: the biases' gradients beside their weights'. */
  sums?: Ref[];
  /**
   * A weight gradient (Aᵀ·B) split along K into this many parts (split-k.ts): workgroup z sums rows
   * z·K/split … into out [split, m, n] and sums [split, n] at offset z; K a multiple of split.
   */
  split?: number;
}

/** The program of a backward's product: out_p [m, n] = A·B_p (+ R), with B_p's column sums where asked. */
export function productStep(p: Product): Omit<Step, "slot"> {
  const parts = p.b.length;
  const split = p.split ?? 1;
  if (split > 1 && (!p.trans.a || p.trans.b || p.res || p.k % split)) throw new Error(`productStep: only a weight gradient Aᵀ·B with K (${p.k}) a multiple of the split (${split}) splits`);
  const ks = p.k / split;
  // a weight gradient takes at least 64×64 tiles and splits along K where it has few (split-k.ts)
  const t = tiled(p.m, p.n, ks, parts, tileFor(p.m, parts * p.n, !p.trans.a));
  const ag = p.actGrad;
  const h = { a: Boolean(p.hA), p: Boolean(ag?.half) };
  return {
    key: `${t.head}${transName(p.trans)}${p.res ? "-res" : ""}${p.sums ? "-cs" : ""}${parts > 1 ? `-x${parts}` : ""}${ag ? `-d${ag.act}` : ""}${halfName(h)}`,
    code: () => matmulShader(t.tile, t.aligned, { trans: p.trans, res: Boolean(p.res), half: h, colSum: Boolean(p.sums), parts, actGrad: ag?.act }),
    refs: [p.a, ...p.b, ...(p.res ? [p.res] : []), ...(ag ? [ag.p] : []), ...p.out, ...(p.sums ?? [])],
    // split: z's A and B start ks rows further on (Aᵀ [K, m], B [K, n]); its C is z·m·n further on
    uniforms: split > 1 ? [["u", p.m], ["u", p.n], ["u", ks], ["u", ks * p.m], ["u", ks * p.n]] : t.uniforms,
    grid: [t.grid[0], t.grid[1], split],
    stride: 0,
  };
}

/**
 * Weight gradients Aᵀ·B with their column sums (each a single B, its own A, out and sums, split
 * along K as `split` says) as one program (matmul.ts `group`): a workgroup per tile of each
 * product's parts, the products' tiles one list (the grid's x); all take `tile`.
 */
export function productGroupStep(ps: readonly (Product & { split: number })[], tile: MatmulTile): Omit<Step, "slot"> {
  for (const p of ps) {
    if (!p.trans.a || p.trans.b || p.b.length !== 1 || p.out.length !== 1 || p.sums?.length !== 1 || p.res || p.actGrad || p.k % p.split) throw new Error("productGroupStep: weight gradients Aᵀ·B with their column sums only, K a multiple of the split");
  }
  const hA = ps[0].hA ?? false;
  if (ps.some((p) => (p.hA ?? false) !== hA)) throw new Error("productGroupStep: A f16 in all products or none");
  const bm = tile.tm * tile.wy, bn = tile.tn * tile.wx;
  const aligned = ps.every((p) => isAligned(tile, p.m, p.n, p.k / p.split));
  const uniforms: UniformValues = [];
  let tiles = 0;
  for (const p of ps) {
    const ks = p.k / p.split;
    const batched = p.split > 1;
    const bx = Math.ceil(p.n / bn), nb = bx * Math.ceil(p.m / bm);
    uniforms.push(["u", p.m], ["u", p.n], ["u", ks], ["u", batched ? ks * p.m : 0], ["u", batched ? ks * p.n : 0], ["u", tiles], ["u", bx], ["u", nb]);
    tiles += p.split * nb;
  }
  if (tiles > 65535) throw new Error(`productGroupStep: ${tiles} tiles exceed a grid dimension`);
  const G = ps.length;
  const h = { a: hA };
  return {
    key: `matmul-${tileName(tile)}-${aligned ? "aligned" : "checked"}-tA-cs-g${G}${halfName(h)}`,
    code: () => matmulShader(tile, aligned, { trans: { a: true }, half: h, colSum: true, group: G }),
    refs: [...ps.flatMap((p) => [p.a, p.b[0]]), ...ps.flatMap((p) => [p.out[0], p.sums![0]])],
    uniforms,
    grid: [tiles, 1, 1],
    stride: 0,
  };
}

/**
 * Whether the transformer's embedding and first LayerNorm ride on layer 0's QKV product (matmul.ts
 * embedLn): a prologue thread per row sums d columns, so up to d 256 (wider, the program of its own).
 */
export function embedFuses(d: number): boolean {
  return d <= 256;
}

/**
 * Layer 0's QKV product with the embedding and its LayerNorm as its prologue (matmul.ts embedLn):
 * qkv = LN(emb(ids))·Wqkv + b, the embedding into x, its LayerNorm into y, the row stats; the
 * variables tok 0, pos 1, layer 0's γ, β 2, 3 and its QKV weight and bias 4, 5 (transformer.ts order).
 */
export function embedQkvStep(p: { ids: BufferLike; x: BufferLike; y: BufferLike; stats: BufferLike; qkv: BufferLike; m: number; d: number; T: number; mask: { fields: UniformValues; draw?: number }; half: boolean }): Omit<Step, "slot"> {
  const t = tiled(p.m, 3 * p.d, p.d);
  return {
    key: `${t.head}-bias-embed-ln${halfKey(p.half)}`,
    code: () => matmulShader(t.tile, t.aligned, { bias: true, half: { c: p.half }, embedLn: true }),
    refs: [p.ids, { weight: 0 }, { weight: 1 }, { weight: 2 }, { weight: 3 }, { weight: 4 }, { weight: 5 }, p.qkv, p.x, p.y, p.stats],
    uniforms: [...t.uniforms, ["u", p.T], ["f", LN_EPS], ...p.mask.fields],
    grid: t.grid,
    stride: 0,
    draw: p.mask.draw,
  };
}

/**
 * outs[p] [m, n] = a [m, k]·W_p + bias_p for the weights ws[p] (W_p and its bias variables ws[p]
 * and ws[p] + 1) in one program (matmul.ts `parts`): BERT's Q, K and V from one layer input.
 */
export function linearPartsStep(a: BufferLike, ws: readonly number[], outs: readonly BufferLike[], m: number, n: number, k: number, half = false): Omit<Step, "slot"> {
  const t = tiled(m, n, k, ws.length);
  return {
    key: `${t.head}-bias-x${ws.length}${halfKey(half)}`,
    code: () => matmulShader(t.tile, t.aligned, { bias: true, half: { a: half, c: half }, parts: ws.length }),
    refs: [a, ...ws.map((w) => ({ weight: w })), ...ws.map((w) => ({ weight: w + 1 })), ...outs],
    uniforms: t.uniforms,
    grid: t.grid,
    stride: 0,
  };
}

/**
 * The cached plan for (B, T, dropping), made (and older ones evicted) on a miss; null when a buffer
 * is too big. With `extend` (a backward builder) the plan keeps every layer's activations and is
 * handed to one taped forward at a time (`owner`): a plan of the shape whose backward has not run
 * yet is not reused while another may be made, else the oldest is taken over (its backward fails).
 */
export function planFor(device: DeviceLike, c: RecordedConfig, B: number, T: number, dropping: boolean, extend: ((b: PlanBuilder) => BackPlan) | null): Plan | null {
  // the architecture too: two encoders of one shape and different sizes (two runs in one worker) share no plan
  const rest = `${dropping ? `-drop${c.dropout}` : ""}${halfKey(halfActive(device))}`;
  const arch = `tf:${c.vocab_size}-${c.max_len}-${c.dim}-${c.hidden}-${c.heads}-${c.layers}`;
  // the layer tail (layer-tail.ts) is the bench's to switch: a plan built with it is not one without
  const tail = !extend && tailApplies(device, c, B * T);
  const base = `${arch}-${B}x${T}${rest}${tail ? "-tail" : ""}`;
  const key = extend ? keepKey(device, base) : base;
  const hit = cachedPlan(device, key);
  if (hit) return hit;
  const d = c.dim, F = c.hidden, H = c.heads, N = B * T;
  if (d % H !== 0 || d % 4 !== 0 || !recorderBinds(device)) return null;
  const sizes = [N * 3 * d, N * F, extend ? c.vocab_size * d : 0].map((n) => n * 4);
  const limit = device.limits.maxStorageBufferBindingSize ?? 128 * 2 ** 20;
  if (Math.max(...sizes) > limit || (extend && !gradientsFit(device, transformerGradSizes(c)))) return null;
  const family = `${arch}-*x${T}${rest}`;
  const build = () => buildPlan(device, c, key, B, T, dropping, tail, extend, extend ? undefined : { family, room: roomyPlan(device, family, B) });
  return admitPlan(device, extend ? withOneTile(build) : build());
}

/** Where a no-grad plan goes: its family, and the cached plan of that family whose buffers it takes (roomyPlan), if any. */
export interface PlanHome {
  family: string;
  room: Plan | undefined;
}

/**
 * The cached no-grad plan of `family` with the fewest rows of at least B (not itself a variant),
 * on whose buffers a plan of B rows is built, a variant (the base now the most recently used): a
 * length group's new row count then makes programs, bind groups and a uniform buffer, not another
 * set of activation buffers.
 */
export function roomyPlan(device: DeviceLike, family: string, B: number): Plan | undefined {
  let best: Plan | undefined;
  for (const p of planCache(device).values()) if (p.family === family && !p.base && p.B >= B && (!best || p.B < best.B)) best = p;
  return best && cachedPlan(device, best.key);
}

/**
 * The key of the keep plan (one that holds a taped forward's activations) a taped forward of
 * shape key `base` takes: a free one's, else a new one's while there are fewer than
 * MAX_KEEP_INSTANCES, else the oldest's (taken over: its pending backward fails).
 */
export function keepKey(device: DeviceLike, base: string): string {
  const mine = [...planCache(device).values()].filter((p) => p.key.startsWith(`${base}-keep#`));
  const free = mine.find((p) => p.owner === null);
  return free ? free.key : mine.length < MAX_KEEP_INSTANCES ? `${base}-keep#${mine.length}` : mine[0].key;
}

function planCache(device: DeviceLike): Map<string, Plan> {
  let cache = plans.get(device);
  if (!cache) plans.set(device, (cache = new Map()));
  return cache;
}

/** The device's cached plan `key` (now the most recently used), if any. */
export function cachedPlan(device: DeviceLike, key: string): Plan | undefined {
  const cache = planCache(device);
  const hit = cache.get(key);
  if (hit) {
    // a plan on another's buffers keeps that one as recent as itself
    for (const p of hit.base ? [hit.base, hit] : [hit]) {
      cache.delete(p.key);
      cache.set(p.key, p);
    }
  }
  return hit;
}

/** A keep plan (it has a backward) or a no-grad one. */
const kindOf = (p: Plan): PlanKind => (p.back ? "keep" : "plain");

/** The byte bound of a kind of plan. */
export function planBound(kind: PlanKind): number {
  return planBounds[kind];
}

/** Sets the byte bounds (tests: a small bound in place of GiBs of buffers); returns the previous ones. */
export function setPlanBounds(b: Partial<typeof planBounds>): typeof planBounds {
  const prev = { ...planBounds };
  Object.assign(planBounds, b);
  return prev;
}

/**
 * A new plan into the device's cache (the transformer's, recorded-bert.ts's and recorded-bert-train.ts's plans share it and
 * its bounds: their keys differ), the oldest evicted past the bounds (its kind's bytes, or the
 * plan count), never one whose activations wait for their backward; null (destroyed) when it alone
 * is over its kind's byte bound.
 */
export function admitPlan(device: DeviceLike, plan: Plan): Plan | null {
  const cache = planCache(device);
  if (plan.bytes > planBounds[kindOf(plan)]) {
    destroyPlan(plan);
    return null;
  }
  noteOutsideBytes(plan.bytes);
  cache.set(plan.key, plan);
  const total = { plain: 0, keep: 0 };
  const count = { plans: 0, variants: 0 };
  for (const p of cache.values()) {
    total[kindOf(p)] += p.bytes;
    count[p.base ? "variants" : "plans"]++;
  }
  const evict = (p: Plan): void => {
    cache.delete(p.key);
    total[kindOf(p)] -= p.bytes;
    count[p.base ? "variants" : "plans"]--;
    destroyPlan(p);
    noteOutsideBytes(-p.bytes);
  };
  for (const p of cache.values()) {
    if (p === plan) break;
    if (p.owner !== null || p === plan.base || p.dead) continue;
    const kind = kindOf(p);
    const over = p.base ? count.variants > MAX_VARIANTS : count.plans > MAX_PLANS || total[kind] > planBounds[kind];
    if (!over) continue;
    // the plans on its buffers go with it (their calls already recorded are submitted first)
    if (!p.base) for (const v of cache.values()) if (v.base === p) evict(v);
    evict(p);
  }
  return plan;
}

/** Destroys a plan's buffers (the GPU frees them once the work already submitted is done); a plan on another's buffers destroys only its own. */
function destroyPlan(p: Plan): void {
  submitPending(p);
  p.dead = true;
  p.buffers.forEach((b) => b.destroy());
}

/** A plan's buffers as they are made, each counted in `bytes` and the recorder's stats (both plan builders). */
export interface PlanBuffers {
  buffers: BufferLike[];
  bytes: number;
  /** A storage buffer of `floats` (rounded up to 16 bytes). */
  buf(floats: number, usage?: number): BufferLike;
  /** A storage buffer of `n` activations, f16 with `half` (half-storage.ts). */
  act(n: number, half: boolean): BufferLike;
  /** The uniform buffer: a SLOT per program. */
  uniform(slots: number): BufferLike;
}

export function planBuffers(device: DeviceLike, room?: Plan): PlanBuffers {
  // on `room`'s buffers: its storage buffers in the order it made them (a builder makes a family's
  // in one order, each no smaller for more rows); the uniform buffer its own
  const theirs = room?.buffers.filter((b) => b !== room.uniform) ?? [];
  let next = 0;
  const add = (size: number, usage: number): BufferLike => {
    if (room && !(usage & USAGE.UNIFORM)) {
      const b = theirs[next++];
      if (!b || b.size < size) throw new Error(`planBuffers: buffer ${next} of ${room.key} does not hold ${size} bytes`);
      return b;
    }
    const b = device.createBuffer({ size, usage });
    out.buffers.push(b);
    out.bytes += size;
    recorderStats.buffers++;
    recorderStats.bytes += size;
    return b;
  };
  const out: PlanBuffers = {
    buffers: [],
    bytes: 0,
    buf: (floats, usage = USAGE.STORAGE | USAGE.COPY_DST) => add(Math.max(16, Math.ceil((floats * 4) / 16) * 16), usage),
    // COPY_SRC: a plan's last rows go to a program of tfjs's as a tensor over the buffer (recordedRowsOfTokens)
    act: (n, half) => add(Math.max(16, Math.ceil(actBytes(half, n) / 16) * 16), USAGE.STORAGE | USAGE.COPY_DST | USAGE.COPY_SRC),
    uniform: (slots) => add(slots * SLOT, USAGE.UNIFORM | USAGE.COPY_DST),
  };
  return out;
}

/**
 * The bytes of a no-grad plan's buffers (buildPlan's without a backward, before 16-byte rounding;
 * the uniform slots' bound); `half`: its activations f16. About (8·dim + hidden)·4 bytes a token:
 * 37 KB at dim 768, so a sub-batch of 65,536 tokens there is over the no-grad plans' budget.
 */
export function forwardBytes(c: RecordedConfig, B: number, T: number, half = false, tail = false): number {
  const d = c.dim, F = c.hidden, H = c.heads, L = c.layers, N = B * T;
  // the layer stream, mid, hN1, qkv (3), ctx, h (not where the residual fuses); fc2's input (GELU
  // in fc1's epilogue); the layer tail's next QKV where fc2's input does not hold it
  const fused = residualFuses(d);
  const acts = (fused ? 7 : 8) * N * d + N * F + (tailNeedsQkvBuffer(d, F) ? 3 * N * d : 0);
  // ids, mask, pooling weights, row stats, the attention's row stats, the pooled output
  const f32 = 3 * N + 2 * N + 2 * B * H * T + B * d;
  // uniform slots: embedding, per layer 7 programs (5 where the residual fuses), pooling (unless the
  // last of them pools); with the layer tail (`tail`: tailApplies) layer 0's QKV, per layer 1, pooling
  const slots = tail ? 2 + L : 1 + (fused ? 5 : 7) * L + (poolFuses(d, T) ? 0 : 1);
  return (half ? 2 : 4) * acts + 4 * f32 + SLOT * slots;
}

/**
 * Rows of T tokens a plan holds on `device`: its bytes (`bytes(rows)`, affine in the rows but for a
 * few MB of split weight gradients' partials, split-k.ts) within `bound`, and its widest buffer
 * (`widest` floats a token) within the binding limit.
 */
export function rowsWithin(device: DeviceLike, bytes: (rows: number) => number, bound: number, widest: number, T: number): number {
  const fixed = bytes(0);
  const perRow = bytes(1) - fixed;
  const limit = device.limits.maxStorageBufferBindingSize ?? 128 * 2 ** 20;
  const byBinding = Math.floor(limit / (4 * T * widest));
  let rows = Math.max(1, Math.min(Math.floor((bound - fixed) / perRow), byBinding));
  while (rows > 1 && bytes(rows) > bound) rows--;
  return rows;
}

/** Rows of T tokens one no-grad plan holds: within the no-grad plans' budget and every buffer within the binding limit. */
export function forwardRows(c: RecordedConfig, T: number): number {
  const device = webgpuBackend().device as DeviceLike;
  const half = halfActive(device);
  return rowsWithin(device, (B) => forwardBytes(c, B, T, half), planBounds.plain, Math.max(c.hidden, 3 * c.dim), T);
}

/** `tail`: each layer after its QKV as one program (layer-tail.ts; planFor decides, as the plan's key says). */
function buildPlan(device: DeviceLike, c: RecordedConfig, key: string, B: number, T: number, dropping: boolean, tail: boolean, extend: ((b: PlanBuilder) => BackPlan) | null, home?: PlanHome): Plan {
  const d = c.dim, F = c.hidden, H = c.heads, N = B * T, L = c.layers;
  const keep = extend !== null;
  // activations stored as f16 (half-storage.ts), a taped forward's kept ones too
  const half = halfActive(device);
  const pb = planBuffers(device, home?.room);
  const buf = pb.buf;
  const act = (n: number): BufferLike => pb.act(n, half);
  const ids = buf(N), mask = buf(N), poolW = buf(N);
  /** One buffer per layer when keeping activations, else one shared by all layers (`mk` makes one). */
  const perLayer = (n: number, mk: (n: number) => BufferLike = act, count = L): BufferLike[] => {
    if (keep) return Array.from({ length: count }, () => mk(n));
    const one = mk(n);
    return Array.from({ length: count }, () => one);
  };
  const xa = act(N * d);
  const mid = perLayer(N * d);
  // shared: layer inputs alternate with the mid-layer stream (xa → mid → xa); kept: their own
  const x = keep ? [xa, ...Array.from({ length: L }, () => act(N * d))] : Array.from({ length: L + 1 }, () => xa);
  const hN1 = perLayer(N * d), st1 = perLayer(N * 2, buf);
  const f2 = perLayer(N * F);
  const acts: Acts = {
    x, mid, hN1, st1,
    hN2: keep ? perLayer(N * d) : hN1,
    st2: keep ? perLayer(N * 2, buf) : st1,
    qkv: perLayer(N * 3 * d), ctx: perLayer(N * d), attSt: perLayer(B * H * T * 2, buf),
    // fc1's value before GELU is kept only for a backward (without one GELU is fc1's epilogue)
    f1: keep ? perLayer(N * F) : f2, f2,
    lnfSt: keep ? buf(N * 2) : st1[0],
  };
  // the layer tail's next QKV where fc2's input buffer does not hold it (made whether or not these rows take the tail: a family's order)
  const qkvSpare = !keep && tailNeedsQkvBuffer(d, F) ? act(N * 3 * d) : acts.f2[0];
  const hNf = keep ? act(N * d) : hN1[0];
  // a sub-layer's output before its residual, where the residual + LayerNorm is a program of its own
  const fuses = residualFuses(d);
  const h = fuses ? null : act(N * d);
  // the pooling in the last residual + LayerNorm program (poolFuses implies residualFuses)
  const pools = poolFuses(d, T) && !tail;
  const pooled = buf(B * d, USAGE.STORAGE | USAGE.COPY_SRC);

  const rate = dropping ? c.dropout : 0;
  const thr = dropThreshold(rate), keepScale = dropping ? dropoutKeepScale(rate) : 1;
  let draws = 0;
  /** thr, keep, k0, k1 of a dropout site (its key drawn in this order per call when dropping). */
  const maskFields = (): { fields: UniformValues; draw?: number } =>
    dropping ? { fields: [["u", thr], ["f", keepScale], ["u", 0], ["u", 0]], draw: draws++ } : { fields: [["u", 0], ["f", 1], ["u", 0], ["u", 0]] };
  const sites: Sites = { att: [], res1: [], res2: [] };
  const b: PlanBuilder = Object.assign(programList(), { device, c, B, T, dropping, half, buf, acts, sites, mask, poolW });
  const linear = (a: BufferLike, w: number, out: BufferLike, m: number, n: number, k: number): void => {
    b.step(linearStep(a, w, out, m, n, k, false, undefined, half));
  };
  // LayerNorm and attention tile their own grids (a group of threads per row; a workgroup per
  // (sequence, head, block of queries)): no folded stride
  const em = maskFields();
  sites.emb = em.draw;
  // the embedding and layer 0's LayerNorm: the prologue of layer 0's QKV product (matmul.ts embedLn), or a program of their own
  const embedInQkv = embedFuses(d);
  if (embedInQkv) b.step(embedQkvStep({ ids, x: x[0], y: hN1[0], stats: st1[0], qkv: acts.qkv[0], m: N, d, T, mask: em, half }));
  else b.step({ key: `qrag_embed_ln_fwd_${rowLanes(d)}${halfKey(half)}`, code: () => embedLnFwd(d, half), refs: [ids, { weight: 0 }, { weight: 1 }, { weight: 2 }, { weight: 3 }, hN1[0], x[0], st1[0]], uniforms: [["u", N], ["u", d], ["f", LN_EPS], ["u", T], ...em.fields], grid: rowWorkgroups(N, d), stride: 0, draw: em.draw });
  const dh = d / H;
  const tile = attentionTile(dh, device.limits.maxComputeWorkgroupStorageSize ?? 16384);
  // the attention draws its dropout mask itself (no mask program; a backward draws it again from the same key)
  const keyLanes = attentionLanes(B, H, T, dh, tile);
  const attKey = `packed_${dh}_${tile}_${dropping ? "inline" : "nodrop"}${keyLanes > 1 ? `_l${keyLanes}` : ""}${halfKey(half)}`;
  const attCode = () => attentionForwardCode(dh, "packed", dropping ? "inline" : false, tile, half, keyLanes);
  const attUniforms: UniformValues = [["u", B], ["u", T], ["u", H], ["u", d], ["f", 1 / Math.sqrt(dh)]];
  /** A sub-layer's end (subLayerEnd), the sum into `v` (kept for a backward, which reads v, y and stats). */
  const residualLn = (a: BufferLike, w: number, k: number, xi: BufferLike, v: BufferLike, g: number, y: BufferLike, stats: BufferLike, pool?: ResLnArgs["pool"]): number | undefined => {
    const m = maskFields();
    for (const st of subLayerEnd({ a, w, xi, g, y, v, stats, m: N, n: d, k, eps: LN_EPS, mask: m, half, pool }, h)) b.step(st);
    return m.draw;
  };
  for (let l = 0; l < L; l++) {
    const o = 2 + l * 12; // ln1 γ β, qkv w b, proj w b, ln2 γ β, fc1 w b, fc2 w b
    // its LayerNorm came with the embedding (l = 0) or the residual before it; with the tail, its QKV too (l > 0)
    if (l > 0 ? !tail : !embedInQkv) linear(hN1[l], o + 2, acts.qkv[l], N, 3 * d, d);
    const m = dropping ? maskFields() : null;
    sites.att.push(m?.draw);
    if (tail) {
      // the rest of the layer as one program: its attention reads this layer's QKV, and it writes
      // the next one's into the other of qkv and the spare (fc2's input, unused here, where it holds it); the stream in place
      const [qkvIn, qkvOut] = l % 2 === 0 ? [acts.qkv[l], qkvSpare] : [qkvSpare, acts.qkv[l]];
      const last = l + 1 === L;
      const [m1, m2] = [maskFields(), maskFields()];
      b.step(layerTailStep({ qkv: qkvIn, mask, x: xa, out: last ? hNf : qkvOut, o, gn: last ? 2 + L * 12 : o + 12, m: N, T, d, F, dh, lanes: keyLanes, last, dropout: { thr, keep: keepScale }, draws: [m?.draw, m1.draw, m2.draw] }));
      continue;
    }
    b.step({ key: `qrag_attn_fwd_${attKey}`, code: attCode, refs: [acts.qkv[l], mask, acts.ctx[l], acts.attSt[l]], uniforms: m ? [...attUniforms, ...m.fields] : attUniforms, grid: attentionGrid(B, H, T, keyLanes), stride: 0, draw: m?.draw });
    sites.res1.push(residualLn(acts.ctx[l], o + 4, d, x[l], mid[l], o + 6, acts.hN2[l], acts.st2[l]));
    // GELU in fc1's epilogue (the value before it kept for a backward's GELU)
    b.step(linearStep(acts.hN2[l], o + 8, acts.f2[l], N, F, d, true, keep ? acts.f1[l] : undefined, half));
    // the next LayerNorm: the next layer's first, or the final one
    const [g, y, st] = l + 1 < L ? [o + 12, hN1[l + 1], st1[l + 1]] : [2 + L * 12, hNf, acts.lnfSt];
    sites.res2.push(residualLn(acts.f2[l], o + 10, F, mid[l], x[l + 1], g, y, st, l + 1 === L && pools ? { T, poolW, pooled } : undefined));
  }
  return finishPlan(b, pb, extend, { key, training: dropping, ids, mask, poolW, pooled, last: hNf, d, draws, half, pooledAlready: pools, home });
}

/** Whether a no-grad forward of `rows` rows of this transformer takes the layer tail (layer-tail.ts; f32 activations only). */
export function tailApplies(device: DeviceLike, c: RecordedConfig, rows: number): boolean {
  return !halfActive(device) && layerTailFits(device.limits, c.dim, c.hidden, rows);
}

/**
 * The layer tail's program (layer-tail.ts) for layer l (its variables from o: proj o + 4, 5, LN
 * γ β o + 6, 7, fc1 o + 8, 9, fc2 o + 10, 11; the next LayerNorm's γ β gn, gn + 1; the next
 * QKV o + 14, 15): from this layer's `qkv`, the stream `x` in place and the next QKV into `out`,
 * or after the last layer the final LayerNorm's rows into `out`. `dropout`: thr and keep (0 and
 * 1 when not dropping); `lanes`: the attention's key lanes (attention.ts attentionLanes); `draws` the three sites' draws (the attention's probabilities, the
 * residual after proj, the one after fc2).
 */
function layerTailStep(p: { qkv: BufferLike; mask: BufferLike; x: BufferLike; out: BufferLike; o: number; gn: number; m: number; T: number; d: number; F: number; dh: number; lanes: number; last: boolean; dropout: { thr: number; keep: number }; draws: (number | undefined)[] }): Omit<Step, "slot"> {
  const w = (i: number): Ref => ({ weight: i });
  const { o, d, F, dh, lanes, last } = p;
  const weights = [...[4, 5, 6, 7, 8, 9, 10, 11].map((k) => w(o + k)), w(p.gn), w(p.gn + 1), ...(last ? [] : [w(o + 14), w(o + 15)])];
  return {
    key: `qrag_layer_tail_${d}_${F}_${dh}${lanes > 1 ? `_l${lanes}` : ""}${last ? "_last" : ""}`,
    code: () => layerTailShader(d, F, last, dh, lanes),
    refs: last ? [p.qkv, p.mask, p.x, ...weights, p.out] : [p.qkv, p.mask, ...weights, p.x, p.out],
    uniforms: tailUniforms(p.m, p.T, d, F, dh, LN_EPS, p.dropout.thr, p.dropout.keep),
    grid: [Math.ceil(p.m / TAIL_ROWS), 1, 1],
    stride: 0,
    earlierDraws: p.draws.slice(0, 2),
    draw: p.draws[2],
  };
}

/**
 * The end of every encoder's plan (this transformer's, recorded-bert.ts's): the masked-mean pooling
 * of the last hidden states `last` into `pooled`, a taped plan's backward programs (`extend`, in a
 * list of their own), the uniform buffer for all of them, and the Plan.
 */
export function finishPlan<Bld extends ProgramList & { B: number; T: number; device: DeviceLike }>(
  b: Bld, pb: PlanBuffers, extend: ((b: Bld) => BackPlan) | null,
  p: { key: string; training: boolean; ids: BufferLike; mask: BufferLike; poolW: BufferLike; pooled: BufferLike; last: BufferLike; d: number; draws: number; half: boolean; pooledAlready?: boolean; home?: PlanHome },
): Plan {
  const { B, T } = b;
  // its own program unless the last residual + LayerNorm pooled (poolFuses)
  if (!p.pooledAlready) b.flat(`qrag_rec_pool${halfKey(p.half)}`, () => poolShader(p.half), [p.last, p.poolW, p.pooled], [["u", B], ["u", T], ["u", p.d]], B * p.d);
  const steps = b.list;
  let back: BackPlan | undefined;
  if (extend) {
    b.list = [];
    back = extend(b);
  }
  // a taped plan's independent neighbours (mostly its backward's) run as one program (fused-steps.ts)
  if (back) {
    joinSteps(steps, b.device.limits);
    joinSteps(back.steps, b.device.limits);
  }
  const uniform = pb.uniform(b.slots());
  recorderStats.plans++;
  const { key, training, ids, mask, poolW, pooled, last, draws, half } = p;
  return { key, B, T, training, half, bytes: pb.bytes, buffers: pb.buffers, ids, mask, poolW, pooled, last, poolApart: !p.pooledAlready, uniform, steps, draws, back, owner: null, dead: false, pendingIn: { forward: null, backward: null }, family: p.home?.family, base: p.home?.room };
}
