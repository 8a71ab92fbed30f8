/**
 * The check of the files an encoder config names (an hf encoder's Hugging Face folder, a bow
 * encoder's word vectors) against the data root, before a run is stored (server/runs) or started
 * (the worker). Files and config only, no tensors: the engine's public face (index.ts) exports
 * `checkEncoderPath` and must not load TensorFlow.js. Reading the folder is encoder.ts's.
 */
import fs from "node:fs";
import path from "node:path";
import { resolveDataPath } from "../../data-root.ts";
import { checkWordVectors } from "../word-vectors-path.ts";

/** The config field naming an hf encoder's model folder. */
export const HF_PATH_FIELD = "algo.encoder.path";

/** The first file a model folder lacks, or null. */
export function missingModelFile(dir: string): string | null {
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
  if (typeof enc.path !== "string") return { encoder: enc, issues: [{ path: HF_PATH_FIELD, message: "required for type hf (a Hugging Face model folder in the data root)" }] };
  const r = resolveDataPath(root, enc.path, { kind: "dir", mustExist: opts.mustExist });
  if (!r.ok) return { encoder: enc, issues: [{ path: HF_PATH_FIELD, message: r.message }] };
  if (opts.mustExist !== false) {
    const miss = missingModelFile(r.abs);
    if (miss) return { encoder: enc, issues: [{ path: HF_PATH_FIELD, message: `no ${miss} in ${r.rel}` }] };
  }
  return { encoder: { ...enc, path: r.rel }, issues: [] };
}
