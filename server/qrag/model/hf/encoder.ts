/**
 * `hf`: a BERT-family encoder read from a Hugging Face folder inside the data root (the reference
 * fine-tunes contriever / E5-style encoders, docs/method.md §1.3). `algo.encoder.path` names the
 * folder (`config.json`, `model.safetensors`, `vocab.txt` or `tokenizer.json`, optionally
 * `tokenizer_config.json`); `algo.encoder.max_length` caps the packed length (default: the
 * model's `max_position_embeddings`). The architecture, sizes and dropout come from config.json;
 * the run config's dim / vocab_size / hidden / layers / heads / max_len / dropout are ignored.
 *
 * As the reference: the trainable state and action encoders both start from the folder's weights
 * (QNetworks clones one into the other), targets are Polyak copies, and the embedding is the mean
 * of the last hidden states over non-PAD tokens ÷ 10 (no pooler, no projection). All weights are
 * trainable, so the learner's AdamW fine-tunes the whole model; checkpoints hold them in the
 * encoder's variable order (linear weights [in, out]). The folder's check before a run
 * (`checkEncoderPath`, tfjs-free) is encoder-path.ts.
 */
import path from "node:path";
import * as tf from "@tensorflow/tfjs";
import { POOL_SCALE, type DeviceStates, type EncoderConfig, type SerializedTensor, type TapedForward, type TokenBatch } from "../encoder.ts";
import { BaseEncoder, checkBatch, padRows, type WeightSource } from "../base.ts";
import { segmentMean } from "../ops.ts";
import { maskedMeanDevice } from "../device-ops.ts";
import { bertForwardRows, bertNoGradPlan, recordedBertForward } from "../webgpu/recorded-bert.ts";
import { recordedRowsOfTokens } from "../webgpu/recorded-encoder.ts";
import { bertTapedRows, recordedBertTaped, recordedBertTrain } from "../webgpu/recorded-bert-train.ts";
import { onDevice } from "../../backend/device.ts";
import { bertDense, bertPacked, bertSpecs, loadBertWeights, packRows, readBertConfig, type BertConfig } from "./bert.ts";
import { SafetensorsFile } from "./safetensors.ts";
import { WordPieceTokenizer } from "./wordpiece.ts";
import { dataPathOrThrow, rootReader } from "../../data-root.ts";
import { HF_PATH_FIELD as FIELD, missingModelFile } from "./encoder-path.ts";
import { InputError } from "../../errors.ts";
import { engineSettings } from "../../settings.ts";
import type { Rng } from "../../util/rng.ts";

/** What every clone of one loaded model shares (read-only). */
export interface HfModel {
  /** Path relative to the data root, as configs store it. */
  rel: string;
  bert: BertConfig;
  tokenizer: WordPieceTokenizer;
  /** Longest packed row. */
  maxLen: number;
}

/** Reads a model folder (the architecture, tokenizer and weights). Errors name files relative to the root. */
export function loadHfFolder(config: Pick<EncoderConfig, "path" | "max_length">, dataRoot?: string): { model: HfModel; weights: SerializedTensor[] } {
  if (typeof config.path !== "string") throw new InputError(`${FIELD}: required for type hf`);
  const root = dataRoot ?? engineSettings().dataRoot;
  const { abs, rel } = dataPathOrThrow(root, FIELD, config.path, "dir");
  const miss = missingModelFile(abs);
  if (miss) throw new InputError(`${FIELD}: no ${miss} in ${rel}`);
  // every file of the folder is checked against the root once open (a link inside may point out)
  const read = rootReader(root);
  const bert = readBertConfig(path.join(abs, "config.json"), `${rel}/config.json`, read);
  const tokenizer = WordPieceTokenizer.fromFolder(abs, rel, read);
  if (tokenizer.vocabSize > bert.vocab) {
    throw new InputError(`${FIELD}: the tokenizer of ${rel} has ${tokenizer.vocabSize} tokens, config.json's vocab_size is ${bert.vocab}`);
  }
  const st = SafetensorsFile.open(path.join(abs, "model.safetensors"), `${rel}/model.safetensors`, read);
  const weights = loadBertWeights(st, bert);
  const maxLen = Math.min(config.max_length ?? Infinity, bert.maxPositions, tokenizer.modelMaxLength);
  return { model: { rel, bert, tokenizer, maxLen }, weights };
}

function encoderConfigOf(m: HfModel): EncoderConfig {
  const b = m.bert;
  return {
    type: "hf",
    path: m.rel,
    max_length: m.maxLen,
    dim: b.hidden,
    vocab_size: b.vocab,
    hidden: b.intermediate,
    layers: b.layers,
    heads: b.heads,
    max_len: m.maxLen,
    dropout: b.hiddenDropout,
    init_std: b.initStd,
  };
}

export class HfBertEncoder extends BaseEncoder {
  readonly model: HfModel;

  constructor(model: HfModel, source: WeightSource) {
    super(encoderConfigOf(model), bertSpecs(model.bert), source);
    this.model = model;
  }

  /** The encoder of `config` (type hf) with the folder's weights; dropout masks from `rng`. */
  static load(config: EncoderConfig, rng: Rng, dataRoot?: string): HfBertEncoder {
    const { model, weights } = loadHfFolder(config, dataRoot);
    return new HfBertEncoder(model, { values: weights, rng });
  }

  protected cloneFrom(trainable: boolean): HfBertEncoder {
    return new HfBertEncoder(this.model, { from: this, trainable });
  }

  get tokenizer(): WordPieceTokenizer {
    return this.model.tokenizer;
  }

  packActions(texts: readonly string[], maxTokens: number): TokenBatch {
    const tok = this.model.tokenizer;
    return padRows(texts.map((t) => tok.single(t, maxTokens)), this.model.maxLen);
  }

  packStates(states: readonly (readonly string[])[], maxTokensPerPiece: number): TokenBatch {
    const tok = this.model.tokenizer;
    return padRows(states.map((pieces) => tok.joined(pieces, maxTokensPerPiece)), this.model.maxLen);
  }

  /** packStates's framing on the device (webgpu only: its recorded forward reads the device-written rows). */
  override deviceStates(): DeviceStates | null {
    if (!onDevice()) return null;
    const tok = this.model.tokenizer;
    const c = this.model.bert;
    return {
      cls: tok.cls,
      sep: tok.sep,
      maxLen: this.model.maxLen,
      pieceIds: (text, maxTokens, out, at) => {
        const ids = tok.piece(text, maxTokens);
        out.set(ids, at);
        return ids.length;
      },
      fits: (B, T, training) => bertNoGradPlan(c, B, T, training) !== null,
      rowsOfTokens: (tokens, B, T, training) => {
        const plan = bertNoGradPlan(c, B, T, training);
        return plan && { rows: recordedRowsOfTokens(plan, this.variables, tokens, this.dropoutRng), T, half: plan.half };
      },
    };
  }

  /** On the device a [rows, len] forward (recorded-bert.ts): padding costs, so lengths run apart. */
  protected override padsRows(): boolean {
    return true;
  }

  protected override planRows(len: number): number {
    return bertForwardRows(this.model.bert, len);
  }

  protected override noGradRows(len: number): number {
    return Math.max(1, Math.floor(8192 / Math.max(1, len)));
  }

  override tapedForward(batch: TokenBatch, training: boolean): TapedForward | null {
    checkBatch(batch);
    if (!onDevice()) return null;
    return recordedBertTaped(this.variables, this.model.bert, batch.ids, batch.mask, batch.batch, batch.len, training, this.dropoutRng);
  }

  override tapedRows(len?: number): number {
    return onDevice() ? bertTapedRows(this.model.bert, len ?? this.model.maxLen) : Infinity;
  }

  forward(batch: TokenBatch, training: boolean): tf.Tensor2D {
    checkBatch(batch);
    if (batch.len > this.model.bert.maxPositions) throw new Error(`hf: sequence length ${batch.len} > max_position_embeddings ${this.model.bert.maxPositions}`);
    if (onDevice()) {
      // on webgpu recorded as our own programs (same function, same masks): without a gradient
      // one command buffer; with one (a trainable variable under a tape) one tfjs op whose
      // backward is recorded too
      const vars = this.variables;
      const taped = (tf.engine() as unknown as { isTapeOn(): boolean }).isTapeOn() && vars.some((v) => v.trainable);
      const y = (taped ? recordedBertTrain : recordedBertForward)(vars, this.model.bert, batch.ids, batch.mask, batch.batch, batch.len, training, this.dropoutRng);
      if (y) return y;
      // dense batch on the device: all sequences and heads in one attention, then the masked mean
      const h = bertDense(this.variables, this.model.bert, batch.ids, batch.mask, batch.batch, batch.len, { training, rng: this.dropoutRng });
      return maskedMeanDevice(h, batch.mask, batch.batch, batch.len, POOL_SCALE);
    }
    const pb = packRows(batch.ids, batch.mask, batch.batch, batch.len);
    if (pb.ids.length === 0) return tf.zeros([batch.batch, this.dim]);
    const h = bertPacked(this.variables, this.model.bert, pb, { training, rng: this.dropoutRng });
    return segmentMean(h, pb.lengths, POOL_SCALE); // masked mean pooling ÷ 10 (the reference's BertPredictor)
  }

  /** Hugging Face's `last_hidden_state` ([batch, len, dim], PAD positions included), eval mode. */
  lastHiddenState(batch: TokenBatch): tf.Tensor3D {
    checkBatch(batch);
    return tf.tidy(() =>
      tf.reshape(bertDense(this.variables, this.model.bert, batch.ids, batch.mask, batch.batch, batch.len, { training: false }), [batch.batch, batch.len, this.dim]),
    );
  }
}
