/**
 * AdamW with torch.optim.AdamW semantics (docs/method.md §3.5): decoupled weight decay
 * p ← p·(1 − lr·wd) first, then the Adam update with bias correction:
 *   m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
 *   p ← p − (lr/(1−β1^t))·m / (√v/√(1−β2^t) + ε)
 * Written here (not tf.train.adam) because tfjs has no decoupled decay, applies ε differently,
 * and cannot export its moments for our checkpoints. A variable without a gradient in a step is
 * skipped, like a torch parameter whose .grad is None (its own step count does not advance).
 */
import * as tf from "@tensorflow/tfjs";
import { onDevice } from "../backend/device.ts";
import { adamwStepFused, clipNormFused } from "../model/webgpu/fused-adamw.ts";
import { GradPack, packLayout, packSegmentFloats, type PackLayout } from "../model/webgpu/grad-pack.ts";
import { polyakAverage } from "../model/base.ts";
import { optimizerSchema } from "../config/schema.ts";

interface AdamWConfig {
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
}

/** Q-RAG's settings: the defaults of the config's `algo.optimizer` (config-schema.ts). */
const QRAG_ADAMW: AdamWConfig = (() => {
  const o = optimizerSchema.omit({ lr: true }).parse({});
  return { beta1: o.betas[0], beta2: o.betas[1], eps: o.eps, weightDecay: o.weight_decay };
})();

export interface AdamWState {
  /** Number of step() calls. */
  stepCount: number;
  /** Per-variable step counts (bias correction), aligned with the variables. */
  steps: number[];
  names: string[];
  shapes: number[][];
  m: Float32Array[];
  v: Float32Array[];
}

/** Polyak targets averaged by a step (AdamW.step's `average`). */
export interface PolyakTargets {
  targets: readonly tf.Variable[];
  tau: number;
}

/** Gradients aligned with the variables (null/undefined = no gradient), or keyed by variable name. */
type Grads = tf.NamedTensorMap | (tf.Tensor | null | undefined)[];

export class AdamW {
  readonly config: AdamWConfig;
  readonly variables: tf.Variable[];
  /** The moments: a variable each (the tfjs path), or on the device path packed as the gradients are (a variable a segment, grad-pack.ts layout). */
  private readonly m: tf.Variable[];
  private readonly v: tf.Variable[];
  private readonly packed: { m: tf.Variable[]; v: tf.Variable[]; sizes: number[]; layout: PackLayout } | null;
  private steps: number[];
  private stepCount = 0;

  constructor(variables: tf.Variable[], config: Partial<AdamWConfig> = {}) {
    this.config = { ...QRAG_ADAMW, ...config };
    this.variables = variables;
    if (onDevice()) {
      const sizes = variables.map((x) => x.size);
      const layout = packLayout(sizes, packSegmentFloats());
      const zeros = () => tf.tidy(() => layout.totals.map((n) => tf.variable(tf.zeros([n]), false)));
      this.packed = { m: zeros(), v: zeros(), sizes, layout };
      this.m = [];
      this.v = [];
    } else {
      this.packed = null;
      // tidy: the zeros each variable starts from are released
      this.m = tf.tidy(() => variables.map((x) => tf.variable(tf.zerosLike(x), false)));
      this.v = tf.tidy(() => variables.map((x) => tf.variable(tf.zerosLike(x), false)));
    }
    this.steps = variables.map(() => 0);
  }

  get iterations(): number {
    return this.stepCount;
  }

  /**
   * One update at learning rate `lr`. Does not dispose the gradients (the caller owns them).
   * `gradScale` (a scalar tensor, e.g. the clipping factor) multiplies every gradient first.
   * `average`: then each variable's Polyak target (aligned with the variables) becomes
   * target·(1 − τ) + p·τ, 0 < τ < 1 (base.ts polyakAverage's arithmetic), with the update's own
   * program on the device. On the device path (an optimizer made on webgpu: `onDevice()`) the
   * update runs as fused WebGPU programs in place (model/webgpu/fused-adamw.ts, the same
   * arithmetic) over packed gradients (a GradPack, or a list packed first); elsewhere as the tfjs
   * ops below.
   */
  step(grads: Grads | GradPack, lr: number, gradScale?: tf.Scalar, average?: PolyakTargets): void {
    if (average && (average.targets.length !== this.variables.length || !(average.tau > 0 && average.tau < 1))) {
      throw new RangeError(`AdamW: ${average.targets.length} Polyak targets for ${this.variables.length} variables, τ ${average.tau} (must be in (0, 1))`);
    }
    if (this.packed) {
      if (!onDevice()) throw new Error("AdamW: this optimizer's moments are on the webgpu device; the backend is now " + tf.getBackend());
      if (grads instanceof GradPack) return this.stepFused(grads, lr, gradScale, average);
      const pack = GradPack.fromList(this.checked(alignGrads(this.variables, grads)), this.packed.sizes);
      try {
        return this.stepFused(pack, lr, gradScale, average);
      } finally {
        pack.dispose();
      }
    }
    if (grads instanceof GradPack) throw new Error("AdamW: packed gradients need an optimizer made on webgpu");
    const list = this.checked(alignGrads(this.variables, grads));
    const { beta1, beta2, eps, weightDecay } = this.config;
    this.stepCount++;
    for (let i = 0; i < this.variables.length; i++) {
      const g = list[i];
      if (!g) continue;
      const p = this.variables[i];
      const { stepSize, bc2Sqrt } = this.nextStep(i, lr);
      tf.tidy(() => {
        const g32 = g.dtype === "float32" ? g : tf.cast(g, "float32");
        const gf = gradScale ? tf.mul(g32, gradScale) : g32;
        const m = this.m[i].mul(beta1).add(gf.mul(1 - beta1));
        const v = this.v[i].mul(beta2).add(gf.square().mul(1 - beta2));
        const decayed = weightDecay !== 0 ? p.mul(1 - lr * weightDecay) : p;
        const denom = v.sqrt().div(bc2Sqrt).add(eps);
        this.m[i].assign(m);
        this.v[i].assign(v);
        p.assign(decayed.sub(m.div(denom).mul(stepSize)));
      });
    }
    if (average) polyakAverage(average.targets.map((target, i) => ({ target, online: this.variables[i] })), average.tau);
  }

  /** The gradients' shapes against the variables'. */
  private checked(list: (tf.Tensor | null | undefined)[]): (tf.Tensor | null | undefined)[] {
    list.forEach((g, i) => {
      const p = this.variables[i];
      if (g && !arraysEqual(g.shape, p.shape)) throw new RangeError(`AdamW: gradient shape [${g.shape}] ≠ variable ${p.name} [${p.shape}]`);
    });
    return list;
  }

  /** Variable i's step count advanced, and its step's bias corrections at rate lr. */
  private nextStep(i: number, lr: number): { stepSize: number; bc2Sqrt: number } {
    const { beta1, beta2 } = this.config;
    const t = ++this.steps[i];
    return { stepSize: lr / (1 - beta1 ** t), bc2Sqrt: Math.sqrt(1 - beta2 ** t) };
  }

  /** The device path's step: the variables with a gradient in the pack, in fused programs. */
  private stepFused(pack: GradPack, lr: number, gradScale: tf.Scalar | undefined, average: PolyakTargets | undefined): void {
    const packed = this.packed!;
    const { seg, offsets, totals } = packed.layout;
    if (pack.sizes.length !== packed.sizes.length || pack.layout.totals.length !== totals.length || pack.layout.offsets.some((o, i) => o !== offsets[i] || pack.layout.seg[i] !== seg[i])) throw new RangeError("AdamW: the gradient pack's layout is not the variables'");
    const { beta1, beta2, eps, weightDecay } = this.config;
    const decay = weightDecay !== 0 ? 1 - lr * weightDecay : 1;
    this.stepCount++;
    const slots = this.variables.flatMap((p, i) => (pack.present[i] ? [{ i, p, offset: offsets[i], ...(average ? { target: average.targets[i] } : {}), ...this.nextStep(i, lr), decay }] : []));
    // a segment's variables in its programs: its gradients and moments one binding each
    totals.forEach((_, s) => {
      const mine = slots.filter((x) => seg[x.i] === s);
      if (mine.length > 0) adamwStepFused(mine, { g: pack.flats[s], m: packed.m[s], v: packed.v[s] }, { beta1, beta2, eps, tau: average?.tau }, gradScale);
    });
    if (!average) return;
    // the targets of variables without a gradient this step average what they hold
    const rest = average.targets.flatMap((target, i) => (pack.present[i] ? [] : [{ target, online: this.variables[i] }]));
    if (rest.length > 0) polyakAverage(rest, average.tau);
  }

  getState(): AdamWState {
    return {
      stepCount: this.stepCount,
      steps: [...this.steps],
      names: this.variables.map((x) => x.name),
      shapes: this.variables.map((x) => [...x.shape]),
      ...(this.packed
        ? { m: this.unpack(this.packed.m.map((x) => x.dataSync() as Float32Array)), v: this.unpack(this.packed.v.map((x) => x.dataSync() as Float32Array)) }
        : { m: this.m.map((x) => Float32Array.from(x.dataSync() as Float32Array)), v: this.v.map((x) => Float32Array.from(x.dataSync() as Float32Array)) }),
    };
  }

  /** A packed moment's segments split per variable (copies). */
  private unpack(flats: Float32Array[]): Float32Array[] {
    const { sizes, layout } = this.packed!;
    return sizes.map((n, i) => flats[layout.seg[i]].slice(layout.offsets[i], layout.offsets[i] + n));
  }

  /** getState with async reads (the device path's form). */
  async getStateAsync(): Promise<AdamWState> {
    const read = async (xs: tf.Variable[]) => {
      const out: Float32Array[] = [];
      for (const x of xs) out.push(Float32Array.from((await x.data()) as Float32Array));
      return out;
    };
    return {
      stepCount: this.stepCount,
      steps: [...this.steps],
      names: this.variables.map((x) => x.name),
      shapes: this.variables.map((x) => [...x.shape]),
      ...(this.packed ? { m: this.unpack(await read(this.packed.m)), v: this.unpack(await read(this.packed.v)) } : { m: await read(this.m), v: await read(this.v) }),
    };
  }

  setState(state: AdamWState): void {
    const n = this.variables.length;
    if (state.m.length !== n || state.v.length !== n || state.steps.length !== n) {
      throw new RangeError(`AdamW.setState: state has ${state.m.length} slots, optimizer has ${n}`);
    }
    for (let i = 0; i < n; i++) {
      const size = this.variables[i].size;
      if (state.m[i].length !== size || state.v[i].length !== size) {
        throw new RangeError(`AdamW.setState: slot ${i} (${this.variables[i].name}) has the wrong size`);
      }
    }
    const packed = this.packed;
    if (packed) {
      const { seg, offsets, totals } = packed.layout;
      const join = (xs: Float32Array[]) => {
        const flats = totals.map((t) => new Float32Array(t));
        xs.forEach((x, i) => flats[seg[i]].set(x, offsets[i]));
        return flats;
      };
      tf.tidy(() => {
        join(state.m).forEach((f, s) => packed.m[s].assign(tf.tensor1d(f, "float32")));
        join(state.v).forEach((f, s) => packed.v[s].assign(tf.tensor1d(f, "float32")));
      });
    } else {
      for (let i = 0; i < n; i++) {
        const shape = this.variables[i].shape;
        tf.tidy(() => {
          this.m[i].assign(tf.tensor(state.m[i], shape, "float32"));
          this.v[i].assign(tf.tensor(state.v[i], shape, "float32"));
        });
      }
    }
    this.steps = [...state.steps];
    this.stepCount = state.stepCount;
  }

  dispose(): void {
    for (const x of [...this.m, ...this.v, ...(this.packed ? [...this.packed.m, ...this.packed.v] : [])]) x.dispose();
  }
}

/**
 * torch.nn.utils.clip_grad_norm_: norm = ‖all gradients‖₂; if max_norm/(norm + 1e-6) < 1 every
 * gradient is scaled by that factor. Returns new tensors (clones when unscaled) in the input's
 * form; the caller disposes both the inputs and the result. `norm` is the pre-clipping norm.
 */
export function clipByGlobalNorm<G extends Grads>(grads: G, maxNorm: number): { grads: G; norm: number } {
  const list: Grads = grads;
  const entries: [string | number, tf.Tensor][] = Array.isArray(list)
    ? list.flatMap((g, i) => (g ? [[i, g] as [number, tf.Tensor]] : []))
    : Object.entries(list);
  let norm = 0;
  if (entries.length > 0) {
    const t = tf.tidy(() => globalNorm(entries.map(([, g]) => g)));
    norm = t.dataSync()[0];
    t.dispose();
  }
  const coef = maxNorm / (norm + 1e-6);
  const scale = (g: tf.Tensor): tf.Tensor => (coef < 1 ? tf.tidy(() => g.mul(coef)) : tf.clone(g));
  if (Array.isArray(list)) {
    return { grads: list.map((g) => (g ? scale(g) : g)) as G, norm };
  }
  const out: tf.NamedTensorMap = {};
  for (const [k, g] of entries) out[k] = scale(g);
  return { grads: out as G, norm };
}

/**
 * ‖all gradients‖₂ as a scalar tensor: one AddN over every gradient's sum of squares (on webgpu,
 * webgpu-addn.ts splits an AddN wider than the storage-buffer limit).
 */
function globalNorm(grads: readonly tf.Tensor[]): tf.Scalar {
  return tf.sqrt(tf.addN(grads.map((g) => tf.sum(tf.square(tf.cast(g, "float32")))))) as tf.Scalar;
}

/**
 * clipByGlobalNorm for the device path, without touching the gradients: the pre-clipping norm
 * (on webgpu fused programs, fused-adamw.ts clipNormFused, compute both) and the factor
 * min(1, max_norm/(norm + 1e-6)) as tensors (no read), for `AdamW.step(grads, lr, coef)` to scale
 * the gradients inside its fused update. The caller disposes both.
 */
export function clipFactorDevice(input: readonly tf.Tensor[] | GradPack, maxNorm: number): { coef: tf.Scalar; norm: tf.Scalar } {
  // a pack's absent gradients are zeros: its flat tensor's norm is theirs
  const grads = input instanceof GradPack ? input.flats : input;
  if (grads.length === 0) return { coef: tf.scalar(1), norm: tf.scalar(0) };
  if (onDevice()) return clipNormFused(grads, maxNorm);
  return tf.tidy(() => {
    const norm = globalNorm(grads);
    return { coef: tf.minimum(1, tf.div(maxNorm, tf.add(norm, 1e-6))) as tf.Scalar, norm };
  });
}

function alignGrads(vars: tf.Variable[], grads: Grads): (tf.Tensor | null | undefined)[] {
  if (Array.isArray(grads)) {
    if (grads.length !== vars.length) {
      throw new RangeError(`AdamW: ${grads.length} gradients for ${vars.length} variables`);
    }
    return grads;
  }
  return vars.map((x) => grads[x.name]);
}

function arraysEqual(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
