/**
 * Bench part "gpt2-count": GPT-2 token counting of one generated 1M-token NIAH input (essay
 * haystack), the piece-cached counter (data/tokens.ts) against js-tiktoken's whole-text encode,
 * and the generator's cost per sample that depends on it (fitting once, then each record).
 */
import { Tiktoken } from "js-tiktoken/lite";
import gpt2 from "js-tiktoken/ranks/gpt2";
import { countGpt2Tokens } from "../data/tokens.ts";
import { niahSource } from "../data/niah/generate.ts";

const seconds = (t0: number): number => (performance.now() - t0) / 1000;

export function benchGpt2Count(maxSeqLength = 1 << 20): Record<string, unknown> {
  const src = niahSource({ task: "niah_single_2", maxSeqLength, seed: 7, split: "bench", numSamples: 3 });
  let t0 = performance.now();
  const fit = src.fit();
  const fitSeconds = seconds(t0);
  const recordSeconds: number[] = [];
  for (let i = 0; i < 3; i++) {
    t0 = performance.now();
    src.record(i);
    recordSeconds.push(seconds(t0));
  }
  const input = src.record(0).input;
  t0 = performance.now();
  const cached = countGpt2Tokens(input);
  const cachedSeconds = seconds(t0);
  t0 = performance.now();
  const whole = new Tiktoken(gpt2).encode(input).length;
  const wholeSeconds = seconds(t0);
  if (cached !== whole) throw new Error(`gpt2-count: piece-cached count ${cached} differs from js-tiktoken's ${whole}`);
  return {
    maxSeqLength, tokens: whole, chars: input.length,
    pieceCachedSeconds: cachedSeconds, jsTiktokenSeconds: wholeSeconds,
    fit: { ...fit, seconds: fitSeconds }, recordSeconds,
  };
}
