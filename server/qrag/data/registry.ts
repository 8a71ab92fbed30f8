/**
 * The dataset registry: for every benchmark the engine trains on, its `envs` config schema (the
 * run-config schema's envs union is built from these), a short task label, and how to build a
 * split's sample source. Adding a dataset takes two places: its loader in data/ (a SampleSource)
 * and an entry here. BabiLong is generated (bAbI simulator + public-domain noise); NIAH is
 * generated (or read from real RULER files); HotpotQA and MuSiQue come from files the user supplies.
 */
import path from "node:path";
import { z } from "zod";
import { int, prob } from "../config/bounds.ts";
import type { SampleSource } from "../types.ts";
import { engineSettings } from "../settings.ts";
import { dataPathOrThrow, resolveDataPath, type DataPathKind } from "../data-root.ts";
import { babiSource } from "./babi/source.ts";
import { babiFileSource } from "./babi/file-source.ts";
import { BABI_TASK_NAMES, toBabiTask } from "./babi/vocab.ts";
import { babilongSource } from "./babilong.ts";
import { curriculumLevel } from "./curriculum.ts";
import { noisePoolFor } from "./noise/pool.ts";
import { corpusSpecFrom, type CorpusSpec } from "./noise/corpus.ts";
import { NIAH_TASKS, niahSource } from "./niah/generate.ts";
import { rulerFileSource } from "./ruler-file.ts";
import { hotpotqaSource } from "./hotpotqa.ts";
import { musiqueSource } from "./musique.ts";

export type Split = "train" | "test";

const rootOf = (a: { dataRoot?: string }): string => a.dataRoot ?? engineSettings().dataRoot;

/** A haystack is at most 400,000 chunks (≈ 10M tokens). */
export const MAX_CHUNKS = 400_000;

const feedbackSchema = z.strictObject({
  type: z.literal("gt").default("gt"),
  /** false = the episode stops when all support chunks are found (a ground-truth oracle stop). */
  never_terminate: z.boolean().default(false).describe("off = stop at the ground-truth oracle"),
  penalize_extra_steps: z.boolean().default(true),
  /**
   * Ours: with penalize_extra_steps the completion reward is scaled by floor + (1 − floor)·|sf|/|pred|;
   * the reference's floor is 0.5. A lower floor makes a detour (an extra pick before completion)
   * cost more, so the Q gap between the right chunk and a detour grows.
   */
  extra_steps_floor: prob.default(0.5).describe("reward floor of penalize_extra_steps (the reference: 0.5)"),
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
  /** Ours (env/partial-start.ts): training episodes that begin with part of the support retrieved. */
  partial_starts: z
    .strictObject({
      prob: prob.describe("chance that a training episode starts with a random proper subset of its support retrieved"),
      extra_prob: prob.default(0).describe("chance of one extra non-supporting pre-pick in such an episode"),
      // optional, not defaulted: a default would make the form send the section even when left empty
      extra_from: z.enum(["any", "related"]).optional().describe('"related": the extra pre-pick shares a word with a supporting fact when a few random tries find one (default "any": uniform)'),
    })
    .optional()
    .describe("training episodes that start with part of the support retrieved (teaches Q given other picks)"),
};

interface SourceArgs {
  split: Split;
  /** Differs between splits, so test samples are never training samples. */
  seed: number;
  /** Overrides the haystack size (sweeps). */
  numSentences?: number;
  /** Where the env's files and folders are looked up (default: the engine's dataRoot, settings.ts). */
  dataRoot?: string;
  /** Optimizer updates so far, for training curricula (train split only). */
  progress?: () => number;
}

/** An env key that names a file or folder under the data root; `keyword` values name no path ("sotu"). */
interface PathField {
  key: string;
  kind: DataPathKind;
  keyword?: string;
}

interface Dataset<S extends z.ZodObject> {
  schema: S;
  /** The short task name used in labels and file names (qa2, niah_multivalue, hotpotqa…). */
  label(env: z.output<S>): string;
  source(env: z.output<S>, a: SourceArgs): SampleSource;
  /** Its keys that name files or folders (resolved inside the data root; data-root.ts). */
  paths?: readonly PathField[];
}
const dataset = <S extends z.ZodObject>(d: Dataset<S>) => d;

/** A noise folder inside the data root; its books are checked one by one when read (corpus.ts). */
function noiseFolder(value: string, root: string): CorpusSpec {
  const d = dataPathOrThrow(root, "envs.noise", value, "dir");
  return { kind: "dir", path: d.abs, shown: d.rel, root };
}

const babilong = dataset({
  schema: z.strictObject({
    name: z.literal("babilong"),
    task: z
      .string()
      .regex(/^qa[1-5](_[a-z-]+)?$/, "expected qa1..qa5 (or the reference name, e.g. qa2_two-supporting-facts)")
      .describe("qa1..qa5")
      .meta({ examples: Object.values(BABI_TASK_NAMES) }), // the launch form's choices: the names configs resolve to
    /** Total chunks (facts + noise) per training sample; a list is sampled per sample. */
    num_sentences: z.union([int(1, MAX_CHUNKS), z.array(int(1, MAX_CHUNKS)).min(1).max(64)]).describe("total chunks per sample; a list is sampled per sample"),
    /** "sotu" (public-domain State of the Union prose from npm) or a folder of .txt books. */
    noise: z.string().min(1).max(1024).default("sotu").describe('"sotu" or a folder of .txt books in the data root'),
    /** Optional folder with the real bAbI v1.2 files (qaN_*_{train,test}.txt); the simulator when absent. */
    babi_dir: z.string().min(1).max(1024).optional().describe("a folder in the data root with the real qaN_*_{train,test}.txt files (simulated when empty)"),
    /** Easier training samples early on (data/curriculum.ts); evaluation always sees the full task. */
    curriculum: z
      .strictObject({
        updates: int(1, 10_000_000).describe("update at which training samples reach the full task"),
        num_sentences: int(1, MAX_CHUNKS).describe("haystack size at update 0"),
        story_facts: int(0, 1000).default(0).describe("non-supporting story facts kept at update 0"),
      })
      .optional()
      .describe("grow training samples from short stories in small haystacks to the full task"),
    ...envCommon,
  }),
  label: (env) => env.task.slice(0, 3),
  source: (env, a) => {
    const { split, seed, numSentences, progress } = a;
    const task = toBabiTask(env.task);
    const c = env.curriculum;
    // the curriculum's end size is the training size (a list: its largest value)
    const full = Array.isArray(env.num_sentences) ? Math.max(...env.num_sentences) : env.num_sentences;
    const level = c && split === "train" && progress && numSentences === undefined ? () => curriculumLevel(c, full, progress()) : undefined;
    return babilongSource({
      facts: env.babi_dir ? babiFileSource({ root: rootOf(a), dir: env.babi_dir, task, split }) : babiSource(task, { seed, split }),
      numSentences: numSentences ?? (split === "test" ? (env.test_env.num_sentences ?? env.num_sentences) : env.num_sentences),
      pool: noisePoolFor(env.noise === "sotu" ? corpusSpecFrom("sotu") : noiseFolder(env.noise, rootOf(a))),
      seed,
      split,
      level,
    });
  },
  paths: [
    { key: "noise", kind: "dir", keyword: "sotu" },
    { key: "babi_dir", kind: "dir" },
  ],
});

/** Bounds of envs.max_seq_length (GPT-2 tokens), shared with tools that take a length flag. */
export const MAX_SEQ_LENGTH_BOUNDS = [256, 16_000_000] as const;

const niah = dataset({
  schema: z.strictObject({
    name: z.literal("niah"),
    task: z.enum(NIAH_TASKS).describe("a RULER task"),
    /** GPT-2 token budget of a generated sample (RULER's max_seq_length). */
    max_seq_length: int(...MAX_SEQ_LENGTH_BOUNDS).default(4096).describe("GPT-2 token budget of a generated sample"),
    /** Optional folder with real RULER files (train.jsonl, <split>.jsonl); generated when absent. */
    path: z.string().min(1).max(1024).optional().describe("a folder in the data root with train.jsonl and test.jsonl (generated when empty)"),
    ...envCommon,
  }),
  label: (env) => env.task,
  source: (env, a) => {
    if (!env.path) return niahSource({ task: env.task, maxSeqLength: env.max_seq_length, seed: a.seed, split: a.split });
    const dir = dataPathOrThrow(rootOf(a), "envs.path", env.path, "dir");
    // the file itself is resolved too: it may be a link out of the root
    const f = dataPathOrThrow(rootOf(a), "envs.path", path.posix.join(dir.rel, a.split === "train" ? "train.jsonl" : "test.jsonl"), "file");
    return rulerFileSource({ file: f.abs, shown: f.rel, root: rootOf(a) });
  },
  paths: [{ key: "path", kind: "dir" }],
});

/** Training file and evaluation file, supplied by the user (not downloadable here). */
const fileEnv = {
  train_path: z.string().min(1).max(1024).describe("a file in the data root"),
  eval_path: z.string().min(1).max(1024).describe("a file in the data root"),
  ...envCommon,
};
const filePaths: readonly PathField[] = [{ key: "train_path", kind: "file" }, { key: "eval_path", kind: "file" }];

/** The split's file, resolved inside the data root: the real path to open and the name errors show. */
function qaFile(env: { train_path: string; eval_path: string }, a: SourceArgs): { file: string; shown: string; root: string } {
  const key = a.split === "train" ? "train_path" : "eval_path";
  const f = dataPathOrThrow(rootOf(a), `envs.${key}`, env[key], "file");
  return { file: f.abs, shown: f.rel, root: rootOf(a) };
}

const hotpotqa = dataset({
  schema: z.strictObject({ name: z.literal("hotpotqa"), ...fileEnv }),
  label: () => "hotpotqa",
  source: (env, a) => hotpotqaSource({ ...qaFile(env, a), seed: a.seed }),
  paths: filePaths,
});

const musique = dataset({
  schema: z.strictObject({ name: z.literal("musique"), ...fileEnv }),
  label: () => "musique",
  source: (env, a) => musiqueSource({ ...qaFile(env, a), seed: a.seed }),
  paths: filePaths,
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

/**
 * Checks every path `env` names against the data root: `env` with those paths made relative to the
 * root (what is stored, so workers with their own root find the same files), or one issue per field
 * (`envs.train_path: must be inside the data root /srv/qrag/data`).
 */
export function checkEnvPaths(env: EnvConfig, root: string, opts: { mustExist?: boolean } = {}): { env: EnvConfig; issues: { path: string; message: string }[] } {
  const out = { ...env } as Record<string, unknown>;
  const issues: { path: string; message: string }[] = [];
  for (const f of datasetOf(env).paths ?? []) {
    const value = out[f.key];
    if (typeof value !== "string" || value === f.keyword) continue;
    const r = resolveDataPath(root, value, { kind: f.kind, mustExist: opts.mustExist });
    if (r.ok) out[f.key] = r.rel;
    else issues.push({ path: `envs.${f.key}`, message: r.message });
  }
  return { env: out as EnvConfig, issues };
}
