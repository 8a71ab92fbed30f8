/**
 * The five encoder copies of the agent (spec §2.4): trainable state/action encoders E_s, E_a;
 * Polyak targets E_s', E_a'; and the policy copy of E_s (hard-copied after every optimizer step).
 * Also the no-grad embedding helpers the rollout and evaluation use.
 */
import * as tf from "@tensorflow/tfjs";
import type { Encoder, EncoderConfig, SerializedTensor } from "../model/encoder.ts";
import { createEncoder } from "../model/factory.ts";
import type { Rng } from "../util/rng.ts";

export interface NetworkWeights {
  state: SerializedTensor[];
  action: SerializedTensor[];
  stateTarget: SerializedTensor[];
  actionTarget: SerializedTensor[];
}

export class QNetworks {
  readonly state: Encoder;
  readonly action: Encoder;
  readonly stateTarget: Encoder;
  readonly actionTarget: Encoder;
  readonly policy: Encoder;

  constructor(config: EncoderConfig, rng: Rng) {
    // Both trainable encoders start from the same weights, as both start from one checkpoint.
    this.state = createEncoder(config, rng);
    this.action = this.state.clone();
    this.stateTarget = this.state.clone();
    this.actionTarget = this.action.clone();
    this.policy = this.state.clone();
  }

  get dim(): number {
    return this.state.dim;
  }

  get trainable(): tf.Variable[] {
    return [...this.state.variables, ...this.action.variables];
  }

  /** After an optimizer step: Polyak targets, hard policy copy (spec §3.5). */
  afterOptimizerStep(tau: number): void {
    this.stateTarget.polyakFrom(this.state, tau);
    this.actionTarget.polyakFrom(this.action, tau);
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

  importWeights(w: NetworkWeights): void {
    this.state.importWeights(w.state);
    this.action.importWeights(w.action);
    this.stateTarget.importWeights(w.stateTarget);
    this.actionTarget.importWeights(w.actionTarget);
    this.policy.copyFrom(this.state);
  }

  dispose(): void {
    for (const e of [this.state, this.action, this.stateTarget, this.actionTarget, this.policy]) e.dispose();
  }
}

/** Embeds chunk texts without gradient into a flat [n·D] array (batched to bound memory). */
export function embedActions(enc: Encoder, texts: readonly string[], maxTokens: number, training: boolean, out?: Float32Array, offset = 0, batch = 2048): Float32Array {
  const D = enc.dim;
  const dst = out ?? new Float32Array(texts.length * D);
  for (let i = 0; i < texts.length; i += batch) {
    const part = texts.slice(i, i + batch);
    const packed = enc.packActions(part, maxTokens);
    const y = tf.tidy(() => enc.forward(packed, training));
    dst.set(y.dataSync() as Float32Array, offset + i * D);
    y.dispose();
  }
  return dst;
}

/** Embeds states (each as its pieces) without gradient into a flat [n·D] array. */
export function embedStates(enc: Encoder, states: readonly (readonly string[])[], maxTokensPerPiece: number, training: boolean): Float32Array {
  const packed = enc.packStates(states, maxTokensPerPiece);
  const y = tf.tidy(() => enc.forward(packed, training));
  const data = y.dataSync() as Float32Array;
  y.dispose();
  return data;
}
