/**
 * The reference benchmark workload of docs/workload.md as a SampleSource: documents of N
 * chunks of 24 random "words" from a vocabulary of 8189, two supporting chunks, and a 12-word
 * question taking 6 words from each. Each word is a distinct token, so our packing gives the
 * workload's shapes exactly: actions [CLS] c1..c24 [SEP] padded to 32, states 14 + 25k tokens.
 */
import { chunkAt, type Sample, type SampleSource } from "../types.ts";
import { Rng } from "../util/rng.ts";

const CONTENT_WORDS = 8192 - 3;
const CHUNK_WORDS = 24;

function word(id: number): string {
  return `w${id}`;
}

/** Chunk text for (document seed, chunk index): generated on demand, so 400k chunks cost no text memory. */
class WorkloadChunks {
  constructor(
    readonly length: number,
    private readonly seed: number,
  ) {}

  at(i: number): string | undefined {
    if (i < 0 || i >= this.length) return undefined;
    // Math.imul keeps the mix in 32-bit integers: a float product would exceed 2^53 and round
    // neighbouring i to the same seed (identical chunks that deduplication then skips).
    const r = new Rng((Math.imul(this.seed, 0x9e3779b1) + i) >>> 0);
    const ws = new Array<string>(CHUNK_WORDS);
    for (let k = 0; k < CHUNK_WORDS; k++) ws[k] = word(r.int(CONTENT_WORDS));
    return ws.join(" ");
  }
}

export function workloadSource(numChunks: number, seed = 0): SampleSource {
  const root = new Rng(seed);
  return {
    name: `workload-n${numChunks}`,
    size: Infinity,
    sample(i: number): Sample {
      const rng = root.fork(i);
      const chunks = new WorkloadChunks(numChunks, rng.nextU32());
      const support = rng.sampleWithoutReplacement(numChunks, 2).sort((a, b) => a - b);
      const qWords: string[] = [];
      for (const s of support) {
        const ws = chunks.at(s)!.split(" ");
        for (const p of rng.sampleWithoutReplacement(CHUNK_WORDS, 6)) qWords.push(ws[p]);
      }
      rng.shuffle(qWords);
      return { id: `workload-${i}`, question: qWords.join(" "), answer: "", chunks, supportIdx: support };
    },
  };
}

/**
 * The sample with its chunk texts generated up front (an array of strings, as a loaded document
 * holds them). The lazy `WorkloadChunks` draws each text from an Rng on every read, which is the
 * bench's data source and not the engine: timed encodes and episodes read materialized samples.
 */
export function materialized(sample: Sample): Sample {
  return { ...sample, chunks: Array.from({ length: sample.chunks.length }, (_, i) => chunkAt(sample.chunks, i)) };
}

/**
 * The source with each sample materialized when drawn, as a dataset holds its documents: the timed
 * training iterations read each chunk several times (candidates, states, texts), and the lazy
 * chunks drew every read from an Rng again, 8 of the host's 54 ms an iteration on lavapipe.
 */
export function materializedSource(src: SampleSource): SampleSource {
  return { ...src, sample: (i) => materialized(src.sample(i)) };
}
