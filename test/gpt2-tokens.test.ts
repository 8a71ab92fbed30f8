import { test } from "node:test";
import assert from "node:assert/strict";
import { Tiktoken } from "js-tiktoken/lite";
import gpt2 from "js-tiktoken/ranks/gpt2";
import { countGpt2Tokens } from "../server/qrag/data/tokens.ts";
import { niahSource } from "../server/qrag/data/niah/generate.ts";

// The reference: js-tiktoken's own encode of the whole text.
const reference = new Tiktoken(gpt2);
const refCount = (text: string): number => reference.encode(text).length;

test("the piece-cached GPT-2 count equals js-tiktoken's on tricky text", () => {
  const texts = [
    "",
    "a",
    "Hello world",
    "a   b",                                   // a whitespace run before a word (\s+(?!\S))
    "end with spaces   ",
    "tabs\t\tand\nnew\n\n\nlines \n ",
    "I'm sure they'll say it's John's, we've 'd 'll",
    "One of the special magic numbers for lazy-otter is: 8723481.",
    "uuid 3f2b9c1e-4a7d-4e2b-9c1f-0d3e5a7b9c11 and 1234567890123",
    "naïve café — “quotes” ½ 東京 😀😀 emoji",
    "   leading spaces and trailing punctuation!!!???...",
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.",
  ];
  for (const t of texts) assert.equal(countGpt2Tokens(t), refCount(t), JSON.stringify(t));
  // a second pass is served from the piece cache and must still agree
  for (const t of texts) assert.equal(countGpt2Tokens(t), refCount(t), JSON.stringify(t));
});

test("the piece-cached count equals js-tiktoken's on generated NIAH inputs", () => {
  for (const task of ["niah_single_2", "niah_multikey_3", "niah_single_1"] as const) {
    const src = niahSource({ task, maxSeqLength: 16384, seed: 3, split: "tok" });
    const rec = src.record(1);
    assert.equal(countGpt2Tokens(rec.input), refCount(rec.input), task);
    assert.ok(rec.tokens <= 16384 - 128 && rec.tokens > 12000, `${task}: ${rec.tokens} tokens`);
  }
});

test("a special token is refused as js-tiktoken refuses it", () => {
  assert.throws(() => countGpt2Tokens("a story <|endoftext|> more"), /special token/);
});
