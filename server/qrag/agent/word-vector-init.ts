/**
 * Starts a fresh run's bag-of-words encoders from pretrained word vectors
 * (`algo.encoder.word_vectors`, model/word-vectors.ts has the how and why). Words are counted on
 * training samples only, so nothing of the test split shapes the start. Resumed runs never come
 * here: their weights are the checkpoint's.
 */
import { words } from "../model/tokenizer.ts";
import { applyWordVectors, readWordVectors, type WordTableReport } from "../model/word-vectors.ts";
import { wordVectorsFile } from "../model/word-vectors-path.ts";
import { engineSettings } from "../settings.ts";
import { InputError } from "../errors.ts";
import { chunkAt, type SampleSource } from "../types.ts";
import type { EncoderConfig } from "../model/encoder.ts";
import type { QNetworks } from "./networks.ts";
import type { Rng } from "../util/rng.ts";

/** Samples and chunks whose words are counted (the counts only weight words within a bucket). */
const COUNT_SAMPLES = 64;
const COUNT_CHUNKS = 20_000;

/** Word occurrences in the questions and chunks of the first training samples. */
export function countWords(source: SampleSource): Map<string, number> {
  const counts = new Map<string, number>();
  const add = (text: string) => {
    for (const w of words(text)) counts.set(w, (counts.get(w) ?? 0) + 1);
  };
  let chunks = 0;
  const n = Math.min(COUNT_SAMPLES, source.size);
  for (let i = 0; i < n && chunks < COUNT_CHUNKS; i++) {
    const s = source.sample(i);
    add(s.question);
    const m = Math.min(s.chunks.length, COUNT_CHUNKS - chunks);
    for (let j = 0; j < m; j++) add(chunkAt(s.chunks, j));
    chunks += m;
  }
  return counts;
}

export function initFromWordVectors(nets: QNetworks, enc: EncoderConfig, source: SampleSource, rng: Rng, dataRoot?: string): WordTableReport {
  if (enc.type !== "bow" || typeof enc.word_vectors !== "string") throw new InputError("algo.encoder.word_vectors: only the bow encoder takes word vectors");
  const { abs, shown, open } = wordVectorsFile(enc.word_vectors, dataRoot ?? engineSettings().dataRoot);
  const counts = countWords(source);
  const wv = readWordVectors(abs, shown, new Set(counts.keys()), open);
  const table = nets.state.variables[0];
  const values = new Float32Array(table.dataSync());
  const report = applyWordVectors(values, enc.vocab_size, enc.dim, enc.init_std, counts, wv, rng);
  nets.setStateTable(values);
  return report;
}
