/**
 * GPT-2 token counts (the tokenizer BabiLong and the Q-RAG sweep labels use), from the BPE ranks
 * shipped inside the npm package js-tiktoken — nothing is downloaded.
 */
import { Tiktoken } from "js-tiktoken/lite";
import gpt2 from "js-tiktoken/ranks/gpt2";

let enc: Tiktoken | undefined;

function encoder(): Tiktoken {
  enc ??= new Tiktoken(gpt2);
  return enc;
}

/**
 * GPT-2 splits text with this pattern and byte-pair-encodes each piece on its own, so a text's
 * count is the sum of its pieces' counts. Haystacks repeat the same words: counting each distinct
 * piece once makes a 1M-token NIAH input ≈ 20× cheaper than js-tiktoken's encode (which rebuilds a
 * byte key per piece). A piece re-encoded alone splits to itself (the pattern's only lookahead,
 * `\s+(?!\S)`, also holds at the end of a string), so the count is exact.
 */
const PIECES = new RegExp(gpt2.pat_str, "gu");
const SPECIAL = Object.keys(gpt2.special_tokens);
/** Bounded: needle values and uuids make new number pieces in every sample. */
const PIECE_CACHE_MAX = 500_000;
const pieceCounts = new Map<string, number>();

/** Number of GPT-2 tokens of `text` (throws, as js-tiktoken does, on a special token such as <|endoftext|>). */
export function countGpt2Tokens(text: string): number {
  if (SPECIAL.some((s) => text.includes(s))) return encoder().encode(text).length;
  let n = 0;
  for (const m of text.matchAll(PIECES)) {
    const piece = m[0];
    let c = pieceCounts.get(piece);
    if (c === undefined) {
      c = encoder().encode(piece).length;
      if (pieceCounts.size >= PIECE_CACHE_MAX) pieceCounts.clear();
      pieceCounts.set(piece, c);
    }
    n += c;
  }
  return n;
}
