/**
 * Okapi BM25 baseline over a ChunkList (k1 = 1.2, b = 0.75, words() tokenisation):
 *   score(q, d) = Σ_{t ∈ unique(q)} idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·|d|/avgdl))
 *   idf(t)      = ln(1 + (N − df + 0.5)/(df + 0.5))      (Lucene form: never negative)
 * The index is built in one streaming pass: texts are tokenised one chunk at a time and never
 * kept; postings end up as a term-major CSR of typed arrays (doc ids ascending per term), so
 * 400 000 chunks cost a few bytes per posting rather than millions of small JS objects.
 */
import { chunkAt, type ChunkList } from "../types.ts";
import { words } from "../model/tokenizer.ts";

interface Bm25Options {
  k1?: number;
  b?: number;
}

interface Bm25Hit {
  index: number;
  score: number;
}

/** Append-only typed-array buffer (doubling), so the build never holds a JS array per posting. */
class Growable<T extends Uint32Array | Uint16Array> {
  length = 0;
  constructor(
    public data: T,
    private readonly make: (n: number) => T,
  ) {}
  push(x: number): void {
    if (this.length === this.data.length) {
      const next = this.make(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = x;
  }
}

const TF_MAX = 0xffff; // term frequencies are stored as Uint16 (saturating; BM25 saturates anyway)

export class Bm25Index {
  readonly k1: number;
  readonly b: number;
  readonly numDocs: number;
  readonly avgDocLength: number;
  private readonly terms: Map<string, number>;
  private readonly termOffsets: Uint32Array; // [T+1] into docIds/tfs
  private readonly docIds: Uint32Array;
  private readonly tfs: Uint16Array;
  /** k1·(1 − b + b·|d|/avgdl) per doc, precomputed for queries. */
  private readonly norm: Float32Array;
  private scratch: Float64Array | null = null;

  private constructor(
    k1: number,
    b: number,
    numDocs: number,
    avgDocLength: number,
    terms: Map<string, number>,
    termOffsets: Uint32Array,
    docIds: Uint32Array,
    tfs: Uint16Array,
    norm: Float32Array,
  ) {
    this.k1 = k1;
    this.b = b;
    this.numDocs = numDocs;
    this.avgDocLength = avgDocLength;
    this.terms = terms;
    this.termOffsets = termOffsets;
    this.docIds = docIds;
    this.tfs = tfs;
    this.norm = norm;
  }

  static build(chunks: ChunkList, opts: Bm25Options = {}): Bm25Index {
    const k1 = opts.k1 ?? 1.2;
    const b = opts.b ?? 0.75;
    const n = chunks.length;
    const terms = new Map<string, number>();
    // Doc-major postings of the pass over the chunks: (term, tf) runs, doc d at docStart[d]..
    const postTerm = new Growable(new Uint32Array(1 << 16), (k) => new Uint32Array(k));
    const postTf = new Growable(new Uint16Array(1 << 16), (k) => new Uint16Array(k));
    const docStart = new Uint32Array(n + 1);
    const docLen = new Uint32Array(n);
    // Per-term "seen in the current doc" marker and slot, to count tf without a Map per doc.
    let lastDoc = new Int32Array(1 << 14).fill(-1);
    let slot = new Uint32Array(1 << 14);
    let totalLen = 0;
    for (let d = 0; d < n; d++) {
      docStart[d] = postTerm.length;
      const ws = words(chunkAt(chunks, d));
      docLen[d] = ws.length;
      totalLen += ws.length;
      for (const w of ws) {
        let t = terms.get(w);
        if (t === undefined) {
          t = terms.size;
          terms.set(w, t);
          if (t >= lastDoc.length) {
            const ld = new Int32Array(lastDoc.length * 2).fill(-1);
            ld.set(lastDoc);
            lastDoc = ld;
            const sl = new Uint32Array(slot.length * 2);
            sl.set(slot);
            slot = sl;
          }
        }
        if (lastDoc[t] !== d) {
          lastDoc[t] = d;
          slot[t] = postTerm.length;
          postTerm.push(t);
          postTf.push(1);
        } else if (postTf.data[slot[t]] < TF_MAX) {
          postTf.data[slot[t]]++;
        }
      }
    }
    docStart[n] = postTerm.length;
    const numTerms = terms.size;
    const numPostings = postTerm.length;

    // Doc-major → term-major (counting sort); visiting docs in order keeps doc ids ascending.
    const termOffsets = new Uint32Array(numTerms + 1);
    for (let p = 0; p < numPostings; p++) termOffsets[postTerm.data[p] + 1]++;
    for (let t = 0; t < numTerms; t++) termOffsets[t + 1] += termOffsets[t];
    const fill = termOffsets.slice(0, numTerms);
    const docIds = new Uint32Array(numPostings);
    const tfs = new Uint16Array(numPostings);
    for (let d = 0; d < n; d++) {
      for (let p = docStart[d]; p < docStart[d + 1]; p++) {
        const at = fill[postTerm.data[p]]++;
        docIds[at] = d;
        tfs[at] = postTf.data[p];
      }
    }

    const avg = n > 0 ? totalLen / n : 0;
    const norm = new Float32Array(n);
    for (let d = 0; d < n; d++) norm[d] = k1 * (1 - b + (avg > 0 ? (b * docLen[d]) / avg : 0));
    return new Bm25Index(k1, b, n, avg, terms, termOffsets, docIds, tfs, norm);
  }

  get numTerms(): number {
    return this.terms.size;
  }

  get numPostings(): number {
    return this.docIds.length;
  }

  /** Bytes held in the typed arrays (the term dictionary's strings are not counted). */
  get typedArrayBytes(): number {
    return this.termOffsets.byteLength + this.docIds.byteLength + this.tfs.byteLength + this.norm.byteLength;
  }

  /** Document frequency of a (lower-case) word. */
  df(word: string): number {
    const t = this.terms.get(word);
    return t === undefined ? 0 : this.termOffsets[t + 1] - this.termOffsets[t];
  }

  idf(word: string): number {
    const df = this.df(word);
    return Math.log(1 + (this.numDocs - df + 0.5) / (df + 0.5));
  }

  /** BM25 score of one chunk (binary search in each query term's postings). */
  score(query: string, index: number): number {
    let s = 0;
    for (const t of this.queryTerms(query)) {
      let lo = this.termOffsets[t];
      let hi = this.termOffsets[t + 1];
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (this.docIds[mid] < index) lo = mid + 1;
        else hi = mid;
      }
      if (lo < this.termOffsets[t + 1] && this.docIds[lo] === index) {
        const tf = this.tfs[lo];
        s += (this.termIdf(t) * tf * (this.k1 + 1)) / (tf + this.norm[index]);
      }
    }
    return s;
  }

  /**
   * The k best chunks, best first (ties: lower index). Always returns min(k, #eligible) hits:
   * when fewer chunks share a word with the query, the rest are score-0 chunks in index order.
   * `available` (1 = eligible) excludes chunks, e.g. those already retrieved.
   */
  topK(query: string, k: number, available?: Uint8Array): Bm25Hit[] {
    const scores = (this.scratch ??= new Float64Array(this.numDocs));
    const touched: number[] = [];
    for (const t of this.queryTerms(query)) {
      const idf = this.termIdf(t);
      for (let p = this.termOffsets[t]; p < this.termOffsets[t + 1]; p++) {
        const d = this.docIds[p];
        if (available && !available[d]) continue;
        const tf = this.tfs[p];
        if (scores[d] === 0) touched.push(d);
        scores[d] += (idf * tf * (this.k1 + 1)) / (tf + this.norm[d]);
      }
    }
    const better = (a: number, c: number): boolean => scores[a] > scores[c] || (scores[a] === scores[c] && a < c);
    let best: number[];
    if (k >= touched.length / 8) {
      best = touched.sort((a, c) => scores[c] - scores[a] || a - c).slice(0, k);
    } else {
      best = [];
      for (const d of touched) {
        if (best.length === k && !better(d, best[k - 1])) continue;
        let p = best.length === k ? k - 1 : best.length;
        if (best.length < k) best.push(d);
        while (p > 0 && better(d, best[p - 1])) {
          best[p] = best[p - 1];
          p--;
        }
        best[p] = d;
      }
    }
    const hits = best.map((index) => ({ index, score: scores[index] }));
    for (let d = 0; hits.length < k && d < this.numDocs; d++) {
      if (scores[d] === 0 && (!available || available[d])) hits.push({ index: d, score: 0 });
    }
    for (const d of touched) scores[d] = 0;
    return hits;
  }

  private termIdf(t: number): number {
    const df = this.termOffsets[t + 1] - this.termOffsets[t];
    return Math.log(1 + (this.numDocs - df + 0.5) / (df + 0.5));
  }

  /** Distinct indexed term ids of a query (unknown words contribute nothing). */
  private queryTerms(query: string): number[] {
    const out = new Set<number>();
    for (const w of words(query)) {
      const t = this.terms.get(w);
      if (t !== undefined) out.add(t);
    }
    return [...out];
  }
}
