/**
 * BERT (Hugging Face `BertModel`) in tfjs: the architecture from `config.json`, the weights from
 * `model.safetensors`, and the forward pass up to `last_hidden_state`.
 *
 *   x = LN_emb(word[ids] + pos[0..T) + type[0])            (dropout)
 *   per layer (post-LN):
 *     a = softmax(QKᵀ/√d_head + mask) V, heads merged      (dropout on the probabilities)
 *     x = LN_1(x + drop(a·W_o + b_o))
 *     x = LN_2(x + drop(act(x·W_1 + b_1)·W_2 + b_2))
 *
 * GELU is the erf form for `hidden_act: "gelu"` (tanh form for gelu_new / gelu_pytorch_tanh),
 * LayerNorm eps is `layer_norm_eps`. Linear weights are stored [in, out] (HF's [out, in]
 * transposed at load), so every product is `mm(x, W)`.
 *
 * Two forwards share the layer code: `bertPacked` (real tokens only, packed one sequence after
 * another, per-(sequence, head) attention — what the encoder trains with, PAD rows never computed)
 * and `bertDense` (the full [B·T, d] batch with the additive key mask, PAD positions included — the
 * form Hugging Face returns, used to check exactness).
 */
import * as tf from "@tensorflow/tfjs";
import type { SerializedTensor } from "../encoder.ts";
import type { ParamSpec } from "../base.ts";
import { dropout, embedScatter, gelu, layerNorm, linear, residualLayerNorm } from "../ops.ts";
import { attentionBatched, attentionPerHead, packedLayout } from "../attention.ts";
import { attentionDense } from "../device-ops.ts";
import { onDevice } from "../../backend/device.ts";
import { SafetensorsError, type SafetensorsFile } from "./safetensors.ts";
import type { Rng } from "../../util/rng.ts";
import type { Activation } from "../webgpu/gelu-layernorm.ts";
import type { ReadFile } from "../../data-root.ts";

export interface BertConfig {
  hidden: number;
  layers: number;
  heads: number;
  intermediate: number;
  vocab: number;
  maxPositions: number;
  typeVocab: number;
  eps: number;
  hiddenDropout: number;
  attnDropout: number;
  act: Activation;
  initStd: number;
}

export class HfModelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HfModelError";
  }
}

const ACTS: Record<string, BertConfig["act"]> = { gelu: "gelu", gelu_new: "gelu_tanh", gelu_pytorch_tanh: "gelu_tanh", relu: "relu" };

/** config.json → BertConfig; `label` names the file in errors. */
export function parseBertConfig(raw: unknown, label: string): BertConfig {
  const bad = (m: string): never => {
    throw new HfModelError(`${label}: ${m}`);
  };
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) bad("not a JSON object");
  const c = raw as Record<string, unknown>;
  if (c.model_type !== undefined && c.model_type !== "bert") bad(`model_type is not supported (BERT-family WordPiece models: model_type "bert")`);
  const int = (k: string, min: number, def?: number): number => {
    const v = c[k] ?? def;
    if (typeof v !== "number" || !Number.isInteger(v) || v < min) bad(`${k} must be an integer ≥ ${min}`);
    return v as number;
  };
  const num = (k: string, def: number, ok: (v: number) => boolean): number => {
    const v = c[k] ?? def;
    if (typeof v !== "number" || !ok(v)) bad(`${k} is not a number in range`);
    return v as number;
  };
  const hidden = int("hidden_size", 1);
  const heads = int("num_attention_heads", 1);
  if (hidden % heads !== 0) bad(`num_attention_heads ${heads} does not divide hidden_size ${hidden}`);
  const actName = c.hidden_act ?? "gelu";
  const act = typeof actName === "string" ? ACTS[actName] : undefined;
  if (!act) bad(`hidden_act is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu)`);
  if (c.position_embedding_type !== undefined && c.position_embedding_type !== "absolute") {
    bad(`position_embedding_type is not supported (absolute)`);
  }
  return {
    hidden,
    heads,
    layers: int("num_hidden_layers", 0),
    intermediate: int("intermediate_size", 1),
    vocab: int("vocab_size", 1),
    maxPositions: int("max_position_embeddings", 2),
    typeVocab: int("type_vocab_size", 1, 2),
    eps: num("layer_norm_eps", 1e-12, (v) => v > 0 && v < 1),
    hiddenDropout: num("hidden_dropout_prob", 0.1, (v) => v >= 0 && v < 1),
    attnDropout: num("attention_probs_dropout_prob", 0.1, (v) => v >= 0 && v < 1),
    act: act as BertConfig["act"],
    initStd: num("initializer_range", 0.02, (v) => v > 0),
  };
}

export function readBertConfig(file: string, label: string, read: ReadFile): BertConfig {
  const text = read(file, label).toString("utf8");
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new HfModelError(`${label}: not valid JSON`);
  }
  return parseBertConfig(raw, label);
}

/** Per-layer variables, in order: [our name, HF name under encoder.layer.N., transpose?]. */
const LAYER: readonly (readonly [string, string, boolean])[] = [
  ["q.w", "attention.self.query.weight", true],
  ["q.b", "attention.self.query.bias", false],
  ["k.w", "attention.self.key.weight", true],
  ["k.b", "attention.self.key.bias", false],
  ["v.w", "attention.self.value.weight", true],
  ["v.b", "attention.self.value.bias", false],
  ["o.w", "attention.output.dense.weight", true],
  ["o.b", "attention.output.dense.bias", false],
  ["ln1.gamma", "attention.output.LayerNorm.weight", false],
  ["ln1.beta", "attention.output.LayerNorm.bias", false],
  ["fc1.w", "intermediate.dense.weight", true],
  ["fc1.b", "intermediate.dense.bias", false],
  ["fc2.w", "output.dense.weight", true],
  ["fc2.b", "output.dense.bias", false],
  ["ln2.gamma", "output.LayerNorm.weight", false],
  ["ln2.beta", "output.LayerNorm.bias", false],
];
const EMB: readonly (readonly [string, string])[] = [
  ["word", "embeddings.word_embeddings.weight"],
  ["pos", "embeddings.position_embeddings.weight"],
  ["type", "embeddings.token_type_embeddings.weight"],
  ["emb_ln.gamma", "embeddings.LayerNorm.weight"],
  ["emb_ln.beta", "embeddings.LayerNorm.bias"],
];
const N_EMB = EMB.length;

/** The encoder's variables (name, shape) in order; `init` is only used for shapes' sake. */
export function bertSpecs(c: BertConfig): ParamSpec[] {
  const d = c.hidden, F = c.intermediate;
  const normal = { kind: "normal", std: c.initStd } as const;
  const zeros = { kind: "zeros" } as const;
  const ones = { kind: "ones" } as const;
  const specs: ParamSpec[] = [
    { name: "word", shape: [c.vocab, d], init: normal },
    { name: "pos", shape: [c.maxPositions, d], init: normal },
    { name: "type", shape: [c.typeVocab, d], init: normal },
    { name: "emb_ln.gamma", shape: [d], init: ones },
    { name: "emb_ln.beta", shape: [d], init: zeros },
  ];
  const shapes: Record<string, number[]> = {
    "q.w": [d, d], "k.w": [d, d], "v.w": [d, d], "o.w": [d, d], "fc1.w": [d, F], "fc2.w": [F, d], "fc1.b": [F],
  };
  for (let l = 0; l < c.layers; l++) {
    for (const [name] of LAYER) {
      const shape = shapes[name] ?? [d];
      specs.push({ name: `layer${l}.${name}`, shape, init: name.endsWith(".w") ? normal : name.endsWith("gamma") ? ones : zeros });
    }
  }
  return specs;
}

/**
 * The weights of a BertModel checkpoint in `bertSpecs` order (linear weights transposed to
 * [in, out]). Keys may carry a prefix (`bert.` of BertForMaskedLM and the like); the pooler and
 * any heads are ignored.
 */
export function loadBertWeights(st: SafetensorsFile, c: BertConfig): SerializedTensor[] {
  const suffix = "embeddings.word_embeddings.weight";
  const key = [...st.tensors.keys()].find((k) => k === suffix || k.endsWith(`.${suffix}`));
  if (!key) throw new SafetensorsError(`${st.label}: no tensor "${suffix}" (not a BERT checkpoint)`);
  const prefix = key.slice(0, key.length - suffix.length);
  const specs = bertSpecs(c);
  const hfNames = [
    ...EMB.map(([, hf]) => [hf, false] as const),
    ...Array.from({ length: c.layers }, (_, l) => LAYER.map(([, hf, t]) => [`encoder.layer.${l}.${hf}`, t] as const)).flat(),
  ];
  return specs.map((s, i) => {
    const [hf, transpose] = hfNames[i];
    const name = prefix + hf;
    const { shape, data } = st.read(name);
    const want = transpose ? [s.shape[1], s.shape[0]] : s.shape;
    if (shape.length !== want.length || shape.some((v, j) => v !== want[j])) {
      throw new SafetensorsError(`${st.label}: tensor "${name}" has shape [${shape}], config.json implies [${want}]`);
    }
    if (!transpose) return { shape: [...s.shape], data };
    const [rows, cols] = shape; // HF [out, in] → ours [in, out]
    const out = new Float32Array(data.length);
    for (let r = 0; r < rows; r++) for (let k = 0; k < cols; k++) out[k * rows + r] = data[r * cols + k];
    return { shape: [cols, rows], data: out };
  });
}

type V1 = tf.Variable<tf.Rank.R1>;
type V2 = tf.Variable<tf.Rank.R2>;

interface RunOpts {
  training: boolean;
  rng?: Rng;
}

function activation(x: tf.Tensor2D, act: BertConfig["act"]): tf.Tensor2D {
  return act === "relu" ? tf.relu(x) : gelu(x, act === "gelu" ? "erf" : "tanh");
}

/** Embeddings + layers on rows [n, d]; `attend(q, k, v)` is the attention over those rows. */
function run(
  vars: readonly tf.Variable[],
  c: BertConfig,
  ids: Int32Array,
  posIds: Int32Array,
  attend: (q: tf.Tensor2D, k: tf.Tensor2D, v: tf.Tensor2D) => tf.Tensor2D,
  o: RunOpts,
): tf.Tensor2D {
  const d = c.hidden;
  const p = c.hiddenDropout;
  const eps = c.eps;
  // token type 0 everywhere (single-segment input, as the reference packs it)
  const typeRow = tf.slice(vars[2] as V2, [0, 0], [1, d]);
  let x = tf.add(tf.add(embedScatter(vars[0] as V2, ids), embedScatter(vars[1] as V2, posIds)), typeRow) as tf.Tensor2D;
  x = layerNorm(x, vars[3] as V1, vars[4] as V1, eps);
  x = dropout(x, p, o.training, o.rng);
  for (let l = 0; l < c.layers; l++) {
    const b = N_EMB + l * LAYER.length;
    const [wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, w1, c1, w2, c2, g2, b2] = vars.slice(b, b + LAYER.length);
    const lin = (h: tf.Tensor2D, w: tf.Variable, bias: tf.Variable) => linear(h, w as V2, bias as V1);
    const ctx = attend(lin(x, wq, bq), lin(x, wk, bk), lin(x, wv, bv));
    const drop = { rate: p, training: o.training, rng: o.rng };
    x = residualLayerNorm(x, lin(ctx, wo, bo), drop, g1 as V1, b1 as V1, eps);
    const f = activation(lin(x, w1, c1), c.act);
    x = residualLayerNorm(x, lin(f, w2, c2), drop, g2 as V1, b2 as V1, eps);
  }
  return x;
}

export interface PackedBatch {
  /** Real tokens of every row one after another. */
  ids: Int32Array;
  /** Position of each (its column in the padded row). */
  posIds: Int32Array;
  /** Real tokens per row. */
  lengths: Int32Array;
}

/** Real tokens of a right-padded [batch, len] id/mask pair, packed. */
export function packRows(ids: Int32Array, mask: Float32Array, batch: number, len: number): PackedBatch {
  let nnz = 0;
  for (let i = 0; i < batch * len; i++) if (mask[i] > 0) nnz++;
  const out = { ids: new Int32Array(nnz), posIds: new Int32Array(nnz), lengths: new Int32Array(batch) };
  let r = 0;
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < len; t++) {
      if (mask[b * len + t] > 0) {
        out.ids[r] = ids[b * len + t];
        out.posIds[r] = t;
        r++;
        out.lengths[b]++;
      }
    }
  }
  return out;
}

/** Last hidden states of the real tokens, [Σ lengths, d], in packed order. */
export function bertPacked(vars: readonly tf.Variable[], c: BertConfig, pb: PackedBatch, o: RunOpts): tf.Tensor2D {
  const layout = packedLayout(pb.lengths);
  return run(vars, c, pb.ids, pb.posIds, (q, k, v) => attentionPerHead(q, k, v, { heads: c.heads, layout, dropout: c.attnDropout, training: o.training, rng: o.rng }), o);
}

/** Last hidden states of every position (PAD included, as Hugging Face returns them), [B·T, d]. */
export function bertDense(vars: readonly tf.Variable[], c: BertConfig, ids: Int32Array, mask: Float32Array, batch: number, len: number, o: RunOpts): tf.Tensor2D {
  const posIds = new Int32Array(batch * len);
  for (let b = 0; b < batch; b++) for (let t = 0; t < len; t++) posIds[b * len + t] = t;
  const args = { batch, len, heads: c.heads, mask, dropout: c.attnDropout, training: o.training, rng: o.rng };
  return run(vars, c, ids, posIds, (q, k, v) => (onDevice() ? attentionDense(q, k, v, args) : attentionBatched(q, k, v, args)), o);
}
