/**
 * The PQN update (docs/method.md §3.5): twin-head loss 0.5·mse(2·q1, G) + 0.5·mse(2·q2, G) on the
 * selection-time rotated action embeddings, gradients accumulated over `accumulate_grads`
 * micro-steps, global-norm clipping, AdamW with the LR schedule, α following the LR, then Polyak
 * targets and the hard policy copy.
 *
 * A micro-step's forward/backward may run in passes of at most `passSize` transitions whose
 * gradients are summed (in place on webgpu, webgpu/accumulate.ts), each pass's loss weighted by
 * its share of the batch over `accumulate_grads` (the reference's loss / accumulate_grads): the same update in
 * a fraction of the activation memory (BERT-base at batch 64 and 512 tokens needs over 80 GB in
 * one pass on webgpu; in passes of 16 it trains in 29 GB). On webgpu a pass is also no larger than
 * the encoders' recorded update holds (passRows).
 */
import * as tf from "@tensorflow/tfjs";
import type { AlgoConfig } from "../config/schema.ts";
import { rotateTf } from "../model/rotary.ts";
import { rotaryFused } from "../model/webgpu/rotary.ts";
import { twinLoss } from "../model/qfunction.ts";
import { AdamW, clipByGlobalNorm, clipFactorDevice, type AdamWState } from "./adamw.ts";
import { onDevice } from "../backend/device.ts";
import { lrFactor } from "./schedule.ts";
import type { QNetworks } from "./networks.ts";
import type { TokenBatch } from "../model/encoder.ts";
import { devicePass } from "./device-pass.ts";
import { accumulateFused } from "../model/webgpu/accumulate.ts";
import { addPacks, GradPack } from "../model/webgpu/grad-pack.ts";
import { rowLengths } from "../model/length-groups.ts";
import { gatherRows } from "../model/webgpu/join-rows.ts";

export interface LearnerState {
  /** Optimizer steps taken. */
  updates: number;
  /** Micro-steps taken (updates · accumulate_grads + pending). */
  microSteps: number;
  alpha: number;
  optimizer: AdamWState;
}

/** λ-return targets: host numbers, or on the device a tensor (iteration.ts: the values were never read). */
export type Targets = Float32Array | tf.Tensor1D;

/** A micro-step's transitions: states (as pieces), action texts, selection-time rotary positions, targets G. */
export interface MicroBatch {
  states: readonly (readonly string[])[];
  actionTexts: readonly string[];
  positions: Int32Array;
  targets: Targets;
}

export interface MicroStepResult {
  /** NaN on the device path, where the loss stays on the device (read it with `lastStats`). */
  loss: number;
  /** Set when this micro-step completed an optimizer step (gradNorm NaN on the device path). */
  applied?: { gradNorm: number; lr: number; alpha: number };
}

export class Learner {
  private readonly opt: AdamW;
  /** The micro-steps' summed gradients awaiting their update: a list (tfjs path), or packed on the device (grad-pack.ts). */
  private pending: Gradients | null = null;
  /** Last loss and pre-clipping gradient norm: numbers on the CPU path, tensors on the device path. */
  private last: { loss: number | tf.Scalar; gradNorm: number | tf.Scalar } = { loss: NaN, gradNorm: NaN };
  updates = 0;
  microSteps = 0;
  alpha: number;

  constructor(
    private readonly nets: QNetworks,
    private readonly algo: AlgoConfig,
    private readonly totalUpdates: number,
    private readonly accumulate: number,
    /** Transitions per forward/backward pass (0: the whole batch in one). */
    private readonly passSize = 0,
  ) {
    const o = algo.optimizer;
    this.opt = new AdamW(nets.trainable, { beta1: o.betas[0], beta2: o.betas[1], eps: o.eps, weightDecay: o.weight_decay });
    // Before the first optimizer step α = α0 (the schedule only moves it after a step).
    this.alpha = algo.hyperparams.alpha;
  }

  private schedule(step: number): number {
    const s = this.algo.scheduler;
    return lrFactor(step, { type: s.type, warmup: s.warmup, total: this.totalUpdates, ratio: s.ratio });
  }

  /** LR of the next optimizer step (torch LambdaLR: step k uses lr0·λ(k)). */
  get lr(): number {
    return this.algo.optimizer.lr * this.schedule(this.updates);
  }

  /**
   * One micro-step on a batch of B transitions: states (as pieces), action texts, their
   * selection-time rotary positions, and λ-return targets G. With `signal`, the event loop runs
   * between passes and an abort there throws before anything changed (no gradient kept, no step):
   * a cancel waits for one pass, not the whole update.
   */
  async microStep(batch: MicroBatch, lengths: { maxActionLength: number; maxInMemory: number }, signal?: AbortSignal): Promise<MicroStepResult> {
    const B = batch.positions.length;
    if (targetCount(batch.targets) !== B) throw new Error(`microStep: ${targetCount(batch.targets)} targets for ${B} transitions`);
    // all the batch's states packed (its longest, its row lengths), once, where something needs it
    const states = batch.states;
    let packed: TokenBatch | undefined;
    const statesPacked = () => (packed ??= this.nets.state.packStates(states, lengths.maxInMemory));
    const size = this.passRows(B, batch.actionTexts, lengths, statesPacked);
    const order = size < B ? stateOrder(rowLengths(statesPacked())) : null;
    if (order) batch = reordered(batch, order);
    let grads: Gradients | null = null;
    let value: tf.Scalar | null = null;
    for (let lo = 0; lo < B; lo += size) {
      if (signal && lo > 0) {
        await new Promise((r) => setImmediate(r));
        if (signal.aborted) {
          disposeGrads(grads!);
          value!.dispose();
          signal.throwIfAborted();
        }
      }
      const hi = Math.min(B, lo + size);
      const G = passTargets(batch.targets, order, lo, hi);
      let pass: { value: tf.Scalar; grads: Gradients };
      try {
        pass = this.pass(
          { states: batch.states.slice(lo, hi), actionTexts: batch.actionTexts.slice(lo, hi), positions: batch.positions.subarray(lo, hi) },
          G,
          lengths,
          // the reference's (loss / accumulate_grads).backward(): the gradients come out summable
          (hi - lo) / (B * this.accumulate),
        );
      } finally {
        if (G !== batch.targets) G.dispose();
      }
      if (!grads || !value) {
        grads = pass.grads;
        value = pass.value;
        continue;
      }
      const sum = accumulate(grads, pass.grads, [value, pass.value]);
      grads = sum.grads;
      value = sum.value!;
    }
    // The device path keeps the loss on the device: no read per update (lastStats reads it when logged).
    const loss = onDevice() ? NaN : value!.dataSync()[0] * this.accumulate;
    this.setLast("loss", onDevice() ? value! : loss);
    if (!onDevice()) value!.dispose();
    return this.accumulateGrads(grads!, loss);
  }

  /**
   * Transitions per pass: `passSize` (0: the whole batch), and on webgpu no more than each
   * encoder's recorded update holds (QEncoder.tapedRows; BERT-base keeps ~0.6 MB a token), so a
   * batch too large for one recorded pass is split rather than run whole through tfjs's tape
   * (which ran BERT-base's batch of 64 × 512 out of an H100's memory).
   */
  private passRows(B: number, actionTexts: readonly string[], lengths: { maxActionLength: number }, statesPacked: () => TokenBatch): number {
    let size = this.passSize > 0 ? Math.min(this.passSize, B) : B;
    if (!onDevice()) return size;
    const { state, action } = this.nets;
    // at the longest length each packs first; the batch's own only when that does not fit
    if (state.tapedRows() < size) size = Math.min(size, state.tapedRows(statesPacked().len));
    if (action.tapedRows() < size) size = Math.min(size, action.tapedRows(action.packActions(actionTexts, lengths.maxActionLength).len));
    return size;
  }

  /** One forward/backward pass over part of the batch: its mean loss times `weight` and the gradients of that. */
  private pass(part: Omit<MicroBatch, "targets">, G: tf.Tensor1D, lengths: { maxActionLength: number; maxInMemory: number }, weight: number): { value: tf.Scalar; grads: Gradients } {
    const { nets } = this;
    const sPacked = nets.state.packStates(part.states, lengths.maxInMemory);
    const aPacked = nets.action.packActions(part.actionTexts, lengths.maxActionLength);
    const recorded = devicePass(nets, sPacked, aPacked, part.positions, G, weight);
    if (recorded) return recorded;
    const vars = nets.trainable;
    const { value, grads } = tf.variableGrads(() => {
      const s = nets.state.forward(sPacked, true);
      const aRaw = nets.action.forward(aPacked, true);
      const a = onDevice() ? rotaryFused(aRaw, part.positions) : rotateTf(aRaw, part.positions);
      const l = twinLoss(s, a, G);
      return weight === 1 ? l : (tf.mul(l, weight) as tf.Scalar);
    }, vars);
    const list = vars.map((v) => grads[v.name]);
    if (!onDevice()) return { value, grads: list };
    // the device path's optimizer takes packed gradients
    const pack = GradPack.fromList(list, vars.map((v) => v.size));
    tf.dispose(list);
    return { value, grads: pack };
  }

  /** Adds a micro-step's gradients to the pending sum; applies it every `accumulate` micro-steps. */
  private accumulateGrads(ordered: Gradients, loss: number): MicroStepResult {
    // the gradients of loss/accumulate (the passes' weights) summed across micro-steps
    this.pending = this.pending ? accumulate(this.pending, ordered).grads : ordered;
    this.microSteps++;
    if (this.microSteps % this.accumulate !== 0) return { loss };
    return { loss, applied: this.applyPending() };
  }

  private applyPending(): { gradNorm: number; lr: number; alpha: number } {
    const pending = this.pending!;
    this.pending = null;
    const lr = this.lr;
    let norm = NaN;
    // the targets' Polyak averaging rides on the update's programs where τ is a true average
    const tau = this.algo.hyperparams.tau;
    const average = tau > 0 && tau < 1 ? { targets: this.nets.targets, tau } : undefined;
    if (onDevice()) {
      // the clipping factor stays on the device and scales the gradients inside the fused AdamW
      const { coef, norm: n } = clipFactorDevice(pending, this.algo.hyperparams.max_grad_norm);
      this.setLast("gradNorm", n);
      this.opt.step(pending, lr, coef, average);
      coef.dispose();
    } else {
      const clipped = clipByGlobalNorm(asList(pending), this.algo.hyperparams.max_grad_norm);
      norm = clipped.norm;
      this.setLast("gradNorm", norm);
      this.opt.step(clipped.grads, lr, undefined, average);
      clipped.grads.forEach((g) => g.dispose());
    }
    disposeGrads(pending);
    this.updates++;
    this.alpha = this.algo.hyperparams.alpha * this.schedule(this.updates);
    this.nets.afterOptimizerStep(tau, average !== undefined);
    return { gradNorm: norm, lr, alpha: this.alpha };
  }

  private setLast(key: "loss" | "gradNorm", v: number | tf.Scalar): void {
    const old = this.last[key];
    if (typeof old !== "number") old.dispose();
    this.last[key] = v;
  }

  /** The last micro-step's loss and the last optimizer step's gradient norm: one read on the device path. */
  async lastStats(): Promise<{ loss: number; gradNorm: number }> {
    const { loss, gradNorm } = this.last;
    if (typeof loss === "number" && typeof gradNorm === "number") return { loss, gradNorm };
    const t = tf.tidy(() => tf.stack([typeof loss === "number" ? tf.scalar(loss) : loss, typeof gradNorm === "number" ? tf.scalar(gradNorm) : gradNorm]));
    const v = await t.data();
    t.dispose();
    // the device keeps loss/accumulate (microStep's pass weights)
    return { loss: typeof loss === "number" ? loss : v[0] * this.accumulate, gradNorm: v[1] };
  }

  getState(): LearnerState {
    return { updates: this.updates, microSteps: this.microSteps, alpha: this.alpha, optimizer: this.opt.getState() };
  }

  async getStateAsync(): Promise<LearnerState> {
    return { updates: this.updates, microSteps: this.microSteps, alpha: this.alpha, optimizer: await this.opt.getStateAsync() };
  }

  setState(s: LearnerState): void {
    this.updates = s.updates;
    this.microSteps = s.microSteps;
    this.alpha = s.alpha;
    this.opt.setState(s.optimizer);
  }

  dispose(): void {
    if (this.pending) disposeGrads(this.pending);
    this.setLast("loss", NaN);
    this.setLast("gradNorm", NaN);
    this.opt.dispose();
  }
}

/**
 * The batch's transitions by state length (`n`: each state's tokens), shortest first (stable):
 * each pass then pads its states only to its own longest (BERT-base's passes of 16 ran at 256–512
 * tokens each; the gradients' sum is the same, up to rounding).
 */
function stateOrder(n: Int32Array): Int32Array {
  return Int32Array.from(Array.from(n.keys()).sort((x, y) => n[x] - n[y] || x - y));
}

/** The batch in `order`; targets on the device stay as they are (passTargets takes each pass's rows there). */
function reordered(batch: MicroBatch, order: Int32Array): MicroBatch {
  const t = batch.targets;
  return {
    states: Array.from(order, (i) => batch.states[i]),
    actionTexts: Array.from(order, (i) => batch.actionTexts[i]),
    positions: Int32Array.from(order, (i) => batch.positions[i]),
    targets: t instanceof Float32Array ? Float32Array.from(order, (i) => t[i]) : t,
  };
}

const targetCount = (t: Targets): number => (t instanceof Float32Array ? t.length : t.shape[0]);

/**
 * The targets G of transitions lo…hi of the (reordered) batch: host numbers uploaded, or the
 * caller's tensor where it is the whole batch in order, else its rows gathered (on the device one
 * program of ours, elsewhere tfjs's gather). The caller disposes what is not its own.
 */
function passTargets(t: Targets, order: Int32Array | null, lo: number, hi: number): tf.Tensor1D {
  if (t instanceof Float32Array) return tf.tensor1d(t.subarray(lo, hi));
  if (!order && lo === 0 && hi === t.shape[0]) return t;
  const rows = order ? order.slice(lo, hi) : Int32Array.from({ length: hi - lo }, (_, i) => lo + i);
  if (onDevice()) return gatherRows(t, rows);
  return tf.tidy(() => tf.gather(t, tf.tensor1d(rows, "int32")));
}

/** A pass's or micro-step's gradients: a list aligned with the trainable variables, or on the device one pack (grad-pack.ts). */
type Gradients = tf.Tensor[] | GradPack;

function disposeGrads(g: Gradients): void {
  if (g instanceof GradPack) g.dispose();
  else tf.dispose(g);
}

/** The tfjs path's list (packs are the device path's only). */
function asList(g: Gradients): tf.Tensor[] {
  if (g instanceof GradPack) throw new Error("Learner: packed gradients off the webgpu device");
  return g;
}

/**
 * acc + add, consuming both, and with `values` (the passes' losses) their sum too: on the device
 * in place into acc's buffers (webgpu/accumulate.ts: one program for a pack, one per 8 tensors of
 * a list, not a tfjs Add each), elsewhere tfjs's Add.
 */
function accumulate(acc: Gradients, add: Gradients, values?: [tf.Scalar, tf.Scalar]): { grads: Gradients; value?: tf.Scalar } {
  if (acc instanceof GradPack && add instanceof GradPack) {
    const { pack, value } = addPacks(acc, add, values);
    return { grads: pack, value };
  }
  if (acc instanceof GradPack || add instanceof GradPack) throw new Error("Learner: a gradient pack added to a list");
  const a = [...acc, ...(values ? [values[0]] : [])];
  const b = [...add, ...(values ? [values[1]] : [])];
  let sum: tf.Tensor[];
  if (onDevice()) sum = accumulateFused(a, b);
  else {
    sum = a.map((x, i) => tf.add(x, b[i]));
    tf.dispose([...a, ...b]);
  }
  return { grads: sum.slice(0, acc.length), value: values ? (sum[acc.length] as tf.Scalar) : undefined };
}
