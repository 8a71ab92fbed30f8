/**
 * The events the engine emits (`train()`, `evaluate()`, `sweep()`), as zod schemas. The engine
 * imports its event types from here (server/qrag/events.ts re-exports them), the worker sends them
 * in numbered batches, the server validates them with these schemas before deriving rows, and the
 * browser merges them into charts. Every event is plain JSON, so it crosses sockets unchanged.
 */
import { z } from "zod";
import { METRIC_KEYS, type MetricKey } from "./metrics.ts";
import { READER_FAILURES, retrievalScoresSchema } from "./scores.ts";
import { agentSampleSchema, agentSummarySchema } from "./llm-agent.ts";

export { READER_FAILURES, retrievalScoresSchema, type RetrievalScores } from "./scores.ts";

const int = z.number().int();
const finite = z.number().refine(Number.isFinite, "must be a finite number");

/** A metric key of the registry (metrics.ts). */
export const metricKeySchema = z.enum(METRIC_KEYS as readonly [MetricKey, ...MetricKey[]]);

export const stepCandidateSchema = z.object({ index: int, q: z.number(), gold: z.boolean() });
export type StepCandidate = z.infer<typeof stepCandidateSchema>;

/** One retrieval step of an episode (a superset of the reference's eval_seed*.jsonl per-step data). */
export const episodeStepSchema = z.object({
  index: int,
  text: z.string(),
  /** Relative position value of the chosen chunk at selection time. */
  position: z.number(),
  q: z.number(),
  q1: z.number(),
  q2: z.number(),
  gold: z.boolean(),
  reward: z.number(),
  topk: z.array(stepCandidateSchema),
  /**
   * Soft value V(s) = v1 + v2 of the state the chunk was chosen from, as the learner's λ-return
   * bootstraps it (server/qrag/agent/soft-value.ts: per head α-logsumexp over the top-k), on the
   * same scale as `q` and the top-k Q-values; and the temperature α at evaluation time. Optional:
   * records written before they were added still parse.
   */
  v: z.number().optional(),
  alpha: z.number().optional(),
});
export type EpisodeStep = z.infer<typeof episodeStepSchema>;

/** The LLM reader on one episode's kept chunks (`--reader` on sweep and eval-official). */
export const readerRecordSchema = z.object({
  /** Provider and model (`gguf:FILE`, `openai:MODEL@HOST`), never a key. */
  model: z.string(),
  /** The system and user messages as sent. */
  prompt: z.string(),
  answer: z.string(),
  /** The benchmark's score of the answer, 0..1 (0 for a failed call). */
  correct: z.number(),
  /** Open QA only: SQuAD token F1. */
  f1: z.number().optional(),
  tokens: z.object({ prompt: int, completion: int }),
  /** Wall time of the call, retries and their waits included (0 from the cache). */
  ms: z.number(),
  retries: int,
  cached: z.boolean().optional(),
  failure: z.object({ kind: z.enum(READER_FAILURES), message: z.string() }).optional(),
});
export type ReaderRecord = z.infer<typeof readerRecordSchema>;

/** The reader over one length's episodes: answer accuracy with its 95 % Wilson interval. */
export const readerSummarySchema = z.object({
  model: z.string(),
  n: int,
  /** Sum of the per-sample scores (RULER's string_match_all is a share, the others 0/1). */
  correct: z.number(),
  accuracy: z.number(),
  ci: z.object({ low: z.number(), high: z.number() }).nullable(),
  f1: z.number().optional(),
  /** Failed calls, scored 0 and counted in n; per kind. */
  failures: int,
  failureKinds: z.partialRecord(z.enum(READER_FAILURES), int),
  /** Means per sample, and the mean wall time of the calls that reached the model (cache hits excluded). */
  promptTokens: z.number(),
  completionTokens: z.number(),
  msPerAnswer: z.number(),
  retries: int,
});
export type ReaderSummary = z.infer<typeof readerSummarySchema>;

export const episodeRecordSchema = z.object({
  id: z.string(),
  question: z.string(),
  answer: z.string(),
  /** Reference field names kept for compatibility with eval_seed*.jsonl consumers. */
  sf_idx: z.array(int),
  pred_idx: z.array(int),
  q_values: z.array(z.number()),
  sf_texts: z.array(z.string()),
  pred_texts: z.array(z.string()),
  return: z.number(),
  num_chunks: int,
  /** Measured or estimated GPT-2 tokens of the whole context. */
  text_len: z.number().optional(),
  /** true when the episode stopped at the ground-truth completion oracle. */
  oracle_stop: z.boolean(),
  /** Metrics of all picks, and after the Q-threshold stopping filter. */
  metrics: retrievalScoresSchema,
  filtered: retrievalScoresSchema.extend({ threshold: z.number(), kept: int }),
  steps: z.array(episodeStepSchema),
  /**
   * Leave-one-out Q (server/qrag/agent/leave-one-out.ts): loo[k−1][j] = Q of pick j given the
   * question and the other picks of the first k. Optional: only evaluations that run to max_steps
   * record it, for the prune stopping rule.
   */
  loo: z.array(z.array(z.number())).optional(),
  reader: readerRecordSchema.optional(),
  /**
   * Every chunk's text, for episodes whose haystack cannot be regenerated from the run's config:
   * playground episodes (lib/contracts/playground.ts) over a pasted document. Untrusted text.
   */
  chunks: z.array(z.string()).optional(),
});
export type EpisodeRecord = z.infer<typeof episodeRecordSchema>;

export const runMetaSchema = z.object({
  name: z.string(),
  backend: z.string().max(100),
  device: z.string().max(500),
  engineVersion: z.string(),
  config: z.unknown(),
  startedAt: z.string(),
  resumedFrom: z.string().optional(),
});
export type RunMeta = z.infer<typeof runMetaSchema>;

/** One context length of a sweep (`qrag sweep`): Q-RAG beside the single-step baselines. */
export const sweepPointSchema = z.object({
  numChunks: int,
  /** Reference label (1K, 4K, …) and the GPT-2 token count measured on our text. */
  label: z.string(),
  tokens: z.number(),
  samples: int,
  oracle_stop: z.boolean(),
  threshold: z.number(),
  qrag: retrievalScoresSchema,
  qragFiltered: retrievalScoresSchema.extend({ avgKept: z.number() }),
  /**
   * The same threshold, then leave-one-out pruning at it (server/qrag/evaluation/stop-rules.ts "prune").
   * Absent for oracle-stopped sweeps and points written before it existed.
   */
  qragPruned: retrievalScoresSchema.extend({ avgKept: z.number() }).optional(),
  /** Absent when the sweep ran without baselines. */
  bm25: retrievalScoresSchema.optional(),
  dense: retrievalScoresSchema.optional(),
  /** Sample standard deviation of the per-episode F1 (coverage is a proportion: Wilson needs only n). */
  f1Sd: z.object({ qrag: z.number(), qragFiltered: z.number(), qragPruned: z.number().optional(), bm25: z.number().optional(), dense: z.number().optional() }).optional(),
  /** Baselines retrieve this many chunks in one step. */
  baselineK: int,
  episodeSeconds: z.number(),
  encodeSeconds: z.number(),
  /** Answer accuracy of the LLM reader on the kept chunks (`--reader`); absent without one. */
  reader: readerSummarySchema.optional(),
});
export type SweepPoint = z.infer<typeof sweepPointSchema>;

/**
 * How a run attempt ended. `interrupted`: its worker shut down mid-run (SIGTERM, not a user's
 * cancel); the engine saved a checkpoint and the dashboard queues the run again to resume from it.
 */
export const RUN_END_STATUSES = ["completed", "cancelled", "failed", "interrupted"] as const;
export type RunEndStatus = (typeof RUN_END_STATUSES)[number];

export const engineEventSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("run_start"), meta: runMetaSchema }),
  // the engine emits finite values only (JSON would turn NaN into null)
  z.object({ type: z.literal("metric"), key: metricKeySchema, step: int, update: int, value: finite, wall: z.number() }),
  z.object({ type: z.literal("episode"), phase: z.enum(["train", "eval", "sweep"]), step: int, update: int, record: episodeRecordSchema }),
  z.object({ type: z.literal("checkpoint"), step: int, update: int, path: z.string().min(1), best: z.boolean(), evalReturn: finite.optional() }),
  z.object({ type: z.literal("progress"), phase: z.string().max(40), done: z.number(), total: z.number(), etaSeconds: z.number().optional(), message: z.string().optional() }),
  z.object({ type: z.literal("log"), level: z.enum(["info", "warn", "error"]), message: z.string() }),
  z.object({ type: z.literal("sweep_point"), point: sweepPointSchema }),
  /** An agent evaluation run by the worker (runAgent): one row per sample, one summary per length. */
  z.object({ type: z.literal("agent_sample"), row: agentSampleSchema }),
  z.object({ type: z.literal("agent_summary"), summary: agentSummarySchema }),
  z.object({ type: z.literal("run_end"), status: z.enum(RUN_END_STATUSES), step: int, update: int, error: z.string().optional() }),
]);
export type EngineEvent = z.infer<typeof engineEventSchema>;
export type EventSink = (e: EngineEvent) => void;
