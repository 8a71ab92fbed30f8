/**
 * Regenerates the haystack of a stored episode from its run config, so a replay can show any
 * chunk's text without the record shipping (up to 400,000) chunks. Generated datasets make this
 * possible: a sample is a pure function of (config, split, index, haystack size), and its id names
 * split and index (bAbI `qa2-test-17`, BabiLong `qa2-test-17@n100`, NIAH `niah_single_1-test-3`).
 * File-backed datasets (HotpotQA, MuSiQue, real RULER files) are not regenerated: their files may
 * not be on this machine, and their ids do not locate a sample.
 */
import type { RunConfig } from "../config/config.ts";
import { buildSource } from "../data/sources.ts";
import { chunkAt } from "../types.ts";

/** A regenerated haystack: chunk texts by index (lazy for long BabiLong haystacks). */
export interface Haystack {
  sampleId: string;
  numChunks: number;
  chunk(i: number): string;
}

/** Why a haystack cannot be regenerated; the message is safe to show (it quotes no chunk text). */
export class HaystackUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HaystackUnavailable";
  }
}

const ID = /^[a-z0-9_]+-(train|test)-(\d{1,9})(?:@n(\d{1,7}))?$/i;

/**
 * The haystack of sample `sampleId` with `numChunks` chunks, as the engine generated it for the
 * episode. Throws HaystackUnavailable when the dataset is file-backed, the id does not locate a
 * sample, or the regenerated sample differs from the record (another engine version or config).
 */
export function regenerateHaystack(config: RunConfig, sampleId: string, numChunks: number, dataRoot?: string): Haystack {
  const env = config.envs;
  if (env.name !== "babilong" && !(env.name === "niah" && !env.path)) {
    throw new HaystackUnavailable(`chunk texts of ${env.name} episodes cannot be regenerated (the samples come from files)`);
  }
  const m = ID.exec(sampleId);
  if (!m) throw new HaystackUnavailable("the sample id does not name a split and index to regenerate from");
  const split = m[1].toLowerCase() as "train" | "test";
  const index = Number(m[2]);
  // BabiLong's haystack size is part of the id; NIAH fits its own to the token budget
  const size = env.name === "babilong" ? Number(m[3] ?? numChunks) : undefined;
  let sample;
  try {
    // a stored config's noise folder is read only from inside the data root (issue 10)
    sample = buildSource(config, split, size, dataRoot).sample(index);
  } catch (e) {
    throw new HaystackUnavailable(`the sample could not be regenerated: ${(e as Error).name}`);
  }
  if (sample.id !== sampleId || sample.chunks.length !== numChunks) {
    throw new HaystackUnavailable("the regenerated sample differs from the episode's (config or engine version changed)");
  }
  const chunks = sample.chunks;
  return { sampleId, numChunks, chunk: (i) => chunkAt(chunks, i) };
}
