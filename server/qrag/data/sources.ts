/**
 * Builds the train and test sample sources (through the dataset registry, datasets.ts) and the
 * episode settings a run config describes.
 */
import type { RunConfig } from "../config/config.ts";
import type { SampleSource } from "../types.ts";
import type { EpisodeConfig } from "../env/episode.ts";
import { datasetSource, type Split } from "./registry.ts";

export type { Split };

/** Seeds of the two splits differ, so test samples are never training samples. */
function splitSeed(config: RunConfig, split: Split): number {
  return split === "train" ? config.seed : config.seed + 1_000_003;
}

/**
 * The sample source of one split; `numSentences` overrides the haystack size (sweeps). Files and
 * folders the config names are read only from inside `dataRoot` (default: QRAG_DATA_ROOT).
 */
export function buildSource(config: RunConfig, split: Split, numSentences?: number, dataRoot?: string): SampleSource {
  return datasetSource(config.envs, { split, seed: splitSeed(config, split), numSentences, dataRoot });
}

/** Seed offset of the validation split (train generator, a seed neither the train nor the test split uses). */
export const VALIDATION_SEED_OFFSET = 2_000_003;

/**
 * A validation split for choosing evaluation settings (stopping-rule calibration): samples from the
 * TRAIN generator under another seed, so nothing is fitted to the test split. With the simulated
 * bAbI stories these are fresh stories; with real bAbI files (`babi_dir`) they are the train file's
 * questions hidden in fresh noise. `numSentences` defaults to the training haystack size.
 */
export function validationSource(config: RunConfig, numSentences?: number, dataRoot?: string): SampleSource {
  return datasetSource(config.envs, { split: "train", seed: config.seed + VALIDATION_SEED_OFFSET, numSentences, dataRoot });
}

/** `progress` (updates so far) drives a training curriculum when the env has one. */
export function buildSources(config: RunConfig, dataRoot?: string, progress?: () => number): { train: SampleSource; test: SampleSource } {
  return {
    train: datasetSource(config.envs, { split: "train", seed: splitSeed(config, "train"), dataRoot, progress }),
    test: buildSource(config, "test", undefined, dataRoot),
  };
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
      extraStepsFloor: fb.extra_steps_floor,
      completionReward: fb.completion_reward,
      perFactReward: fb.per_fact_reward,
    },
  };
}
