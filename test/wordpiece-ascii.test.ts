/**
 * The ASCII fast path of the BERT tokenizer (model/hf/wordpiece-ascii.ts) gives the ids the
 * library (@huggingface/tokenizers) gives, text for text: State of the Union sentences (the
 * haystacks' noise), bAbI stories, and fuzzed ASCII with control characters, punctuation, words
 * over the 100-character limit and special-token strings in any case; lower-cased and cased
 * tokenizers. Non-ASCII text goes to the library.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { WordPieceTokenizer } from "../server/qrag/model/hf/wordpiece.ts";
import { AsciiWordPiece } from "../server/qrag/model/hf/wordpiece-ascii.ts";
import { readOwnFile } from "../server/qrag/data-root.ts";
import { loadCorpus } from "../server/qrag/data/noise/corpus.ts";
import { Rng } from "../server/qrag/util/rng.ts";

const BERT_TINY = path.join(import.meta.dirname, "fixtures/bert-tiny");
const BABI = path.join(import.meta.dirname, "fixtures/babi");

/** bert-tiny's tokenizer from its vocab.txt, lower-casing or not. */
function tokenizer(lowercase: boolean): WordPieceTokenizer {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-wp-"));
  fs.copyFileSync(path.join(BERT_TINY, "vocab.txt"), path.join(dir, "vocab.txt"));
  fs.writeFileSync(path.join(dir, "tokenizer_config.json"), JSON.stringify({ do_lower_case: lowercase }));
  return WordPieceTokenizer.fromFolder(dir, "bert-tiny", readOwnFile);
}

function texts(): string[] {
  const out: string[] = [];
  for (const b of loadCorpus({ kind: "sotu" }).slice(0, 40)) out.push(...b.text.split(/(?<=[.!?])\s+/).slice(0, 60));
  for (const f of fs.readdirSync(BABI).filter((f) => f.endsWith(".txt"))) out.push(...fs.readFileSync(path.join(BABI, f), "utf8").split("\n").slice(0, 200));
  const rng = new Rng(11);
  const alphabet = " \t\n\r\v\f\x00\x01\x1f\x7f!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  const words = ["mary", "went", "kitchen", "ed", "##ed", "[CLS]", "[sep]", "[Mask]", "[UNK", "journeyed", "x".repeat(101), "apple".repeat(20)];
  for (let i = 0; i < 2000; i++) {
    let s = "";
    const n = 1 + rng.int(40);
    for (let j = 0; j < n; j++) s += rng.next() < 0.3 ? words[rng.int(words.length)] + " " : alphabet[rng.int(alphabet.length)];
    out.push(s);
  }
  return out;
}

for (const lowercase of [true, false]) {
  test(`the ASCII fast path gives the library's ids (${lowercase ? "lower-cased" : "cased"})`, () => {
    const tok = tokenizer(lowercase);
    let fast = 0;
    for (const t of texts()) {
      assert.deepEqual(tok.ids(t), tok.libraryIds(t), `ids of ${JSON.stringify(t.slice(0, 120))}`);
      if (![...t].some((ch) => ch.charCodeAt(0) > 127) && !/\[(cls|sep|pad|unk|mask)\]/i.test(t)) fast++;
    }
    assert.ok(fast > 3000, `most texts take the fast path (${fast})`);
  });
}

test("the fast path answers ASCII text only, without special-token strings, and only for the BERT pipeline", () => {
  const json = {
    added_tokens: [{ content: "[CLS]" }, { content: "[UNK]" }],
    normalizer: { type: "BertNormalizer", clean_text: true, lowercase: true },
    pre_tokenizer: { type: "BertPreTokenizer" },
    model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", vocab: { "[UNK]": 0, "[CLS]": 1, mary: 2, went: 3, "##s": 4, ".": 5 } },
  };
  const fast = AsciiWordPiece.from(json)!;
  assert.deepEqual(fast.ids("Mary wents."), [2, 3, 4, 5]);
  assert.deepEqual(fast.ids("Mary zzz"), [2, 0]);
  assert.equal(fast.ids("Marý went"), null);
  assert.equal(fast.ids("mary [cls] went"), null);
  assert.equal(AsciiWordPiece.from({ ...json, pre_tokenizer: { type: "Whitespace" } }), null);
  assert.equal(AsciiWordPiece.from({ ...json, normalizer: { type: "BertNormalizer", clean_text: false } }), null);
});

test("a text's ids are kept for its next call: the library's ids again, texts over 4,096 characters not kept, the cache bounded", () => {
  const tok = tokenizer(true);
  const all = texts();
  const long = "Mary went to the kitchen. ".repeat(200); // 5,200 characters
  for (const t of [...all, long]) tok.ids(t);
  const kept = tok.cachedTexts;
  assert.equal(kept, new Set(all).size, "each distinct text kept once, the long one not");
  for (const t of [...all, long]) assert.deepEqual(tok.ids(t), tok.libraryIds(t), `ids of ${JSON.stringify(t.slice(0, 120))} from the cache`);
  assert.equal(tok.cachedTexts, kept, "the second pass hits the cache");
  for (let i = 0; i < 70_000; i++) tok.ids(`mary ${i}`);
  assert.ok(tok.cachedTexts <= 65_536, `bounded (${tok.cachedTexts})`);
  assert.deepEqual(tok.ids("mary 69999"), tok.libraryIds("mary 69999"));
});
