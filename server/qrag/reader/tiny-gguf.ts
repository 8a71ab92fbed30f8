/**
 * The reader's test model: a tiny llama-architecture GGUF (2 layers, width 64, ~900 tokens) with
 * seeded random weights, written in well under a second, never downloaded. Its tokenizer is a
 * SentencePiece ("llama") vocabulary: the 256 byte-fallback tokens llama.cpp needs for any text
 * (it looks up "<0x0A>" at load), printable ASCII, and every prefix of "▁word" for the words of
 * bAbI and the reader prompts (llama.cpp's SPM merges only pairs whose join is a token, so a word
 * is one token only if its prefixes are tokens too). Same seed, same bytes, same greedy output.
 */
import { Rng } from "../util/rng.ts";
import { writeGguf, type GgufTensor, type GgufValue } from "./gguf-writer.ts";

export interface TinyGgufOptions {
  seed?: number;
  layers?: number;
  width?: number;
  heads?: number;
  ffn?: number;
  /** `llama.context_length`: the most a context created on it may hold. */
  contextLength?: number;
}

const WORDS = (
  "the a an to of in is was and or what where who whom which Where What Who Before before after did give gave got get took " +
  "went moved travelled journeyed back go put down picked up dropped discarded left handed passed received there " +
  "Mary John Daniel Sandra Jeff Fred Bill Julie Emily Charlie Alan Judith " +
  "bathroom hallway kitchen garden office bedroom balcony garage football apple milk " +
  "north south east west of answer question context location most recent person item Final " +
  "magic number numbers special value yes no I you will facts"
).split(" ");

const SPACE = "\u2581";
const enum Kind { Normal = 1, Unknown = 2, Control = 3, Byte = 6 }

export function tinyVocab(): { tokens: string[]; scores: number[]; types: number[] } {
  const tokens: string[] = ["<unk>", "<s>", "</s>"];
  const types: number[] = [Kind.Unknown, Kind.Control, Kind.Control];
  for (let b = 0; b < 256; b++) { tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`); types.push(Kind.Byte); }
  const pieces = new Set<string>([SPACE]);
  for (let c = 0x21; c < 0x7f; c++) pieces.add(String.fromCharCode(c));
  for (const w of WORDS) for (let i = 2; i <= w.length + 1; i++) pieces.add((SPACE + w).slice(0, i));
  for (const p of pieces) { tokens.push(p); types.push(Kind.Normal); }
  // SPM merges the pair whose join scores highest: longer pieces first.
  const scores = tokens.map((t, i) => (types[i] === Kind.Normal ? [...t].length : 0));
  return { tokens, scores, types };
}

/** Writes the model to `file`; returns its size in bytes. */
export function writeTinyGguf(file: string, o: TinyGgufOptions = {}): number {
  const layers = o.layers ?? 2, d = o.width ?? 64, heads = o.heads ?? 4, ffn = o.ffn ?? 128;
  const rng = new Rng(o.seed ?? 7);
  const { tokens, scores, types } = tinyVocab();
  const V = tokens.length;
  // Wide enough weights that greedy argmax is not a near-tie (a tie could flip between CPU kernels).
  const rand = (dims: number[], sd: number): Float32Array => {
    const v = new Float32Array(dims.reduce((a, b) => a * b, 1));
    for (let i = 0; i < v.length; i++) v[i] = (rng.next() * 2 - 1) * sd * Math.sqrt(3);
    return v;
  };
  const ones = (n: number): Float32Array => new Float32Array(n).fill(1);
  const tensors: GgufTensor[] = [
    { name: "token_embd.weight", dims: [d, V], data: rand([d, V], 1) },
    { name: "output_norm.weight", dims: [d], data: ones(d) },
    { name: "output.weight", dims: [d, V], data: rand([d, V], 0.5) },
  ];
  for (let l = 0; l < layers; l++) {
    const p = `blk.${l}.`, s = 1 / Math.sqrt(d);
    tensors.push(
      { name: `${p}attn_norm.weight`, dims: [d], data: ones(d) },
      { name: `${p}attn_q.weight`, dims: [d, d], data: rand([d, d], s) },
      { name: `${p}attn_k.weight`, dims: [d, d], data: rand([d, d], s) },
      { name: `${p}attn_v.weight`, dims: [d, d], data: rand([d, d], s) },
      { name: `${p}attn_output.weight`, dims: [d, d], data: rand([d, d], s) },
      { name: `${p}ffn_norm.weight`, dims: [d], data: ones(d) },
      { name: `${p}ffn_gate.weight`, dims: [d, ffn], data: rand([d, ffn], s) },
      { name: `${p}ffn_up.weight`, dims: [d, ffn], data: rand([d, ffn], s) },
      { name: `${p}ffn_down.weight`, dims: [ffn, d], data: rand([ffn, d], 1 / Math.sqrt(ffn)) },
    );
  }
  const meta: [string, GgufValue][] = [
    ["general.architecture", { str: "llama" }],
    ["general.name", { str: "qrag-tiny-reader" }],
    ["general.alignment", { u32: 32 }],
    ["llama.context_length", { u32: o.contextLength ?? 2048 }],
    ["llama.embedding_length", { u32: d }],
    ["llama.block_count", { u32: layers }],
    ["llama.feed_forward_length", { u32: ffn }],
    ["llama.attention.head_count", { u32: heads }],
    ["llama.attention.head_count_kv", { u32: heads }],
    ["llama.rope.dimension_count", { u32: d / heads }],
    ["llama.attention.layer_norm_rms_epsilon", { f32: 1e-5 }],
    ["llama.vocab_size", { u32: V }],
    ["tokenizer.ggml.model", { str: "llama" }],
    ["tokenizer.ggml.tokens", { strs: tokens }],
    ["tokenizer.ggml.scores", { f32s: scores }],
    ["tokenizer.ggml.token_type", { i32s: types }],
    ["tokenizer.ggml.unknown_token_id", { u32: 0 }],
    ["tokenizer.ggml.bos_token_id", { u32: 1 }],
    ["tokenizer.ggml.eos_token_id", { u32: 2 }],
    ["tokenizer.ggml.add_bos_token", { bool: true }],
    ["tokenizer.ggml.add_eos_token", { bool: false }],
  ];
  return writeGguf(file, meta, tensors);
}
