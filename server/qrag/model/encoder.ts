/**
 * The encoder contract. The Q-function holds separate state and action encoders (plus Polyak
 * targets and a policy copy), all implementing this interface, so the encoder architecture is a
 * config choice (`bow` = fast CPU default, `transformer` = small pre-LN transformer).
 *
 * Every encoder returns masked-mean-pooled embeddings divided by 10 (docs/method.md §2.1): no
 * projection, no normalisation.
 */
import type * as tf from "@tensorflow/tfjs";

/** The factor on every encoder's masked-mean pooled output: ÷ 10 (docs/method.md §2.1). */
export const POOL_SCALE = 0.1;

/** Row-major token ids [batch, len] with a 0/1 mask of the same shape. */
export interface TokenBatch {
  ids: Int32Array;
  mask: Float32Array;
  batch: number;
  len: number;
}

export interface EncoderConfig {
  type: "bow" | "transformer" | "hf";
  /** hf only: the Hugging Face model folder, relative to the data root (model/hf/). */
  path?: string;
  /** hf only: longest packed sequence (default: the model's max_position_embeddings). */
  max_length?: number;
  /** Embedding size D; must be divisible by 4 (two heads × rotary pairs). */
  dim: number;
  /** Hashed vocabulary size (ids 0..2 are PAD/CLS/SEP). */
  vocab_size: number;
  /** bow: hidden width of the residual MLP. transformer: FFN width. */
  hidden: number;
  /** transformer only. */
  layers: number;
  heads: number;
  /** Maximum packed sequence length (learned positional table size for the transformer). */
  max_len: number;
  dropout: number;
  /** Std of the N(0, std) initialisation of embeddings. */
  init_std: number;
  /** bow only: add hashed bigrams of consecutive content words (absent in older checkpoints = off). */
  word_bigrams?: boolean;
  /** bow only: start the word table from pretrained vectors (model/word-vectors.ts; fresh runs only). */
  word_vectors?: string;
}

export interface SerializedTensor {
  shape: number[];
  data: Float32Array;
}

/**
 * A forward with a gradient, run without tfjs's tape (webgpu's recorded encoders): its [batch,
 * dim] output and the backward that returns the gradients of the encoder's `variables` (same
 * order) for an upstream gradient of the output's shape, at most once. `release` gives its
 * activations back when the backward will not run; the caller disposes `y` and the gradients.
 */
export interface TapedForward {
  y: tf.Tensor2D;
  backward(dy: tf.Tensor): tf.Tensor[];
  /**
   * backward's gradients copied into a webgpu/grad-pack.ts pack instead, as its variables
   * `first`, `first` + 1, …: variable i into segment seg[i] at offsets[i].
   */
  backwardInto(dy: tf.Tensor, pack: { flats: readonly tf.Tensor[]; layout: { seg: readonly number[]; offsets: readonly number[] } }, first: number): void;
  release(): void;
}

/**
 * How an encoder packs a state, for states assembled on the device (agent/lock-steps.ts): `[cls]`,
 * then each piece's ids (its first maxTokensPerPiece words) and `[sep]`, cut at maxLen.
 */
export interface DeviceStates {
  cls: number;
  sep: number;
  maxLen: number;
  /** The ids packStates writes for one piece into `out` at `at` (at most `maxTokens`); their count. */
  pieceIds(text: string, maxTokens: number, out: Int32Array, at: number): number;
  /** Whether rowsOfTokens takes B rows of T tokens (false: it would return null). */
  fits(B: number, T: number, training: boolean): boolean;
  /**
   * The last hidden states [B·T, dim] of the B rows of T tokens a program wrote into `tokens`
   * [2·B·T] (the ids, then the mask's float bits), as forward(batch) of
   * those rows computes them before its pooling (f16 pairs as float32 elements where `half`), for
   * a program that pools as it reads (model/webgpu/lock-step.ts): read them before the next
   * forward of this shape, and dispose them after.
   */
  rowsOfTokens(tokens: tf.Tensor, B: number, T: number, training: boolean): { rows: tf.Tensor; T: number; half: boolean } | null;
}

export interface Encoder {
  readonly config: EncoderConfig;
  readonly dim: number;
  /** Trainable variables, in a stable order (used by the optimizer and checkpoints). */
  readonly variables: tf.Variable[];
  /**
   * Packs candidate chunk texts, each truncated to `maxTokens` words.
   * (transformer: `[CLS] w.. [SEP]`; bow: the words only.)
   */
  packActions(texts: readonly string[], maxTokens: number): TokenBatch;
  /**
   * Packs states. A state is its pieces `[question, chunk1, chunk2, …]` (already ordered);
   * each piece is truncated to `maxTokensPerPiece` words separately (docs/method.md §1.2), joined
   * with SEP, and the batch is right-padded to the next power of two of its longest row.
   */
  packStates(states: readonly (readonly string[])[], maxTokensPerPiece: number): TokenBatch;
  /** [batch, dim] embeddings (already ÷10). Dropout is active iff `training`. Call inside tf.tidy. */
  forward(batch: TokenBatch, training: boolean): tf.Tensor2D;
  /** A new encoder of the same architecture with copied weights (targets, policy copy). */
  clone(): Encoder;
  /** this ← src (hard copy). */
  copyFrom(src: Encoder): void;
  /** this ← (1 − tau)·this + tau·src. */
  polyakFrom(src: Encoder, tau: number): void;
  exportWeights(): SerializedTensor[];
  importWeights(ws: readonly SerializedTensor[]): void;
  dispose(): void;
}
