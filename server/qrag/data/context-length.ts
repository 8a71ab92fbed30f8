/**
 * Chunk counts ↔ GPT-2 tokens for the BabiLong context-length sweep (docs/method.md §5.3).
 *
 * Q-RAG sweeps num_sentences ∈ {50, 160, 1200, 4600, 40000, 400000} and labels them
 * 1K/4K/32K/128K/1M/10M tokens, assuming ~20–25 GPT-2 tokens per PG19 sentence. Our noise text
 * differs, so we keep the reference's chunk counts but measure tokens per chunk by sampling and
 * label each length by its measured size (e.g. "≈1.8K").
 *
 * A chunk is counted as `" " + text` (the haystack joins chunks with spaces, as BabiLong's
 * `tok(' ' + sentence)` does).
 */
import { countGpt2Tokens } from "./tokens.ts";
import { chunkAt, type SampleSource } from "../types.ts";
import { Rng } from "../util/rng.ts";
import type { NoisePool } from "./noise/pool.ts";

interface SweepLength {
  chunks: number;
  /** The reference's label. */
  label: string;
  /** The token count the reference's label stands for (BabiLong: "1k" = 1000). */
  nominalTokens: number;
}

export const SWEEP_LENGTHS: readonly SweepLength[] = [
  { chunks: 50, label: "1K", nominalTokens: 1_000 },
  { chunks: 160, label: "4K", nominalTokens: 4_000 },
  { chunks: 1200, label: "32K", nominalTokens: 32_000 },
  { chunks: 4600, label: "128K", nominalTokens: 128_000 },
  { chunks: 40000, label: "1M", nominalTokens: 1_000_000 },
  { chunks: 400000, label: "10M", nominalTokens: 10_000_000 },
];

interface TokenStats {
  /** Chunks measured. */
  n: number;
  mean: number;
  std: number;
  min: number;
  p10: number;
  median: number;
  p90: number;
  max: number;
}

interface TokensPerChunk {
  noise: TokenStats;
  /** Present when a fact source was given: per-fact tokens and facts per sample. */
  facts?: TokenStats & { perSample: number; samples: number };
}

function tokenStats(counts: readonly number[]): TokenStats {
  const n = counts.length;
  if (n === 0) return { n: 0, mean: 0, std: 0, min: 0, p10: 0, median: 0, p90: 0, max: 0 };
  const sorted = [...counts].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / n;
  const variance = sorted.reduce((a, b) => a + (b - mean) ** 2, 0) / n;
  const q = (p: number) => sorted[Math.min(n - 1, Math.floor(p * n))];
  return { n, mean, std: Math.sqrt(variance), min: sorted[0], p10: q(0.1), median: q(0.5), p90: q(0.9), max: sorted[n - 1] };
}

/** GPT-2 tokens of one chunk as it appears in a space-joined haystack. */
function chunkTokens(text: string): number {
  return countGpt2Tokens(" " + text);
}

/**
 * Measures GPT-2 tokens per chunk by sampling: `chunks` independent draws from the distribution of
 * a haystack noise chunk (`NoisePool.sampleChunkMarginal`: runs of ≤100 from random books, weighed
 * by run length), and, if `facts` is given, every fact of up to `factSamples` random samples of that
 * source.
 */
export function measureTokensPerChunk(opts: {
  pool: NoisePool;
  facts?: SampleSource;
  chunks?: number;
  factSamples?: number;
  seed?: number;
}): TokensPerChunk {
  const rng = new Rng(opts.seed ?? 0).fork("measure-tokens");
  const idx = opts.pool.sampleChunkMarginal(opts.chunks ?? 2000, rng.fork("noise"));
  const noise = tokenStats(Array.from(idx, (i) => chunkTokens(opts.pool.sentence(i))));
  if (!opts.facts) return { noise };
  const src = opts.facts;
  const want = opts.factSamples ?? 200;
  const m = Number.isFinite(src.size) ? Math.min(want, src.size) : want;
  const counts: number[] = [];
  const frng = rng.fork("facts");
  for (let k = 0; k < m; k++) {
    const i = Number.isFinite(src.size) ? frng.int(src.size) : k;
    const list = src.sample(i).chunks;
    for (let j = 0; j < list.length; j++) counts.push(chunkTokens(chunkAt(list, j)));
  }
  return { noise, facts: { ...tokenStats(counts), perSample: m > 0 ? counts.length / m : 0, samples: m } };
}

/**
 * Expected GPT-2 tokens of a haystack of `numChunks` chunks. With a plain number every chunk costs
 * that much; with a mix, `factsPerSample` chunks are facts (capped at numChunks) and the rest noise.
 */
export function estimateContextTokens(
  numChunks: number,
  tokensPerChunk: number | { noise: number; fact: number; factsPerSample: number },
): number {
  if (typeof tokensPerChunk === "number") return numChunks * tokensPerChunk;
  const nFacts = Math.min(numChunks, tokensPerChunk.factsPerSample);
  return nFacts * tokensPerChunk.fact + (numChunks - nFacts) * tokensPerChunk.noise;
}

/** Chunks of `tokensPerChunk` needed to reach `targetTokens` (rounded to the nearest chunk). */
export function chunksForTokens(targetTokens: number, tokensPerChunk: number): number {
  if (!(tokensPerChunk > 0)) throw new RangeError(`tokensPerChunk must be > 0, got ${tokensPerChunk}`);
  return Math.max(1, Math.round(targetTokens / tokensPerChunk));
}

function trimFixed(x: number, digits: number): string {
  return x.toFixed(digits).replace(/\.0+$/, "");
}

/** Compact approximate token count: 850 → "≈850", 1_290 → "≈1.3K", 31_800 → "≈32K", 1.14e6 → "≈1.1M". */
export function formatTokens(tokens: number): string {
  const t = Math.max(0, tokens);
  if (t < 1_000) return `≈${Math.round(t)}`;
  if (t < 9_950) return `≈${trimFixed(t / 1_000, 1)}K`;
  if (t < 999_500) return `≈${Math.round(t / 1_000)}K`;
  if (t < 9_950_000) return `≈${trimFixed(t / 1_000_000, 1)}M`;
  return `≈${Math.round(t / 1_000_000)}M`;
}

/** Truthful label of a haystack length, by its measured token count (e.g. 50 chunks → "≈1.8K"). */
export function contextLengthLabel(
  numChunks: number,
  tokensPerChunk: Parameters<typeof estimateContextTokens>[1],
): string {
  return formatTokens(estimateContextTokens(numChunks, tokensPerChunk));
}
