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

/** Number of GPT-2 tokens of `text`. */
export function countGpt2Tokens(text: string): number {
  return encoder().encode(text).length;
}
