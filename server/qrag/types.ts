/**
 * Core data types shared by every benchmark source, the environment and evaluation.
 * A Sample is one retrieval problem: the candidate chunks (= actions) and the indices
 * of the supporting chunks (ground truth for the reward and the metrics).
 */
export interface Sample {
  id: string;
  question: string;
  answer: string;
  /** Candidate chunks, in document order. May be a lazy view for very long haystacks. */
  chunks: ChunkList;
  /** 0-based indices into `chunks` of the supporting facts (unique, sorted ascending). */
  supportIdx: number[];
  /** Free-form provenance (task, length, source file…), copied into episode records. */
  meta?: Record<string, string | number>;
}

/**
 * Read-only indexable list of chunk texts. A plain `string[]` satisfies it; long haystacks
 * (400k sentences) implement it lazily over a shared noise pool so the text is not held twice.
 */
export interface ChunkList {
  readonly length: number;
  at(i: number): string | undefined;
}

/** Returns chunk i of a list, throwing if out of range (ChunkList.at may be undefined). */
export function chunkAt(list: ChunkList, i: number): string {
  const c = list.at(i);
  if (c === undefined) throw new RangeError(`chunk index ${i} out of range 0..${list.length - 1}`);
  return c;
}

/** Iterates chunk texts in order without materialising an array. */
export function* iterChunks(list: ChunkList, from = 0, to = list.length): Generator<string> {
  for (let i = from; i < to; i++) yield chunkAt(list, i);
}

/** A source of samples: deterministic by seed; `sample(i)` is the i-th sample of the split. */
export interface SampleSource {
  readonly name: string;
  /** Number of distinct samples, or Infinity for generators that produce fresh samples forever. */
  readonly size: number;
  sample(index: number): Sample;
}
