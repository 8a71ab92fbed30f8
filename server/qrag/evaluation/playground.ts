/**
 * The playground's input as the engine reads it (tfjs-free: the dashboard checks sizes with it
 * before any engine process is asked): a pasted document split into sentences as the datasets
 * split their text (data/text/sentences.ts), the gold facts located by their text, the GPT-2
 * token count; and a test sample of a run's own dataset, laid out for editing.
 */
import type { RunConfig } from "../config/config.ts";
import { buildSource } from "../data/sources.ts";
import { splitSentences } from "../data/text/sentences.ts";
import { countGpt2Tokens } from "../data/tokens.ts";
import { chunkAt } from "../types.ts";
import type { PlaygroundInput, PlaygroundSampleDto } from "../../../lib/contracts/playground.ts";

/**
 * Splits `document` into chunks. Gold texts are matched after the same split (a gold fact that
 * is one sentence marks every chunk equal to it), so editing around a fact keeps it gold.
 */
export function playgroundInput(o: { document: string; question: string; answer?: string; gold?: readonly string[]; threshold?: number }): PlaygroundInput {
  const chunks = splitSentences(o.document);
  const gold = new Set((o.gold ?? []).flatMap((g) => splitSentences(g)));
  const supportIdx = chunks.flatMap((c, i) => (gold.has(c) ? [i] : []));
  return {
    id: "playground",
    question: o.question.trim(),
    answer: (o.answer ?? "").trim(),
    chunks,
    supportIdx,
    tokens: countGpt2Tokens(o.document),
    threshold: o.threshold ?? 0.5,
  };
}

/**
 * Test sample `index` of the run's dataset, its chunks one per line; null when it has more than
 * `maxChunks` chunks (checked before any text is materialised: long haystacks are lazy views).
 */
export function playgroundSample(config: RunConfig, index: number, dataRoot?: string, maxChunks = Infinity): PlaygroundSampleDto | null {
  const s = buildSource(config, "test", undefined, dataRoot).sample(index);
  if (s.chunks.length > maxChunks) return null;
  const chunks = Array.from({ length: s.chunks.length }, (_, i) => chunkAt(s.chunks, i).replace(/\s*\n\s*/g, " "));
  return { sampleId: s.id, document: chunks.join("\n"), question: s.question, answer: s.answer, gold: s.supportIdx.map((i) => chunks[i]) };
}
