/**
 * RULER NIAH generator (`NVIDIA/RULER scripts/data/synthetic/niah.py`) and Q-RAG's conversion of a
 * RULER record into a retrieval Sample (`envs/dataloaders/niah.py`).
 *
 * Generation follows RULER: needles `One of the special magic {type}s for {key} is: {value}.`,
 * shuffled with a fixed-seed permutation; a noise, essay or needle haystack with the needles inserted
 * at random unit indexes (noise/needle) or at sentence depths drawn from the 40 DEPTHS (essay); the
 * question template with the singular replacements when q·v == 1; and length fitting: the largest
 * haystack size n with GPT-2 tokens(input) + 128 ≤ maxSeqLength, found once per source by a
 * bracketing search on n (interpolation steps with bisection fallback, started from RULER's
 * [incremental, 3 × estimate] bracket), then per sample stepped down while the sample overshoots.
 *
 * Substitutes and deviations (documented): the essay text is public-domain State of the Union prose
 * (not Paul Graham essays); keys come from our own adjective/noun lists (words.ts); sentence splitting
 * uses our regex splitter instead of NLTK Punkt; randomness is our seeded Rng, not Python's `random`;
 * needle-haystack filler needles never reuse a real needle's key or value, and all needle keys and
 * values of one sample are distinct (RULER does not check, but a collision would make a sample
 * ambiguous); a sample that overshoots the budget at the fitted size steps down by the estimated
 * overshoot (at most RULER's `incremental`) rather than always by `incremental`.
 */
import { InputError } from "../../errors.ts";
import type { Sample, SampleSource } from "../../types.ts";
import { Rng } from "../../util/rng.ts";
import { loadCorpus, type CorpusSpec } from "../noise/corpus.ts";
import { splitSentences } from "../text/sentences.ts";
import { countGpt2Tokens } from "../tokens.ts";
import { randomKey } from "./words.ts";

type NiahTask =
  | "niah_single_1"
  | "niah_single_2"
  | "niah_single_3"
  | "niah_multikey_1"
  | "niah_multikey_2"
  | "niah_multikey_3"
  | "niah_multivalue"
  | "niah_multiquery";

type NiahHaystack = "noise" | "essay" | "needle";
type NiahItemType = "words" | "numbers" | "uuids";

interface NiahTaskConfig {
  haystack: NiahHaystack;
  keyType: NiahItemType;
  valueType: NiahItemType;
  /** Number of keys (already max(k, q), as RULER does). */
  numNeedleK: number;
  numNeedleV: number;
  numNeedleQ: number;
}

/** RULER `scripts/synthetic.yaml`. */
export const NIAH_TASK_CONFIGS: Readonly<Record<NiahTask, NiahTaskConfig>> = {
  niah_single_1: { haystack: "noise", keyType: "words", valueType: "numbers", numNeedleK: 1, numNeedleV: 1, numNeedleQ: 1 },
  niah_single_2: { haystack: "essay", keyType: "words", valueType: "numbers", numNeedleK: 1, numNeedleV: 1, numNeedleQ: 1 },
  niah_single_3: { haystack: "essay", keyType: "words", valueType: "uuids", numNeedleK: 1, numNeedleV: 1, numNeedleQ: 1 },
  niah_multikey_1: { haystack: "essay", keyType: "words", valueType: "numbers", numNeedleK: 4, numNeedleV: 1, numNeedleQ: 1 },
  niah_multikey_2: { haystack: "needle", keyType: "words", valueType: "numbers", numNeedleK: 1, numNeedleV: 1, numNeedleQ: 1 },
  niah_multikey_3: { haystack: "needle", keyType: "uuids", valueType: "uuids", numNeedleK: 1, numNeedleV: 1, numNeedleQ: 1 },
  niah_multivalue: { haystack: "essay", keyType: "words", valueType: "numbers", numNeedleK: 1, numNeedleV: 4, numNeedleQ: 1 },
  niah_multiquery: { haystack: "essay", keyType: "words", valueType: "numbers", numNeedleK: 4, numNeedleV: 1, numNeedleQ: 4 },
};

export const NIAH_TASKS = Object.keys(NIAH_TASK_CONFIGS) as NiahTask[];

/** `round(linspace(0, 100, 40))`. */
export const DEPTHS: readonly number[] = [
  0, 3, 5, 8, 10, 13, 15, 18, 21, 23, 26, 28, 31, 33, 36, 38, 41, 44, 46, 49, 51, 54, 56, 59, 62, 64, 67, 69, 72, 74,
  77, 79, 82, 85, 87, 90, 92, 95, 97, 100,
];

export const NOISE_UNIT = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";

/** RULER's `tokens_to_generate` default, reserved in the length budget. */
const TOKENS_TO_GENERATE = 128;

const NEEDLE = (type: string, key: string, value: string): string => `One of the special magic ${type} for ${key} is: ${value}.`;

const TEMPLATE =
  "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special magic {type_needle_v} for {query} mentioned in the provided text?";
const ANSWER_PREFIX = " The special magic {type_needle_v} for {query} mentioned in the provided text are";

// ---------------------------------------------------------------------------------------------
// random keys and values

/** `randint(1000000, 9999999)` as a string. */
function randomNumberValue(rng: Rng): string {
  return String(rng.range(1000000, 9999999));
}

const HEX = "0123456789abcdef";

/** A random version-4 UUID in canonical lower-case form (version and variant bits forced). */
export function randomUuid(rng: Rng): string {
  const bytes = new Uint8Array(16);
  for (let w = 0; w < 4; w++) {
    const x = rng.nextU32();
    bytes[w * 4] = x >>> 24;
    bytes[w * 4 + 1] = (x >>> 16) & 0xff;
    bytes[w * 4 + 2] = (x >>> 8) & 0xff;
    bytes[w * 4 + 3] = x & 0xff;
  }
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  let s = "";
  for (let k = 0; k < 16; k++) {
    if (k === 4 || k === 6 || k === 8 || k === 10) s += "-";
    s += HEX[bytes[k] >>> 4] + HEX[bytes[k] & 0x0f];
  }
  return s;
}

/** RULER's `generate_random(type)`. */
function randomItem(type: NiahItemType, rng: Rng): string {
  switch (type) {
    case "numbers":
      return randomNumberValue(rng);
    case "uuids":
      return randomUuid(rng);
    case "words":
      return randomKey(rng);
  }
}

/** Draws an item not in `used` (and adds it). */
function freshItem(type: NiahItemType, rng: Rng, used: Set<string>): string {
  for (let tries = 0; tries < 1000; tries++) {
    const v = randomItem(type, rng);
    if (!used.has(v)) {
      used.add(v);
      return v;
    }
  }
  throw new Error(`could not draw a fresh ${type} item`);
}

// ---------------------------------------------------------------------------------------------
// essay text

const essayCache = new Map<string, string[]>();

/** Audience reactions in modern State of the Union transcripts: "(Applause.)", "—(applause)—". */
const REACTION = /\s*[\u2014-]*\((?:applause|laughter)[^)]*\)[\u2014-]*\s*/gi;

/**
 * The essay haystack's words (`re.sub(r"\s+", " ", essay).split(" ")`), cached per process and
 * corpus. The default State of the Union corpus is taken newest address first, so the haystack starts
 * in modern prose (median ~17 words per sentence, close to the essays RULER uses; the 1790s addresses
 * average over 30), with the transcripts' "(Applause.)" markers removed. A folder corpus is taken in
 * title order as loaded.
 */
function essayWords(spec: CorpusSpec = { kind: "sotu" }): string[] {
  const key = JSON.stringify(spec);
  let words = essayCache.get(key);
  if (!words) {
    const books = loadCorpus(spec);
    if (spec.kind === "sotu") books.reverse();
    const text = books
      .map((b) => b.text.replace(REACTION, " "))
      .join(" ")
      .trim();
    words = text.split(/\s+/);
    if (words.length === 0 || words[0] === "") throw new InputError(`essay corpus ${key} has no text`);
    essayCache.set(key, words);
  }
  return words;
}

/** The first n words of the essay, cycling through it when n exceeds its length. */
function essayPrefix(words: readonly string[], n: number): string {
  if (n <= words.length) return words.slice(0, n).join(" ");
  const out = new Array<string>(n);
  for (let k = 0; k < n; k++) out[k] = words[k % words.length];
  return out.join(" ");
}

// ---------------------------------------------------------------------------------------------
// one input

interface NiahInput {
  /** Instruction, haystack with needles, and the question (ends with "?"). */
  input: string;
  /** Values of the queried keys, in generation order. */
  outputs: string[];
  /** RULER's `answer_prefix` (not part of `input`). */
  answerPrefix: string;
  /** Queried keys in query order. */
  queries: string[];
  /** Every needle sentence of the sample (after the fixed shuffle). */
  needles: string[];
}

interface BuildOptions {
  /** Seed of RULER's fixed needle permutation `random.Random(seed).shuffle(needles)`. */
  orderSeed: number;
  /** Essay words (required for essay tasks); default: the SOTU corpus. */
  essay?: readonly string[];
}

/** Builds one RULER NIAH input with a haystack of size n (essay: words; noise/needle: units). */
export function buildNiahInput(cfg: NiahTaskConfig, n: number, rng: Rng, opts: BuildOptions): NiahInput {
  const { numNeedleK: k, numNeedleV: v, numNeedleQ: q } = cfg;
  const typeV = cfg.valueType;
  // needles (keys and values all distinct within the sample)
  const nr = rng.fork("needles");
  const usedKeys = new Set<string>();
  const usedValues = new Set<string>();
  const keys: string[] = [];
  const values: string[][] = [];
  const needles: string[] = [];
  for (let i = 0; i < k; i++) {
    const key = freshItem(cfg.keyType, nr, usedKeys);
    keys.push(key);
    const vs: string[] = [];
    for (let j = 0; j < v; j++) {
      const value = freshItem(typeV, nr, usedValues);
      vs.push(value);
      needles.push(NEEDLE(typeV, key, value));
    }
    values.push(vs);
  }
  new Rng(opts.orderSeed).fork("needle-order").shuffle(needles);

  // context
  const hr = rng.fork("haystack");
  let context: string;
  if (cfg.haystack === "essay") {
    const words = opts.essay ?? essayWords();
    const sents = splitSentences(essayPrefix(words, n).trim());
    const depths = hr.sampleWithoutReplacement(DEPTHS.length, needles.length).map((j) => DEPTHS[j]);
    const pos = [0, ...depths.map((d) => Math.floor((sents.length * d) / 100)).sort((a, b) => a - b), sents.length];
    const parts: string[] = [];
    for (let i = 1; i < pos.length; i++) {
      parts.push(sents.slice(pos[i - 1], pos[i]).join(" "));
      if (i - 1 < needles.length) parts.push(needles[i - 1]);
    }
    context = parts.join(" ");
  } else {
    if (n < needles.length) throw new RangeError(`haystack size ${n} is smaller than the number of needles ${needles.length}`);
    let lines: string[];
    if (cfg.haystack === "noise") {
      lines = new Array<string>(n).fill(NOISE_UNIT);
    } else {
      lines = new Array<string>(n);
      const fillerKeys = new Set(usedKeys);
      const fillerValues = new Set(usedValues);
      for (let u = 0; u < n; u++) {
        let key = randomItem(cfg.keyType, hr);
        while (fillerKeys.has(key)) key = randomItem(cfg.keyType, hr);
        let value = randomItem(typeV, hr);
        while (fillerValues.has(value)) value = randomItem(typeV, hr);
        lines[u] = NEEDLE(typeV, key, value);
      }
    }
    const indexes = hr.sampleWithoutReplacement(n, needles.length).sort((a, b) => b - a);
    indexes.forEach((index, j) => lines.splice(index, 0, needles[j]));
    context = lines.join("\n");
  }

  // query and answers
  const qr = rng.fork("query");
  const indices = qr.sampleWithoutReplacement(k, q);
  const queries = indices.map((i) => keys[i]);
  const outputs = indices.flatMap((i) => values[i]);
  const query = queries.length > 1 ? `${queries.slice(0, -1).join(", ")}, and ${queries[queries.length - 1]}` : queries[0];
  let template = TEMPLATE;
  let prefix = ANSWER_PREFIX;
  let typeWord: string = typeV;
  if (q * v === 1) {
    const singular = (t: string): string =>
      t.replaceAll("Some", "A").replaceAll("are all", "is").replaceAll("are", "is").replaceAll("answers", "answer");
    template = singular(template);
    prefix = singular(prefix);
    typeWord = typeWord.slice(0, -1);
  }
  const fill = (t: string): string =>
    t.replaceAll("{type_needle_v}", typeWord).replaceAll("{query}", query).replace("{context}", () => context);
  return { input: fill(template), outputs, answerPrefix: fill(prefix), queries, needles };
}

// ---------------------------------------------------------------------------------------------
// Q-RAG conversion (shared with ruler-file.ts)

/**
 * Q-RAG's NIAH loader: split the input into sentences (newline = hard stop), the last sentence is
 * the question, the others are the chunks; supportIdx = every chunk that contains any output as a
 * substring; answer = outputs joined by ",".
 */
export function rulerInputToSample(
  input: string,
  outputs: readonly string[],
  id: string,
  meta?: Record<string, string | number>,
): Sample {
  if (outputs.length === 0) throw new InputError(`${id}: outputs is empty`);
  const sentences = splitSentences(input);
  if (sentences.length < 2) throw new InputError(`${id}: input has ${sentences.length} sentence(s); need a question and at least one chunk`);
  const question = sentences[sentences.length - 1];
  const chunks = sentences.slice(0, -1);
  const supportIdx: number[] = [];
  chunks.forEach((s, i) => {
    if (outputs.some((o) => o !== "" && s.includes(o))) supportIdx.push(i);
  });
  return { id, question, answer: outputs.join(","), chunks, supportIdx, meta };
}

// ---------------------------------------------------------------------------------------------
// length fitting

interface FitResult {
  /** Largest haystack size found to fit the budget for the calibration sample. */
  size: number;
  /** tokens(input) at that size. */
  tokens: number;
  /** Number of inputs built and tokenised during the search. */
  probes: number;
}

/** RULER's step for the per-sample fallback (and the first probe of the search). */
function incrementalFor(haystack: NiahHaystack, maxSeqLength: number): number {
  if (haystack === "essay") return 500;
  return maxSeqLength < 4096 ? 5 : 25;
}

/**
 * Largest n in [minN, ∞) with tokensAt(n) ≤ budget, assuming tokensAt is (close to) increasing.
 * Bracket as RULER: lower = incremental, upper = max(3 × budget / (tokens per unit at incremental),
 * 2 × incremental); then interpolation steps inside the bracket, with bisection whenever an
 * interpolation step fails to halve it. Returns undefined if even minN does not fit.
 */
export function searchLargestFit(
  tokensAt: (n: number) => number,
  budget: number,
  incremental: number,
  minN: number,
): { n: number; tokens: number; probes: number } | undefined {
  let probes = 0;
  const probe = (n: number): number => {
    probes++;
    return tokensAt(n);
  };
  const first = Math.max(incremental, minN);
  const tFirst = probe(first);
  let lo: number, tLo: number, hi: number, tHi: number;
  if (tFirst > budget) {
    const tMin = first === minN ? tFirst : probe(minN);
    if (tMin > budget) return undefined;
    lo = minN;
    tLo = tMin;
    hi = first;
    tHi = tFirst;
  } else {
    lo = first;
    tLo = tFirst;
    const upper = Math.max(Math.floor((budget / (tFirst / first)) * 3), 2 * first);
    // extrapolate from the overhead at minN and the first probe (secant updates), until a probe overshoots
    const tMin = first === minN ? 0 : probe(minN);
    let slope = Math.max(first === minN ? tFirst / first : (tFirst - tMin) / (first - minN), 1e-6);
    hi = upper + 1;
    tHi = Infinity;
    for (let step = 0; step < 200 && tHi === Infinity; step++) {
      // a little past the estimate so that the probe after the last fitting one lands above the budget
      const guess = Math.min(upper, lo + Math.max(1, Math.ceil(((budget - tLo) / slope) * 1.02) + 1));
      const t = probe(guess);
      if (t <= budget) {
        slope = Math.max((t - tLo) / (guess - lo), 1e-6);
        lo = guess;
        tLo = t;
        if (lo >= upper) return { n: lo, tokens: tLo, probes };
      } else {
        hi = guess;
        tHi = t;
      }
    }
    if (tHi === Infinity) return { n: lo, tokens: tLo, probes };
  }
  while (hi - lo > 1) {
    const width = hi - lo;
    let mid = lo + Math.floor(((budget - tLo) * width) / (tHi - tLo));
    mid = Math.min(hi - 1, Math.max(lo + 1, mid));
    const t = probe(mid);
    if (t <= budget) {
      lo = mid;
      tLo = t;
    } else {
      hi = mid;
      tHi = t;
    }
    if (hi - lo > width / 2 && hi - lo > 1) {
      const b = lo + Math.floor((hi - lo) / 2);
      const tb = probe(b);
      if (tb <= budget) {
        lo = b;
        tLo = tb;
      } else {
        hi = b;
        tHi = tb;
      }
    }
  }
  return { n: lo, tokens: tLo, probes };
}

// ---------------------------------------------------------------------------------------------
// source

interface NiahSourceOptions {
  task: NiahTask;
  /** Token budget: GPT-2 tokens(input) + tokensToGenerate ≤ maxSeqLength. */
  maxSeqLength: number;
  seed: number;
  /** Split name ("train", "test4k", …): samples are deterministic by (seed, split, index). */
  split: string;
  /** Number of samples; default 500 (RULER's default); Infinity for an endless generator. */
  numSamples?: number;
  /** Reserved generation tokens; default 128. */
  tokensToGenerate?: number;
  /** Essay corpus; default the State of the Union addresses. */
  essayCorpus?: CorpusSpec;
}

/** One generated sample in RULER's record shape (plus our bookkeeping). */
interface NiahRecord {
  index: number;
  input: string;
  outputs: string[];
  answerPrefix: string;
  /** GPT-2 tokens of `input`. */
  tokens: number;
  /** tokens + tokensToGenerate (RULER's `length`). */
  length: number;
  /** Haystack size used (essay: words; noise/needle: units). */
  haystackSize: number;
}

export interface NiahSource extends SampleSource {
  readonly task: NiahTask;
  readonly config: NiahTaskConfig;
  /** The haystack size fitted once for this source (computed on first use). */
  fit(): FitResult;
  /** The i-th sample as a RULER record. */
  record(index: number): NiahRecord;
}

function isNiahTask(x: string): x is NiahTask {
  return Object.prototype.hasOwnProperty.call(NIAH_TASK_CONFIGS, x);
}

/** A deterministic RULER NIAH sample source: sample(i) depends only on (seed, split, task, maxSeqLength, i). */
export function niahSource(opts: NiahSourceOptions): NiahSource {
  const { task, maxSeqLength, seed, split } = opts;
  if (!isNiahTask(task)) throw new InputError(`unknown NIAH task "${String(task)}"; expected one of ${NIAH_TASKS.join(", ")}`);
  const gen = opts.tokensToGenerate ?? TOKENS_TO_GENERATE;
  if (!Number.isInteger(gen) || gen < 0) throw new InputError(`tokensToGenerate must be a non-negative integer, got ${gen}`);
  if (!Number.isInteger(maxSeqLength) || maxSeqLength <= gen) {
    throw new InputError(`maxSeqLength must be an integer > ${gen}, got ${maxSeqLength}`);
  }
  if (!Number.isInteger(seed)) throw new InputError(`seed must be an integer, got ${seed}`);
  if (typeof split !== "string" || split === "") throw new InputError("split must be a non-empty string");
  const size = opts.numSamples ?? 500;
  if (!(size === Infinity || (Number.isInteger(size) && size > 0))) {
    throw new InputError(`numSamples must be a positive integer or Infinity, got ${size}`);
  }
  const cfg = NIAH_TASK_CONFIGS[task];
  const budget = maxSeqLength - gen;
  const incremental = incrementalFor(cfg.haystack, maxSeqLength);
  const numNeedles = cfg.numNeedleK * cfg.numNeedleV;
  const minN = cfg.haystack === "essay" ? 1 : numNeedles;
  const base = new Rng(seed).fork(`niah/${task}/${split}`);
  const name = `${task}:${maxSeqLength}:${split}`;
  let essay: readonly string[] | undefined;
  const build = (n: number, rng: Rng): NiahInput => {
    if (cfg.haystack === "essay") essay ??= essayWords(opts.essayCorpus);
    return buildNiahInput(cfg, n, rng, { orderSeed: seed, essay });
  };

  let fitted: FitResult | undefined;
  const fit = (): FitResult => {
    if (fitted) return fitted;
    const rng = base.fork("fit");
    const found = searchLargestFit((n) => countGpt2Tokens(build(n, rng).input), budget, incremental, minN);
    if (!found) {
      const t = countGpt2Tokens(build(minN, rng).input);
      throw new InputError(
        `maxSeqLength ${maxSeqLength} is too small for ${task}: the smallest input already takes ${t} GPT-2 tokens + ${gen} to generate`,
      );
    }
    fitted = { size: found.n, tokens: found.tokens, probes: found.probes };
    return fitted;
  };

  const record = (index: number): NiahRecord => {
    if (!Number.isInteger(index) || index < 0 || index >= size) {
      throw new RangeError(`${name}: sample index ${index} out of range 0..${size - 1}`);
    }
    const f = fit();
    const perUnit = f.tokens / f.size;
    const rng = base.fork("samples").fork(index);
    let n = f.size;
    for (;;) {
      const built = build(n, rng);
      const tokens = countGpt2Tokens(built.input);
      if (tokens <= budget) {
        return { index, input: built.input, outputs: built.outputs, answerPrefix: built.answerPrefix, tokens, length: tokens + gen, haystackSize: n };
      }
      if (n <= minN) throw new InputError(`${name}: sample ${index} does not fit ${maxSeqLength} tokens even with the smallest haystack`);
      const over = Math.ceil((tokens - budget) / Math.max(perUnit, 1e-6));
      n = Math.max(minN, n - Math.min(incremental, Math.max(1, over)));
    }
  };

  return {
    name,
    size,
    task,
    config: cfg,
    fit,
    record,
    sample(index: number): Sample {
      const r = record(index);
      return rulerInputToSample(r.input, r.outputs, `${task}-${split}-${index}`, {
        source: "ruler-niah",
        task,
        split,
        index,
        maxSeqLength,
        tokens: r.tokens,
        length: r.length,
        haystack: cfg.haystack,
        haystackSize: r.haystackSize,
        answerPrefix: r.answerPrefix,
      });
    },
  };
}
