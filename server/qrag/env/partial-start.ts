/**
 * Partial starts (ours, `envs.partial_starts`; off by default): with probability `prob` a training
 * episode begins with a random proper subset of its supporting facts already retrieved (at least
 * one when there are two or more) and, with probability `extraProb`, one random other chunk.
 *
 * Why: Q of a pick given the *other* picks (leave-one-out pruning, agent/leave-one-out.ts) is only
 * learned for states the policy visits. A policy with a fixed first-pick habit (qa2: the pickup
 * before the drop) never visits e.g. {the holder's move} without the pickup, so Q there is a guess
 * and pruning drops gold facts. The pre-picks are not transitions: no reward or Q is learned for them.
 */
import type { RetrievalEpisode } from "./episode.ts";
import type { Rng } from "../util/rng.ts";
import { chunkAt } from "../types.ts";

export interface PartialStartConfig {
  /** Chance that an episode starts with pre-picks (0…1). */
  prob: number;
  /** Chance of one extra non-supporting pre-pick in such an episode (0…1). */
  extraProb: number;
  /**
   * "any": the extra chunk is uniform over the haystack; "related": it shares a word with a
   * supporting fact when one is found among a few random tries (the distractors a policy confuses:
   * the same person's other events, another object's drop), else uniform.
   */
  extraFrom?: "any" | "related";
}

/** Random tries for a related extra chunk: bounded, so a 400k-chunk haystack is never scanned. */
const RELATED_TRIES = 64;
/** Words too common to make two chunks related. */
const FUNCTION_WORDS = new Set(["the", "there", "and", "was", "were", "is", "are", "to", "of", "in", "on", "at", "a", "an", "it", "its", "that", "this", "with", "for", "from", "back", "into"]);

function words(text: string): string[] {
  return (text.toLowerCase().match(/[a-z]{3,}/g) ?? []).filter((w) => !FUNCTION_WORDS.has(w));
}

/** Pre-picks for `ep` (indices in the order they are taken); never all support, never max_steps. */
export function partialStartPicks(ep: RetrievalEpisode, rng: Rng, cfg: PartialStartConfig): number[] {
  const support = ep.sample.supportIdx;
  // with no support the first pick would complete the episode
  if (support.length === 0 || !(cfg.prob > 0) || !rng.bool(cfg.prob)) return [];
  const n = ep.numChunks;
  const picks = support.length >= 2 ? rng.shuffle([...support]).slice(0, rng.range(1, support.length - 1)) : [];
  // an extra chunk only when one exists outside the support (tiny haystacks may be all support)
  if (n > support.length && cfg.extraProb > 0 && rng.bool(cfg.extraProb)) {
    const gold = new Set(support);
    const other = (): number => {
      let j = rng.int(n);
      while (gold.has(j)) j = rng.int(n);
      return j;
    };
    let j = other();
    if (cfg.extraFrom === "related") {
      const supportWords = new Set(support.flatMap((i) => words(chunkAt(ep.sample.chunks, i))));
      for (let t = 1; t < RELATED_TRIES && !words(chunkAt(ep.sample.chunks, j)).some((w) => supportWords.has(w)); t++) j = other();
    }
    picks.push(j);
  }
  // the agent must still have a step to take
  return rng.shuffle(picks).slice(0, Math.max(0, ep.maxSteps - 1));
}

/** Takes the pre-picks on a fresh episode; returns how many were taken. */
export function applyPartialStart(ep: RetrievalEpisode, rng: Rng, cfg: PartialStartConfig | undefined): number {
  if (!cfg) return 0;
  const picks = partialStartPicks(ep, rng, cfg);
  for (const i of picks) ep.step(i);
  return picks.length;
}
