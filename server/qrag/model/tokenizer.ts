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

/** Word id in [FIRST_WORD_ID, vocabSize). */
export function wordId(w: string, vocabSize: number): number {
  return FIRST_WORD_ID + (hashWord(w) % (vocabSize - FIRST_WORD_ID));
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
 * Same result as `textIds`, several times faster on ASCII text: one pass over the characters,
 * hashing words as they are scanned (no lower-casing copy, regex or substrings). Text with any
 * non-ASCII character takes the `textIds` path, since `toLowerCase` can map some of those to
 * ASCII letters.
 */
export function textIdsFast(text: string, vocabSize: number, maxTokens: number): number[] {
  const out: number[] = [];
  if (maxTokens <= 0) return out;
  const mod = vocabSize - FIRST_WORD_ID;
  const n = text.length;
  let h = 0;
  let inWord = false;
  for (let i = 0; i < n; i++) {
    let c = text.charCodeAt(i);
    if (c >= 128) return textIds(text, vocabSize, maxTokens);
    if (c >= 65 && c <= 90) c += 32;
    if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) {
      if (!inWord) {
        h = 0x811c9dc5;
        inWord = true;
      }
      h ^= c;
      h = Math.imul(h, 0x01000193);
    } else if (inWord) {
      out.push(FIRST_WORD_ID + ((h >>> 0) % mod));
      inWord = false;
      if (out.length >= maxTokens) return out;
    }
  }
  if (inWord) out.push(FIRST_WORD_ID + ((h >>> 0) % mod));
  return out;
}
