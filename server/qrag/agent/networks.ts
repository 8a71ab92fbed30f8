/**
 * The five encoder copies of the agent (docs/method.md §2.4): trainable state/action encoders E_s,
 * E_a; Polyak targets E_s', E_a'; and the policy copy of E_s (hard-copied after every optimizer
 * step). Also the no-grad embedding helpers the rollout and evaluation use.
 */
import * as tf from "@tensorflow/tfjs";
import type { EncoderConfig, SerializedTensor } from "../model/encoder.ts";
import type { QEncoder } from "../model/base.ts";
import { createEncoder } from "../model/factory.ts";
import type { Rng, RngState } from "../util/rng.ts";
import { onDevice } from "../backend/device.ts";

export interface NetworkWeights {
  state: SerializedTensor[];
  action: SerializedTensor[];
  stateTarget: SerializedTensor[];
  actionTarget: SerializedTensor[];
}

export class QNetworks {
  readonly state: QEncoder;
  readonly action: QEncoder;
  readonly stateTarget: QEncoder;
  readonly actionTarget: QEncoder;
  readonly policy: QEncoder;

  /** `dataRoot`: where an `hf` encoder's folder is read from. */
  constructor(config: EncoderConfig, rng: Rng, opts: { dataRoot?: string } = {}) {
    // Both trainable encoders start from the same weights, as both start from one checkpoint.
    this.state = createEncoder(config, rng, opts);
    this.action = this.state.clone(true);
    // targets and the policy copy are never trained directly
    this.stateTarget = this.state.clone(false);
    this.actionTarget = this.action.clone(false);
    this.policy = this.state.clone(false);
  }

  /**
   * Replaces the first variable (the word table) of the trainable state encoder and copies every
   * other encoder from it, as the constructor does: a fresh run's start, before any update.
   */
  setStateTable(values: Float32Array): void {
    const t = this.state.variables[0];
    tf.tidy(() => t.assign(tf.tensor(values, t.shape, "float32")));
    for (const e of [this.action, this.stateTarget, this.actionTarget, this.policy]) e.copyFrom(this.state);
  }

  get dim(): number {
    return this.state.dim;
  }

  get trainable(): tf.Variable[] {
    return [...this.state.variables, ...this.action.variables];
  }

  /** The Polyak targets' variables, aligned with `trainable`. */
  get targets(): tf.Variable[] {
    return [...this.stateTarget.variables, ...this.actionTarget.variables];
  }

  /**
   * After an optimizer step: Polyak targets (unless the step averaged them: AdamW.step's
   * `average`), hard policy copy (docs/method.md §3.5).
   */
  afterOptimizerStep(tau: number, targetsAveraged = false): void {
    if (!targetsAveraged) {
      this.stateTarget.polyakFrom(this.state, tau);
      this.actionTarget.polyakFrom(this.action, tau);
    }
    this.policy.copyFrom(this.state);
  }

  exportWeights(): NetworkWeights {
    return {
      state: this.state.exportWeights(),
      action: this.action.exportWeights(),
      stateTarget: this.stateTarget.exportWeights(),
      actionTarget: this.actionTarget.exportWeights(),
    };
  }

  async exportWeightsAsync(): Promise<NetworkWeights> {
    return {
      state: await this.state.exportWeightsAsync(),
      action: await this.action.exportWeightsAsync(),
      stateTarget: await this.stateTarget.exportWeightsAsync(),
      actionTarget: await this.actionTarget.exportWeightsAsync(),
    };
  }

  importWeights(w: NetworkWeights): void {
    this.state.importWeights(w.state);
    this.action.importWeights(w.action);
    this.stateTarget.importWeights(w.stateTarget);
    this.actionTarget.importWeights(w.actionTarget);
    this.policy.copyFrom(this.state);
  }

  private get all(): QEncoder[] {
    return [this.state, this.action, this.stateTarget, this.actionTarget, this.policy];
  }

  /** Dropout generator states, so a resumed run draws the same masks it would have. */
  exportRngStates(): RngState[] {
    return this.all.map((e) => e.dropoutRng.getState());
  }

  importRngStates(states: readonly RngState[]): void {
    this.all.forEach((e, i) => states[i] && e.dropoutRng.setState(states[i]));
  }

  dispose(): void {
    for (const e of this.all) e.dispose();
  }
}

/**
 * Embeds chunk texts without gradient into a flat [n·D] array (batched to bound memory). Eval mode
 * takes the encoder's tape-free path; train mode (rollouts: dropout on, docs/method.md §3.3) a
 * tidy forward.
 */
export function embedActions(enc: QEncoder, texts: readonly string[], maxTokens: number, training: boolean, out?: Float32Array, offset = 0, batch = 2048): Float32Array {
  const D = enc.dim;
  const dst = out ?? new Float32Array(texts.length * D);
  for (let i = 0; i < texts.length; i += batch) {
    const packed = enc.packActions(texts.slice(i, i + batch), maxTokens);
    dst.set(forwardNoGrad(enc, packed, training), offset + i * D);
  }
  return dst;
}

/** Embeds states (each as its pieces) without gradient into a flat [n·D] array. */
export function embedStates(enc: QEncoder, states: readonly (readonly string[])[], maxTokensPerPiece: number, training: boolean): Float32Array {
  return forwardNoGrad(enc, enc.packStates(states, maxTokensPerPiece), training);
}

function forwardNoGrad(enc: QEncoder, packed: ReturnType<QEncoder["packActions"]>, training: boolean): Float32Array {
  if (!training) return enc.embedNoGrad(packed);
  const y = tf.tidy(() => enc.forward(packed, true));
  const data = y.dataSync() as Float32Array;
  y.dispose();
  return data;
}

/** embedStates that works on both paths: on the device one async read of the [n, D] result. */
export async function embedStatesAsync(enc: QEncoder, states: readonly (readonly string[])[], maxTokensPerPiece: number, training: boolean): Promise<Float32Array> {
  if (!onDevice()) return embedStates(enc, states, maxTokensPerPiece, training);
  const t = embedStatesDevice(enc, states, maxTokensPerPiece, training);
  const v = (await t.data()) as Float32Array;
  t.dispose();
  return v;
}

/**
 * Device path: chunk texts → a device-resident [n, D] tensor (dropout on iff `training`), embedded
 * in large sub-batches that never leave the device. The caller disposes it.
 */
export function embedActionsDevice(enc: QEncoder, texts: readonly string[], maxTokens: number, training: boolean): tf.Tensor2D {
  return training ? enc.embedDevice(enc.packActions(texts, maxTokens), true) : enc.embedTextsDevice(texts, maxTokens);
}

/** Device path: states → a device-resident [n, D] tensor. The caller disposes it. */
export function embedStatesDevice(enc: QEncoder, states: readonly (readonly string[])[], maxTokensPerPiece: number, training: boolean): tf.Tensor2D {
  return enc.embedDevice(enc.packStates(states, maxTokensPerPiece), training);
}
