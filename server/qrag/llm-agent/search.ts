/**
 * The agent's search tool over one sample's haystack: given the model's query and what was
 * retrieved so far, the next `k` chunk ids, never one already retrieved (R3-RAG skips retrieved
 * ids too). `bm25` is here: Okapi BM25 over the sample's chunks (../baselines/bm25.ts); `dense`
 * and `qrag` (a trained checkpoint's encoders) are in ./encoder-search.ts, which loads tfjs and is
 * imported lazily.
 */
import { Bm25Index } from "../baselines/bm25.ts";
import type { Sample } from "../types.ts";

export interface SampleSearch {
  /** The next `k` chunk ids for `query`, best first, none of `retrieved` (retrieval order). */
  search(query: string, retrieved: readonly number[], k: number): Promise<number[]>;
  dispose(): void;
}

export interface AgentRetriever {
  /** `bm25`, `dense:RUN`, `qrag:RUN` (RUN: the checkpoint as given). */
  readonly name: string;
  forSample(sample: Sample): Promise<SampleSearch>;
  close(): void;
}

export function bm25Retriever(): AgentRetriever {
  return {
    name: "bm25",
    async forSample(sample) {
      const index = Bm25Index.build(sample.chunks);
      return {
        async search(query, retrieved, k) {
          const skip = new Set(retrieved);
          return index.topK(query, k + skip.size).map((h) => h.index).filter((i) => !skip.has(i)).slice(0, k);
        },
        dispose() {},
      };
    },
    close() {},
  };
}

