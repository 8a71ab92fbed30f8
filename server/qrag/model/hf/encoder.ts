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
 * encoder's variable order (linear weights [in, out]).
 */
import fs from "node:fs";
import path from "node:path";
import * as tf from "@tensorflow/tfjs";
import type { EncoderConfig, SerializedTensor, TokenBatch } from "../encoder.ts";
import { BaseEncoder, checkBatch, padRows, type WeightSource } from "../base.ts";
import { segmentMean } from "../ops.ts";
import { maskedMeanDevice } from "../device-ops.ts";
import { onDevice } from "../../device.ts";
import { bertDense, bertPacked, bertSpecs, loadBertWeights, packRows, readBertConfig, type BertConfig } from "./bert.ts";
import { SafetensorsFile } from "./safetensors.ts";
import { WordPieceTokenizer } from "./wordpiece.ts";
import { dataPathOrThrow, resolveDataPath, rootReader } from "../../data-root.ts";
import { checkWordVectors } from "../word-vectors.ts";
import { InputError } from "../../errors.ts";
import { env as processEnv } from "../../../env.ts";
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

const FIELD = "algo.encoder.path";

/** The first file a model folder lacks, or null. */
function missingFile(dir: string): string | null {
  for (const f of ["config.json", "model.safetensors"]) if (!fs.existsSync(path.join(dir, f))) return f;
  if (!fs.existsSync(path.join(dir, "vocab.txt")) && !fs.existsSync(path.join(dir, "tokenizer.json"))) return "vocab.txt or tokenizer.json";
  return null;
}

/**
 * Checks the files an encoder config names against the data root (the API and the worker, next to
 * the dataset paths): an hf encoder's `algo.encoder.path` and a bow encoder's
 * `algo.encoder.word_vectors`. Returns the encoder with those made relative to the root, or issues
 * like `algo.encoder.path: no config.json in models/bert`.
 */
export function checkEncoderPath<E extends { type: string; path?: string; word_vectors?: string }>(enc: E, root: string, opts: { mustExist?: boolean } = {}): { encoder: E; issues: { path: string; message: string }[] } {
  if (typeof enc.word_vectors === "string") {
    const wv = checkWordVectors(enc.word_vectors, root, opts.mustExist !== false);
    if (wv.issue) return { encoder: enc, issues: [wv.issue] };
    enc = { ...enc, word_vectors: wv.value };
  }
  if (enc.type !== "hf") return { encoder: enc, issues: [] };
  if (typeof enc.path !== "string") return { encoder: enc, issues: [{ path: FIELD, message: "required for type hf (a Hugging Face model folder in the data root)" }] };
  const r = resolveDataPath(root, enc.path, { kind: "dir", mustExist: opts.mustExist });
  if (!r.ok) return { encoder: enc, issues: [{ path: FIELD, message: r.message }] };
  if (opts.mustExist !== false) {
    const miss = missingFile(r.abs);
    if (miss) return { encoder: enc, issues: [{ path: FIELD, message: `no ${miss} in ${r.rel}` }] };
  }
  return { encoder: { ...enc, path: r.rel }, issues: [] };
}

/** Reads a model folder (the architecture, tokenizer and weights). Errors name files relative to the root. */
export function loadHfFolder(config: Pick<EncoderConfig, "path" | "max_length">, dataRoot?: string): { model: HfModel; weights: SerializedTensor[] } {
  if (typeof config.path !== "string") throw new InputError(`${FIELD}: required for type hf`);
  const root = dataRoot ?? processEnv().dataRoot;
  const { abs, rel } = dataPathOrThrow(root, FIELD, config.path, "dir");
  const miss = missingFile(abs);
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

  protected override noGradRows(len: number): number {
    return Math.max(1, Math.floor(8192 / Math.max(1, len)));
  }

  forward(batch: TokenBatch, training: boolean): tf.Tensor2D {
    checkBatch(batch);
    if (batch.len > this.model.bert.maxPositions) throw new Error(`hf: sequence length ${batch.len} > max_position_embeddings ${this.model.bert.maxPositions}`);
    if (onDevice()) {
      // dense batch on the device: all sequences and heads in one attention, then the masked mean
      const h = bertDense(this.variables, this.model.bert, batch.ids, batch.mask, batch.batch, batch.len, { training, rng: this.dropoutRng });
      return maskedMeanDevice(h, batch.mask, batch.batch, batch.len, 0.1);
    }
    const pb = packRows(batch.ids, batch.mask, batch.batch, batch.len);
    if (pb.ids.length === 0) return tf.zeros([batch.batch, this.dim]);
    const h = bertPacked(this.variables, this.model.bert, pb, { training, rng: this.dropoutRng });
    return segmentMean(h, pb.lengths, 0.1); // masked mean pooling ÷ 10 (the reference's BertPredictor)
  }

  /** Hugging Face's `last_hidden_state` ([batch, len, dim], PAD positions included), eval mode. */
  lastHiddenState(batch: TokenBatch): tf.Tensor3D {
    checkBatch(batch);
    return tf.tidy(() =>
      tf.reshape(bertDense(this.variables, this.model.bert, batch.ids, batch.mask, batch.batch, batch.len, { training: false }), [batch.batch, batch.len, this.dim]),
    );
  }
}
