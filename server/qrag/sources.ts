/**
 * Builds the train and test sample sources and the episode settings a run config describes.
 * BabiLong is generated (bAbI simulator + public-domain noise); NIAH is generated (or read from
 * real RULER files); HotpotQA and MuSiQue come from files the user supplies.
 */
import path from "node:path";
import type { RunConfig } from "./config.ts";
import type { SampleSource } from "./types.ts";
import type { EpisodeConfig } from "./env/episode.ts";
import { babiSource } from "./data/babi/source.ts";
import { toBabiTask } from "./data/babi/vocab.ts";
import { babilongSource } from "./data/babilong.ts";
import { noisePoolFor } from "./data/noise/pool.ts";
import { corpusSpecFrom } from "./data/noise/corpus.ts";
import { niahSource } from "./data/niah/generate.ts";
import { rulerFileSource } from "./data/ruler-file.ts";
import { hotpotqaSource } from "./data/hotpotqa.ts";
import { musiqueSource } from "./data/musique.ts";

export type Split = "train" | "test";

/** Seeds of the two splits differ, so test samples are never training samples. */
function splitSeed(config: RunConfig, split: Split): number {
  return split === "train" ? config.seed : config.seed + 1_000_003;
}

/** The sample source of one split; `numSentences` overrides the haystack size (sweeps). */
export function buildSource(config: RunConfig, split: Split, numSentences?: number): SampleSource {
  const env = config.envs;
  const seed = splitSeed(config, split);
  switch (env.name) {
    case "babilong": {
      const n = numSentences ?? (split === "test" ? env.test_env.num_sentences ?? env.num_sentences : env.num_sentences);
      return babilongSource({
        facts: babiSource(toBabiTask(env.task), { seed, split }),
        numSentences: n,
        pool: noisePoolFor(corpusSpecFrom(env.noise)),
        seed,
        split,
      });
    }
    case "niah":
      if (env.path) return rulerFileSource(path.join(env.path, split === "train" ? "train.jsonl" : "test.jsonl"));
      return niahSource({ task: env.task, maxSeqLength: env.max_seq_length, seed, split });
    case "hotpotqa":
      return hotpotqaSource({ file: split === "train" ? env.train_path : env.eval_path, seed });
    case "musique":
      return musiqueSource({ file: split === "train" ? env.train_path : env.eval_path, seed });
  }
}

export function buildSources(config: RunConfig): { train: SampleSource; test: SampleSource } {
  return { train: buildSource(config, "train"), test: buildSource(config, "test") };
}

/** Episode settings of the train or the test env (feedback differs, docs/method.md §1.5–§1.6). */
export function episodeConfig(config: RunConfig, split: Split): EpisodeConfig {
  const env = config.envs;
  const fb = split === "train" ? env.feedback : env.test_env.feedback;
  return {
    maxSteps: env.max_steps,
    positions: env.positions_processor,
    stepSize: env.step_size,
    feedback: {
      neverTerminate: fb.never_terminate,
      penalizeExtraSteps: fb.penalize_extra_steps,
      completionReward: fb.completion_reward,
      perFactReward: fb.per_fact_reward,
    },
  };
}
