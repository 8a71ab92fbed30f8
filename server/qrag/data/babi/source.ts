/**
 * bAbI as a SampleSource: an endless, seeded stream of generated questions. Sample i comes from
 * story floor(i / qPerStory), generated from its own forked rng, so any sample can be produced
 * directly (random access) and is identical across runs and machines.
 */
import type { Sample, SampleSource } from "../../types.ts";
import { Rng } from "../../util/rng.ts";
import { generateStory, questionsPerStory } from "./generate.ts";
import { storyQuestions } from "./questions.ts";
import type { BabiQA } from "./types.ts";
import type { BabiTask } from "./vocab.ts";

interface BabiSourceOptions {
  seed: number;
  split: "train" | "test";
}

export function babiSource(task: BabiTask, opts: BabiSourceOptions): SampleSource {
  const root = new Rng(opts.seed);
  const qPerStory = questionsPerStory(task);
  // Consecutive indices share a story; keep the last one so a sweep generates each story once.
  let cached: { story: number; qas: BabiQA[] } | undefined;
  return {
    name: `babi-${task}-${opts.split}`,
    size: Infinity,
    sample(i: number): Sample {
      if (!Number.isSafeInteger(i) || i < 0) throw new RangeError(`bAbI sample index must be a non-negative integer, got ${i}`);
      const s = Math.floor(i / qPerStory);
      if (cached?.story !== s) {
        cached = { story: s, qas: storyQuestions(generateStory(task, root.fork(`${opts.split}:${s}`))) };
      }
      const qa = cached.qas[i % qPerStory];
      if (!qa) throw new Error(`bAbI ${task} story ${s} has ${cached.qas.length} questions, expected ${qPerStory}`);
      return {
        id: `${task}-${opts.split}-${i}`,
        question: qa.question,
        answer: qa.answer,
        chunks: qa.facts,
        supportIdx: qa.supportIdx,
        meta: { task },
      };
    },
  };
}
