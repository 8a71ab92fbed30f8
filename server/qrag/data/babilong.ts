/**
 * BabiLong samples the way Q-RAG's retrieval loader builds them (docs/data.md §2,
 * docs/method.md §6): one chunk = one sentence; `numSentences` is the TOTAL chunk count;
 * `numNoise = max(numSentences − nFacts, 0)` noise sentences come from the pool as runs of ≤100
 * contiguous sentences; the facts keep their order and occupy `nFacts` slots chosen uniformly
 * without replacement among all positions; supporting-fact indices are mapped to their slots.
 *
 * The chunk list is lazy (facts + sorted fact slots + an Int32Array of noise pool indices), so a
 * 400,000-chunk haystack costs ~1.6 MB of indices and no copied text.
 */
import { chunkAt, type ChunkList, type Sample, type SampleSource } from "../types.ts";
import { Rng } from "../util/rng.ts";
import type { NoisePool } from "./noise/pool.ts";
import { keepStoryFacts, type CurriculumLevel } from "./curriculum.ts";

interface BabilongOptions {
  /** Source of bAbI-style samples: `chunks` = the story facts, `supportIdx` into them. */
  facts: SampleSource;
  /** Total chunks per sample; a list means one value drawn per sample with the sample's rng. */
  numSentences: number | readonly number[];
  pool: NoisePool;
  seed: number;
  split: string;
  /** Training curriculum (curriculum.ts): the level at the moment a sample is drawn. */
  level?: () => CurriculumLevel;
}

/** Lazy haystack: chunk i is a fact if i is one of the (sorted) fact slots, else the next noise sentence. */
export class BabilongChunks implements ChunkList {
  readonly length: number;

  constructor(
    readonly facts: readonly string[],
    /** Strictly increasing chunk positions of facts[0..]. */
    readonly factSlots: Int32Array,
    /** Pool indices of the noise chunks, in haystack order. */
    readonly noise: Int32Array,
    readonly pool: NoisePool,
  ) {
    if (facts.length !== factSlots.length) throw new Error("BabilongChunks: one slot per fact required");
    this.length = facts.length + noise.length;
  }

  at(i: number): string | undefined {
    if (!Number.isInteger(i)) return undefined;
    if (i < 0) i += this.length; // Array.prototype.at semantics
    if (i < 0 || i >= this.length) return undefined;
    // number of fact slots < i, and whether i itself is a fact slot
    const slots = this.factSlots;
    let lo = 0;
    let hi = slots.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (slots[mid] < i) lo = mid + 1;
      else hi = mid;
    }
    if (lo < slots.length && slots[lo] === i) return this.facts[lo];
    return this.pool.sentence(this.noise[i - lo]);
  }
}

function checkLength(n: number): number {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`babilong: numSentences must be a non-negative integer, got ${n}`);
  return n;
}

/** Materialises a (small) fact chunk list. */
function toArray(list: ChunkList): string[] {
  const out: string[] = new Array(list.length);
  for (let i = 0; i < list.length; i++) out[i] = chunkAt(list, i);
  return out;
}

/**
 * Mixes one fact sample with noise per Q-RAG (docs/data.md §2). Exposed for callers that manage
 * their own rng; `babilongSource` derives the rng from (seed, split, index).
 */
function mixBabilongSample(
  fact: Sample,
  numSentences: number,
  pool: NoisePool,
  rng: Rng,
): { chunks: BabilongChunks; supportIdx: number[] } {
  const facts = toArray(fact.chunks);
  const nFacts = facts.length;
  const numNoise = Math.max(checkLength(numSentences) - nFacts, 0);
  const noise = pool.sampleRuns(numNoise, rng.fork("noise"));
  const total = numNoise + nFacts;
  const factSlots = Int32Array.from(rng.fork("slots").sampleWithoutReplacement(total, nFacts)).sort();
  const supportIdx = [...new Set(fact.supportIdx)]
    .map((j) => {
      if (!(Number.isInteger(j) && j >= 0 && j < nFacts)) {
        throw new RangeError(`fact sample ${fact.id}: supportIdx ${j} out of range 0..${nFacts - 1}`);
      }
      return factSlots[j];
    })
    .sort((a, b) => a - b);
  return { chunks: new BabilongChunks(facts, factSlots, noise, pool), supportIdx };
}

/** BabiLong sample source over any fact source; sample(i) is deterministic by (seed, split, i). */
export function babilongSource(opts: BabilongOptions): SampleSource {
  const { facts, pool, seed, split } = opts;
  const lengths = typeof opts.numSentences === "number" ? [opts.numSentences] : [...opts.numSentences];
  if (lengths.length === 0) throw new RangeError("babilong: numSentences list is empty");
  lengths.forEach(checkLength);
  const base = new Rng(seed).fork(`babilong:${split}`);
  const lengthTag = lengths.length === 1 ? String(lengths[0]) : lengths.join(",");
  return {
    name: `babilong(${facts.name}, n=${lengthTag})`,
    size: facts.size,
    sample(index: number): Sample {
      if (!Number.isInteger(index) || index < 0 || index >= facts.size) {
        throw new RangeError(`babilong: sample index ${index} out of range 0..${facts.size - 1}`);
      }
      const rng = base.fork(index);
      const level = opts.level?.();
      const numSentences = level ? level.numSentences : lengths.length === 1 ? lengths[0] : rng.fork("length").choice(lengths);
      const whole = facts.sample(index);
      const fact = level ? keepStoryFacts(whole, level.storyFacts, rng.fork("story")) : whole;
      const { chunks, supportIdx } = mixBabilongSample(fact, numSentences, pool, rng);
      return {
        id: `${fact.id}@n${numSentences}`,
        question: fact.question,
        answer: fact.answer,
        chunks,
        supportIdx,
        meta: { ...fact.meta, numSentences },
      };
    },
  };
}

/**
 * Yields a sample's chunk texts in order as batches of ≤ batchSize, for encoders that embed long
 * haystacks in pieces. Walks a BabilongChunks with a merge pointer (no per-chunk binary search).
 */
export function* streamChunks(sample: Pick<Sample, "chunks">, batchSize: number): Generator<string[]> {
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError(`streamChunks: batchSize must be ≥ 1, got ${batchSize}`);
  const list = sample.chunks;
  const n = list.length;
  if (list instanceof BabilongChunks) {
    let f = 0; // next fact
    let z = 0; // next noise
    for (let from = 0; from < n; from += batchSize) {
      const to = Math.min(n, from + batchSize);
      const batch: string[] = new Array(to - from);
      for (let i = from; i < to; i++) {
        batch[i - from] = f < list.factSlots.length && list.factSlots[f] === i ? list.facts[f++] : list.pool.sentence(list.noise[z++]);
      }
      yield batch;
    }
    return;
  }
  for (let from = 0; from < n; from += batchSize) {
    const to = Math.min(n, from + batchSize);
    const batch: string[] = new Array(to - from);
    for (let i = from; i < to; i++) batch[i - from] = chunkAt(list, i);
    yield batch;
  }
}
