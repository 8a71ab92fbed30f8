/**
 * Word tokenizer shared by the encoders and the BM25 baseline: lower-case alphanumeric words.
 * Encoders map words to ids by hashing into a fixed number of buckets (no vocabulary file, so a
 * model trained on one corpus applies to any text, and nothing is downloaded).
 */
const WORD = /[a-z0-9]+/g;

export function words(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

/** 32-bit FNV-1a of a word. */
function hashWord(w: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < w.length; i++) {
    h ^= w.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Special ids reserved at the bottom of every hashed vocabulary. */
export const PAD = 0;
export const CLS = 1;
export const SEP = 2;
const FIRST_WORD_ID = 3;

/** A 32-bit hash (word or bigram) → its id in [FIRST_WORD_ID, vocabSize). */
const bucket = (hash: number, vocabSize: number) => FIRST_WORD_ID + (hash % (vocabSize - FIRST_WORD_ID));

/** Word id in [FIRST_WORD_ID, vocabSize). */
export function wordId(w: string, vocabSize: number): number {
  return bucket(hashWord(w), vocabSize);
}

/** Ids of the words of a text, truncated to `maxTokens` words. */
export function textIds(text: string, vocabSize: number, maxTokens: number): number[] {
  const ws = words(text);
  const n = Math.min(ws.length, maxTokens);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = wordId(ws[i], vocabSize);
  return out;
}

/**
 * Writes the FNV-1a hashes of the first `maxWords` words of an ASCII text into `out` from `at` (as
 * `words` + hashWord give them; an Int32Array holds them as int32) and returns how many; -1 at the
 * first non-ASCII character, where toLowerCase may map a character to an ASCII letter: the caller
 * takes the exact path then. One pass over the characters: no lower-casing copy, regex or substrings.
 */
function scanHashes(text: string, maxWords: number, out: number[] | Int32Array, at: number): number {
  if (maxWords <= 0) return 0;
  const n = text.length;
  let count = 0;
  let h = 0;
  let inWord = false;
  for (let i = 0; i < n; i++) {
    let c = text.charCodeAt(i);
    if (c >= 128) return -1;
    if (c >= 65 && c <= 90) c += 32;
    if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) {
      if (!inWord) {
        h = 0x811c9dc5;
        inWord = true;
      }
      h ^= c;
      h = Math.imul(h, 0x01000193);
    } else if (inWord) {
      out[at + count++] = h >>> 0;
      inWord = false;
      if (count >= maxWords) return count;
    }
  }
  if (inWord) out[at + count++] = h >>> 0;
  return count;
}

/** Raw 32-bit word hashes of a text (the first `maxWords` words), as `words` + FNV-1a would give. */
function wordHashes(text: string, maxWords: number): number[] {
  const out: number[] = [];
  return scanHashes(text, maxWords, out, 0) < 0 ? words(text).slice(0, maxWords).map(hashWord) : out;
}

/**
 * `textIds` written into `out` from `at` (the first `maxTokens` words; `out` has room for them):
 * how many. The packers' path (model/row-packer.ts): no array per text.
 */
export function writeTextIds(text: string, vocabSize: number, maxTokens: number, out: Int32Array, at: number): number {
  const n = scanHashes(text, maxTokens, out, at);
  if (n < 0) {
    const ids = textIds(text, vocabSize, maxTokens);
    out.set(ids, at);
    return ids.length;
  }
  for (let i = at; i < at + n; i++) out[i] = bucket(out[i] >>> 0, vocabSize);
  return n;
}

/**
 * Same result as `textIds`, several times faster on ASCII text: one pass over the characters,
 * hashing words as they are scanned (no lower-casing copy, regex or substrings).
 */
export function textIdsFast(text: string, vocabSize: number, maxTokens: number): number[] {
  const ids = wordHashes(text, maxTokens);
  for (let i = 0; i < ids.length; i++) ids[i] = bucket(ids[i], vocabSize);
  return ids;
}

/**
 * Function words skipped when forming bigrams, so that a bigram joins the content words around
 * them: "the kitchen is north of the garden" gives kitchen→north, north→garden, and the question
 * "What is north of the garden?" shares north→garden with it but not with "the garden is north of
 * the kitchen" (garden→north, north→kitchen), which a bag of words cannot tell apart.
 */
const BIGRAM_SKIP = new Set(
  ("a an the is are was were be been am of to in on at by for from with into and or but not " +
    "what where who whom which whose why how did does do that this these those it its there then")
    .split(" ")
    .map(hashWord),
);

/** An ordered pair of word hashes → one hash (asymmetric: a→b ≠ b→a). */
function pairHash(a: number, b: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x01000193);
  h = Math.imul(h ^ b, 0x01000193);
  return (h ^ (h >>> 15)) >>> 0;
}

/**
 * Word ids as `textIdsFast` (the first `maxTokens` words), then the ids of the ordered bigrams of
 * consecutive content words among them (fastText-style hashed word n-grams, into the same buckets).
 */
export function textIdsWithBigrams(text: string, vocabSize: number, maxTokens: number): number[] {
  const hs = wordHashes(text, maxTokens);
  const out = new Array<number>(hs.length);
  let prev = -1;
  for (let i = 0; i < hs.length; i++) {
    out[i] = bucket(hs[i], vocabSize); // the word ids first; pairs are appended past them
    if (BIGRAM_SKIP.has(hs[i])) continue;
    if (prev >= 0) out.push(bucket(pairHash(prev, hs[i]), vocabSize));
    prev = hs[i];
  }
  return out;
}
