/**
 * Shared machinery of the encoders: the ordered variable list and everything defined over it
 * (clone, hard copy, Polyak averaging, export/import), seeded initialisation, and token packing.
 */
import * as tf from "@tensorflow/tfjs";
import type { DeviceStates, Encoder, EncoderConfig, SerializedTensor, TapedForward, TokenBatch } from "./encoder.ts";
import { Rng } from "../util/rng.ts";
import { nextPow2 } from "./ops.ts";
import { lengthGroups, permuteRows } from "./length-groups.ts";
import { onDevice } from "../backend/device.ts";
import { polyakFused } from "./webgpu/fused-adamw.ts";
import { copyVariables } from "./webgpu/in-place.ts";
import { gatherRows, joinRows } from "./webgpu/join-rows.ts";
import { submitNow } from "./webgpu/recorded-encoder.ts";

/**
 * Polyak averaging target ← target·(1 − τ) + online·τ of each pair: on the device one fused program
 * per group of variables, in place (webgpu/fused-adamw.ts polyakFused), elsewhere tfjs ops, the
 * same arithmetic. polyakFrom's, and AdamW.step's for its `average`.
 */
export function polyakAverage(pairs: readonly { target: tf.Variable; online: tf.Tensor }[], tau: number): void {
  if (onDevice()) return polyakFused(pairs, tau);
  tf.tidy(() => {
    for (const { target, online } of pairs) target.assign(tf.add(tf.mul(target, 1 - tau), tf.mul(online, tau)));
  });
}

/** Encoders built here: the `Encoder` contract plus a fast no-grad embedding path. */
export interface QEncoder extends Encoder {
  /**
   * [batch·dim] embeddings (÷10, eval mode: no dropout) without building a gradient graph,
   * processed in sub-batches. Equal to `forward(batch, false)` up to float rounding.
   */
  embedNoGrad(batch: TokenBatch): Float32Array;
  /**
   * The same embeddings as a device-resident [batch, dim] tensor (no read): sub-batches of
   * `deviceRows` stay on the device and are joined there. The caller disposes it.
   */
  embedDevice(batch: TokenBatch, training?: boolean): tf.Tensor2D;
  /**
   * embedDevice(packActions(texts, maxTokens)) in eval mode, the same values, packed a slice at a
   * time: each slice's forward goes to the GPU before the next slice is packed.
   */
  embedTextsDevice(texts: readonly string[], maxTokens: number): tf.Tensor2D;
  clone(trainable?: boolean): QEncoder;
  /**
   * forward(batch, training) with its backward, without tfjs's tape (the learner's device pass),
   * or null where this encoder has no such path (nothing drawn, nothing run).
   */
  tapedForward(batch: TokenBatch, training: boolean): TapedForward | null;
  /**
   * The most rows of `len` tokens (the longest it packs, when omitted) whose tapedForward this
   * device holds (its activations kept for the backward); Infinity where nothing bounds them.
   */
  tapedRows(len?: number): number;
  /** exportWeights with async reads (the only form the device path can read). */
  exportWeightsAsync(): Promise<SerializedTensor[]>;
  /** Its states assembled on the device (encoder.ts DeviceStates), or null where it has no such path. */
  deviceStates(): DeviceStates | null;
  /** Names of `variables`, same order. */
  readonly variableNames: readonly string[];
  /** Total number of weights. */
  readonly paramCount: number;
  /** Generator for the dropout masks (its state can be saved/restored with getState/setState). */
  readonly dropoutRng: Rng;
}

type Init =
  | { kind: "normal"; std: number }
  | { kind: "uniform"; bound: number }
  | { kind: "zeros" }
  | { kind: "ones" };

export interface ParamSpec {
  name: string;
  shape: number[];
  init: Init;
}

/** How to fill a new encoder's weights: fresh from an Rng, or sharing another encoder's values. */
export type WeightSource =
  | { rng: Rng }
  | { from: BaseEncoder; trainable: boolean }
  /** Given values in spec order (pretrained weights, e.g. a Hugging Face folder); dropout masks from `rng`. */
  | { values: readonly SerializedTensor[]; rng: Rng };

let instanceCounter = 0;

export abstract class BaseEncoder implements QEncoder {
  readonly config: EncoderConfig;
  readonly dim: number;
  readonly variables: tf.Variable[];
  readonly variableNames: readonly string[];
  readonly dropoutRng: Rng;
  private cloneCount = 0;

  protected constructor(config: EncoderConfig, specs: readonly ParamSpec[], source: WeightSource) {
    validateConfig(config);
    this.config = { ...config };
    this.dim = config.dim;
    this.variableNames = specs.map((s) => s.name);
    const tag = `${config.type}${instanceCounter++}`;
    if ("values" in source) {
      this.dropoutRng = source.rng.fork("dropout");
      if (source.values.length !== specs.length) throw new Error(`${config.type}: ${source.values.length} tensors given, ${specs.length} expected`);
      this.variables = specs.map((s, i) => {
        const w = source.values[i];
        if (w.shape.length !== s.shape.length || w.shape.some((d, j) => d !== s.shape[j])) {
          throw new Error(`${config.type}: ${s.name} has shape [${w.shape}], expected [${s.shape}]`);
        }
        return tf.tidy(() => tf.variable(tf.tensor(w.data, w.shape, "float32"), true, `${tag}/${s.name}`));
      });
    } else if ("rng" in source) {
      const rng = source.rng;
      this.dropoutRng = rng.fork("dropout");
      const wrng = rng.fork("weights");
      this.variables = specs.map((s) =>
        tf.tidy(() => tf.variable(initTensor(s, wrng), true, `${tag}/${s.name}`)),
      );
    } else {
      const src = source.from;
      checkSameArch(src, this.config, specs);
      this.dropoutRng = src.dropoutRng.fork(`clone${src.cloneCount++}`);
      // A variable made from another shares its (immutable) data buffer until either is assigned.
      this.variables = src.variables.map((v, i) => tf.variable(v, source.trainable, `${tag}/${specs[i].name}`));
    }
  }

  get paramCount(): number {
    let n = 0;
    for (const v of this.variables) n += v.size;
    return n;
  }

  abstract packActions(texts: readonly string[], maxTokens: number): TokenBatch;
  abstract packStates(states: readonly (readonly string[])[], maxTokensPerPiece: number): TokenBatch;
  abstract forward(batch: TokenBatch, training: boolean): tf.Tensor2D;

  tapedForward(_batch: TokenBatch, _training: boolean): TapedForward | null {
    return null;
  }
  tapedRows(_len?: number): number {
    return Infinity;
  }
  deviceStates(): DeviceStates | null {
    return null;
  }
  /** A new instance of the same architecture whose variables share `this`'s values. */
  protected abstract cloneFrom(trainable: boolean): BaseEncoder;

  /** Rows per sub-batch in the default embedRows. */
  protected noGradRows(len: number): number {
    return Math.max(1, Math.floor(16384 / Math.max(1, len)));
  }

  /**
   * Eval-mode embeddings of all rows ([batch·dim]), no gradient graph. Identical rows (same ids
   * and mask — e.g. sentences repeated across a long haystack) are computed once.
   */
  embedNoGrad(batch: TokenBatch): Float32Array {
    checkBatch(batch);
    const D = this.dim;
    const dd = dedupeRows(batch);
    if (!dd) return this.embedRows(batch);
    const u = this.embedRows(dd.unique);
    const out = new Float32Array(batch.batch * D);
    for (let r = 0; r < batch.batch; r++) {
      const src = dd.index[r] * D;
      out.set(u.subarray(src, src + D), r * D);
    }
    return out;
  }

  /**
   * Rows per sub-batch of embedDevice: large, so a GPU gets big kernels (~64k tokens each), but on
   * the device no more than one recorded plan holds (planRows): a larger one would run through tfjs.
   */
  private deviceRows(len: number): number {
    const rows = Math.max(1, Math.floor(65536 / Math.max(1, len)));
    return onDevice() ? Math.min(rows, this.planRows(len)) : rows;
  }

  /** Rows of `len` tokens one recorded no-grad plan holds (Infinity: no recorded forward bounds them). */
  protected planRows(_len: number): number {
    return Infinity;
  }

  /**
   * Whether the device forward costs every padded position (a [rows, len] forward): embedDevice
   * then runs rows of different lengths apart (length-groups.ts). False where the forward packs
   * the tokens itself (the built-in transformer) or runs on the host.
   */
  protected padsRows(): boolean {
    return false;
  }

  embedDevice(batch: TokenBatch, training = false): tf.Tensor2D {
    checkBatch(batch);
    // Identical rows are embedded once and spread back with one gather (eval mode only: in
    // training mode each row draws its own dropout mask).
    const dd = training ? null : dedupeRows(batch);
    const rows = dd ? dd.unique : batch;
    const parts: tf.Tensor2D[] = [];
    const lg = this.padsRows() && onDevice() ? lengthGroups(rows) : null;
    if (!lg) {
      this.forwardRows(rows, training, parts);
      return this.joinParts(parts, dd?.index ?? null);
    }
    // shortest rows first, each group cut to its own padded length; the gather puts rows back
    const sorted = permuteRows(rows, lg.order);
    try {
      for (const [r0, r1] of lg.groups) this.forwardRows(subBatch(sorted, r0, r1, true), training, parts);
    } catch (e) {
      parts.forEach((p) => p.dispose());
      throw e;
    }
    return this.joinParts(parts, dd ? dd.index.map((u) => lg.inverse[u]) : lg.inverse);
  }

  /**
   * forward(batch, training) in sub-batches of deviceRows(len) rows, each cut to its own padded
   * length, appended to `parts`; the rows a sub-batch had.
   */
  private forwardRows(batch: TokenBatch, training: boolean, parts: tf.Tensor2D[]): number {
    const step = this.deviceRows(batch.len);
    for (let r0 = 0; r0 < batch.batch; r0 += step) {
      const sub = subBatch(batch, r0, Math.min(batch.batch, r0 + step), true);
      parts.push(tf.tidy(() => this.forward(sub, training)));
    }
    return step;
  }

  /**
   * The sub-batches' embeddings joined in order, each row taken from `index` when given
   * (deduplicated rows, length groups); the parts are released. On webgpu by buffer copies and a
   * gather program of ours: no tfjs kernel in an update's or a rollout's encoding.
   */
  private joinParts(parts: tf.Tensor2D[], index: Int32Array | null): tf.Tensor2D {
    if (parts.length === 0) return tf.zeros([0, this.dim]);
    if (onDevice() && parts.every((p) => p.dtype === "float32")) {
      const all = parts.length === 1 ? parts[0] : joinRows(parts);
      const out = index ? gatherRows(all, index) : all;
      if (out !== parts[0]) parts.forEach((p) => p.dispose());
      if (all !== out && all !== parts[0]) all.dispose();
      return out;
    }
    return tf.tidy(() => {
      const all = parts.length === 1 ? parts[0] : (tf.concat(parts, 0) as tf.Tensor2D);
      const out = index ? (tf.gather(all, tf.tensor1d(index, "int32")) as tf.Tensor2D) : all;
      if (out !== parts[0]) parts.forEach((p) => p.dispose());
      return out;
    });
  }

  /**
   * The device's eval embeddings of texts (candidate chunks: an episode's, a sweep's), streamed:
   * packing all of them first (and finding equal rows) kept the GPU idle for the host's whole
   * tokenization (40,000 chunks: ~55–110 ms on this 2-core machine, against ~190 ms of GPU time
   * on an H200). Here identical texts are embedded once (found as the slices go), a slice is
   * packed and its forward submitted at once, and the next slice is packed while the GPU runs it.
   * A slice has deviceRows(len) rows of the previous slice's padded length (the first: up to
   * 4,096 texts), split again where its own rows run longer. In eval mode a row's embedding does not depend on
   * the rows beside it, so the values equal embedDevice(packActions(texts)).
   */
  embedTextsDevice(texts: readonly string[], maxTokens: number): tf.Tensor2D {
    const index = new Int32Array(texts.length);
    const firstOf = new Map<string, number>();
    const unique: string[] = [];
    let seen = 0;
    /** Dedupes texts until `want` distinct ones wait past `u0` (or the texts run out): as slices go, not all first. */
    const fill = (u0: number, want: number) => {
      for (; seen < texts.length && unique.length - u0 < want; seen++) {
        const t = texts[seen];
        let u = firstOf.get(t);
        if (u === undefined) {
          u = unique.length;
          firstOf.set(t, u);
          unique.push(t);
        }
        index[seen] = u;
      }
    };
    const parts: tf.Tensor2D[] = [];
    try {
      let take = 4096;
      let u0 = 0;
      for (fill(u0, take); u0 < unique.length; fill(u0, take)) {
        const slice = this.packActions(unique.slice(u0, u0 + take), maxTokens);
        take = this.forwardRows(slice, false, parts);
        submitNow();
        u0 += slice.batch;
      }
    } catch (e) {
      parts.forEach((p) => p.dispose());
      throw e;
    }
    return this.joinParts(parts, unique.length < texts.length ? index : null);
  }

  /** embedNoGrad without deduplication: sub-batched eval forwards. */
  protected embedRows(batch: TokenBatch): Float32Array {
    const D = this.dim;
    const out = new Float32Array(batch.batch * D);
    const step = this.noGradRows(batch.len);
    for (let r0 = 0; r0 < batch.batch; r0 += step) {
      const sub = subBatch(batch, r0, Math.min(batch.batch, r0 + step), true);
      const y = tf.tidy(() => this.forward(sub, false));
      out.set(y.dataSync(), r0 * D);
      y.dispose();
    }
    return out;
  }

  clone(trainable?: boolean): QEncoder {
    return this.cloneFrom(trainable ?? this.variables.every((v) => v.trainable));
  }

  copyFrom(src: Encoder): void {
    this.checkPeer(src, "copyFrom");
    // on the device into the buffers this encoder holds, so the plans binding them keep their bind groups (in-place.ts)
    if (onDevice()) return copyVariables(this.variables, src.variables);
    for (let i = 0; i < this.variables.length; i++) this.variables[i].assign(src.variables[i]);
  }

  polyakFrom(src: Encoder, tau: number): void {
    this.checkPeer(src, "polyakFrom");
    if (!(tau >= 0 && tau <= 1)) throw new RangeError(`polyakFrom: tau must be in [0, 1], got ${tau}`);
    if (tau === 0) return;
    if (tau === 1) return this.copyFrom(src);
    polyakAverage(this.variables.map((v, i) => ({ target: v, online: src.variables[i] })), tau);
  }

  exportWeights(): SerializedTensor[] {
    return this.variables.map((v) => ({ shape: [...v.shape], data: Float32Array.from(v.dataSync() as Float32Array) }));
  }

  async exportWeightsAsync(): Promise<SerializedTensor[]> {
    const out: SerializedTensor[] = [];
    for (const v of this.variables) out.push({ shape: [...v.shape], data: Float32Array.from((await v.data()) as Float32Array) });
    return out;
  }

  importWeights(ws: readonly SerializedTensor[]): void {
    if (ws.length !== this.variables.length) {
      throw new Error(`importWeights: ${ws.length} tensors given, encoder has ${this.variables.length}`);
    }
    ws.forEach((w, i) => {
      const v = this.variables[i];
      const size = w.shape.reduce((a, b) => a * b, 1);
      if (w.shape.length !== v.shape.length || w.shape.some((d, j) => d !== v.shape[j]) || w.data.length !== size) {
        throw new Error(
          `importWeights: tensor ${i} (${this.variableNames[i]}) has shape [${w.shape}] / ${w.data.length} values, expected [${v.shape}]`,
        );
      }
    });
    tf.tidy(() => {
      ws.forEach((w, i) => this.variables[i].assign(tf.tensor(w.data, w.shape, "float32")));
    });
  }

  dispose(): void {
    for (const v of this.variables) if (!v.isDisposed) v.dispose();
  }

  private checkPeer(src: Encoder, op: string): void {
    if (src === this) return;
    if (src.config.type !== this.config.type || src.variables.length !== this.variables.length) {
      throw new Error(`${op}: encoder architectures differ (${src.config.type} vs ${this.config.type})`);
    }
    for (let i = 0; i < this.variables.length; i++) {
      const a = this.variables[i].shape, b = src.variables[i].shape;
      if (a.length !== b.length || a.some((d, j) => d !== b[j])) {
        throw new Error(`${op}: variable ${i} shape [${b}] != [${a}]`);
      }
    }
  }
}

function checkSameArch(src: BaseEncoder, config: EncoderConfig, specs: readonly ParamSpec[]): void {
  if (src.variables.length !== specs.length) throw new Error("clone: variable lists differ");
  specs.forEach((s, i) => {
    const v = src.variables[i].shape;
    if (v.length !== s.shape.length || v.some((d, j) => d !== s.shape[j])) {
      throw new Error(`clone: ${s.name} shape [${v}] != [${s.shape}] (config ${config.type})`);
    }
  });
}

function validateConfig(c: EncoderConfig): void {
  const bad = (m: string) => {
    throw new Error(`encoder config: ${m}`);
  };
  if (c.type !== "bow" && c.type !== "transformer" && c.type !== "hf") bad(`unknown type "${String(c.type)}"`);
  if (!Number.isInteger(c.dim) || c.dim <= 0 || c.dim % 4 !== 0) bad(`dim must be a positive multiple of 4, got ${c.dim}`);
  if (!Number.isInteger(c.vocab_size) || c.vocab_size < 4) bad(`vocab_size must be an integer ≥ 4, got ${c.vocab_size}`);
  if (!Number.isInteger(c.hidden) || c.hidden <= 0) bad(`hidden must be a positive integer, got ${c.hidden}`);
  if (!Number.isInteger(c.max_len) || c.max_len < 2) bad(`max_len must be an integer ≥ 2, got ${c.max_len}`);
  if (!(c.dropout >= 0 && c.dropout < 1)) bad(`dropout must be in [0, 1), got ${c.dropout}`);
  if (!(c.init_std > 0)) bad(`init_std must be > 0, got ${c.init_std}`);
  if (c.type === "transformer" || c.type === "hf") {
    if (!Number.isInteger(c.layers) || c.layers < 0) bad(`layers must be an integer ≥ 0, got ${c.layers}`);
    if (!Number.isInteger(c.heads) || c.heads <= 0 || c.dim % c.heads !== 0) {
      bad(`heads must divide dim (${c.dim}), got ${c.heads}`);
    }
  }
}

/** Normal samples via Box–Muller, both outputs used. */
export function fillNormal(out: Float32Array, std: number, rng: Rng): void {
  let i = 0;
  for (; i < out.length; i += 2) {
    let u = 0;
    while (u === 0) u = rng.next();
    const r = Math.sqrt(-2 * Math.log(u)) * std;
    const a = 2 * Math.PI * rng.next();
    out[i] = r * Math.cos(a);
    if (i + 1 < out.length) out[i + 1] = r * Math.sin(a);
  }
}

function initTensor(s: ParamSpec, rng: Rng): tf.Tensor {
  const size = s.shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(size);
  const init = s.init;
  switch (init.kind) {
    case "normal":
      fillNormal(data, init.std, rng);
      break;
    case "uniform":
      for (let i = 0; i < size; i++) data[i] = (2 * rng.next() - 1) * init.bound;
      break;
    case "ones":
      data.fill(1);
      break;
    case "zeros":
      break;
  }
  return tf.tensor(data, s.shape, "float32");
}

export function checkBatch(b: TokenBatch): void {
  if (b.ids.length !== b.batch * b.len || b.mask.length !== b.batch * b.len) {
    throw new Error(`TokenBatch: ids/mask length ${b.ids.length}/${b.mask.length} != ${b.batch}×${b.len}`);
  }
}

/**
 * Rows [r0, r1) of a batch (views, no copy). With `trim`, the length is cut to the next power of
 * two of the longest row's last unmasked token (rows are right-padded), which copies.
 */
function subBatch(b: TokenBatch, r0: number, r1: number, trim: boolean): TokenBatch {
  const L = b.len;
  const n = r1 - r0;
  let len = L;
  if (trim) {
    let last = 0;
    for (let r = r0; r < r1; r++) {
      for (let t = L - 1; t >= last; t--) {
        if (b.mask[r * L + t] > 0) {
          last = t + 1;
          break;
        }
      }
    }
    len = Math.min(L, nextPow2(Math.max(1, last)));
  }
  if (len === L) {
    return { ids: b.ids.subarray(r0 * L, r1 * L), mask: b.mask.subarray(r0 * L, r1 * L), batch: n, len: L };
  }
  const ids = new Int32Array(n * len);
  const mask = new Float32Array(n * len);
  for (let r = 0; r < n; r++) {
    ids.set(b.ids.subarray((r0 + r) * L, (r0 + r) * L + len), r * len);
    mask.set(b.mask.subarray((r0 + r) * L, (r0 + r) * L + len), r * len);
  }
  return { ids, mask, batch: n, len };
}

/**
 * Unique rows of a batch (same ids and mask) and, for every row, the index of its unique row;
 * null when all rows are distinct.
 */
function dedupeRows(b: TokenBatch): { unique: TokenBatch; index: Int32Array } | null {
  const L = b.len;
  const index = new Int32Array(b.batch);
  const firstOf = new Map<number, number[]>(); // hash → unique ids (first rows)
  const uniqueRows: number[] = [];
  const same = (r: number, u: number): boolean => {
    for (let t = 0; t < L; t++) {
      if (b.ids[r * L + t] !== b.ids[u * L + t] || b.mask[r * L + t] !== b.mask[u * L + t]) return false;
    }
    return true;
  };
  for (let r = 0; r < b.batch; r++) {
    let h = 0x811c9dc5;
    for (let t = r * L, e = t + L; t < e; t++) {
      h = Math.imul(h ^ b.ids[t], 0x01000193);
      h = Math.imul(h ^ (b.mask[t] > 0 ? 1 : 0), 0x01000193);
    }
    let bucket = firstOf.get(h);
    if (!bucket) {
      bucket = [];
      firstOf.set(h, bucket);
    }
    let found = -1;
    for (const u of bucket) {
      if (same(r, uniqueRows[u])) {
        found = u;
        break;
      }
    }
    if (found < 0) {
      found = uniqueRows.length;
      uniqueRows.push(r);
      bucket.push(found);
    }
    index[r] = found;
  }
  if (uniqueRows.length === b.batch) return null;
  const n = uniqueRows.length;
  const ids = new Int32Array(n * L);
  const mask = new Float32Array(n * L);
  uniqueRows.forEach((r, i) => {
    ids.set(b.ids.subarray(r * L, (r + 1) * L), i * L);
    mask.set(b.mask.subarray(r * L, (r + 1) * L), i * L);
  });
  return { unique: { ids, mask, batch: n, len: L }, index };
}

/**
 * Right-pads id rows to the next power of two of the longest row (at least 1), capped at
 * `maxLen` (longer rows are cut). Mask is 1 on real tokens.
 */
export function padRows(rows: readonly ArrayLike<number>[], maxLen: number): TokenBatch {
  let longest = 0;
  for (const r of rows) longest = Math.max(longest, r.length);
  const len = Math.min(maxLen, nextPow2(Math.max(1, longest)));
  const batch = rows.length;
  const ids = new Int32Array(batch * len);
  const mask = new Float32Array(batch * len);
  for (let b = 0; b < batch; b++) {
    const r = rows[b];
    const n = Math.min(len, r.length);
    for (let t = 0; t < n; t++) {
      ids[b * len + t] = r[t];
      mask[b * len + t] = 1;
    }
  }
  return { ids, mask, batch, len };
}
