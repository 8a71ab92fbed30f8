/**
 * A training curriculum for BabiLong (`envs.curriculum`): early training samples are easier, and
 * they grow linearly into the configured task by update `updates`. Two knobs shrink a sample:
 *
 * - `num_sentences`: the haystack size at update 0 (grows to `envs.num_sentences`);
 * - `story_facts`: how many of the story's non-supporting facts are kept at update 0 (grows to all).
 *
 * Why: with the reference's reward (completion only, no per-fact reward) a sample pays nothing until
 * every supporting fact is in the state. On qa3 (3 facts among ≈ 21 story facts and ≈ 79 noise
 * sentences) random 6-step episodes almost never complete, so there is no signal to learn from.
 * Short stories in small haystacks complete often; the reward itself is unchanged.
 *
 * The question and its supporting facts (what the reward pays for) stay the same and keep their
 * order; only other story facts and noise are left out. A shortened story is a retrieval exercise,
 * not always a readable story: bAbI's support of qa3 can name a later pick-up than the one that
 * carried the object, so the kept facts need not explain the answer. Only the training split is
 * shaped; evaluation always sees the full task.
 */
import type { Sample } from "../types.ts";
import { chunkAt } from "../types.ts";
import type { Rng } from "../util/rng.ts";

export interface CurriculumConfig {
  /** The update at which samples reach the full task. */
  updates: number;
  /** Haystack size (facts + noise) at update 0. */
  num_sentences: number;
  /** Non-supporting story facts kept at update 0. */
  story_facts: number;
}

export interface CurriculumLevel {
  numSentences: number;
  /** Non-supporting story facts to keep; Infinity = all of them. */
  storyFacts: number;
}

/** Story facts by which every story is whole (the simulator's qa3 stories reach ≈ 100 facts). */
const STORY_FACTS_FULL = 100;

/** The level at `update`: linear from the start values to the full task, which it reaches at `c.updates`. */
export function curriculumLevel(c: CurriculumConfig, fullSentences: number, update: number): CurriculumLevel {
  const t = Math.min(1, Math.max(0, update / c.updates));
  if (t >= 1) return { numSentences: fullSentences, storyFacts: Infinity };
  const numSentences = Math.round(c.num_sentences + (Math.max(fullSentences, c.num_sentences) - c.num_sentences) * t);
  const storyFacts = Math.floor(c.story_facts + (STORY_FACTS_FULL - c.story_facts) * t);
  return { numSentences, storyFacts };
}

/**
 * The sample with at most `keep` of its non-supporting facts (chosen uniformly, order kept) and its
 * support indices mapped to the shorter list. Samples already that short are returned as they are.
 */
export function keepStoryFacts(sample: Sample, keep: number, rng: Rng): Sample {
  const n = sample.chunks.length;
  const support = new Set(sample.supportIdx);
  const others: number[] = [];
  for (let i = 0; i < n; i++) if (!support.has(i)) others.push(i);
  if (others.length <= keep) return sample;
  const kept = new Set<number>(support);
  for (const j of rng.sampleWithoutReplacement(others.length, keep)) kept.add(others[j]);
  const order = [...kept].sort((a, b) => a - b);
  const newIndex = new Map(order.map((old, i) => [old, i]));
  return {
    ...sample,
    chunks: order.map((i) => chunkAt(sample.chunks, i)),
    supportIdx: sample.supportIdx.map((i) => newIndex.get(i)!),
  };
}
