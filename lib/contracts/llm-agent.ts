/**
 * The rows `qrag agent` writes (server/qrag/llm-agent/): an LLM that alternates reasoning and
 * search queries until it answers, R3-RAG's step format. One `sample` row per sample, then one
 * `summary` row per haystack length. Field names follow the episode record (engine-events.ts:
 * id, question, answer = the gold answer, sf_idx, pred_idx, num_chunks, metrics) and the reader's
 * record (model, correct, f1, tokens, ms, failure), so the dashboard can show a row as an episode.
 */
import { z } from "zod";
import { READER_FAILURES, retrievalScoresSchema } from "./scores.ts";

const int = z.number().int();

/** The Episode phase of an uploaded agent sample row (server/runs/agent-upload.ts). */
export const AGENT_PHASE = "agent";

export const AGENT_STEP_KINDS = ["reason", "query", "retrieve", "answer"] as const;
export type AgentStepKind = (typeof AGENT_STEP_KINDS)[number];

/** Why the agent answered without its own "answer" step: it ran out of steps, or its output did not parse. */
export const AGENT_FORCED = ["step_limit", "unparseable"] as const;

export const agentStepSchema = z.object({
  kind: z.enum(AGENT_STEP_KINDS),
  /** reason: the analysis; query: the search query; retrieve: the retrieved chunks' texts joined; answer: the answer. */
  text: z.string(),
  /** retrieve: the chunk ids (indices in the haystack), best first. */
  ids: z.array(int).optional(),
  /** retrieve: which of `ids` are supporting facts. */
  gold: z.array(z.boolean()).optional(),
  /** The model call that produced the step (0-based; a call may yield a reason and a query). */
  call: int.optional(),
  /** The call's tokens and wall time, on the first step of each call; a retrieve step's ms is the retriever's. */
  tokens: z.object({ prompt: int, completion: int }).optional(),
  ms: z.number(),
  /** reason: the model's text that did not parse, kept as it came. */
  unparsed: z.boolean().optional(),
  /** answer: asked for after the step bound or an unparseable step (`forced` on the sample says which). */
  forced: z.boolean().optional(),
});
export type AgentStep = z.infer<typeof agentStepSchema>;

export const agentSampleSchema = z.object({
  type: z.literal("sample"),
  id: z.string(),
  question: z.string(),
  /** The gold answer, as in the episode record. */
  answer: z.string(),
  sf_idx: z.array(int),
  /**
   * The supporting facts' texts, as an episode record keeps them: the dashboard regenerates the
   * haystack for the replay's hover texts and checks it against these (absent in older files).
   */
  sf_texts: z.array(z.string()).optional(),
  /** Every chunk retrieved, in retrieval order. */
  pred_idx: z.array(int),
  num_chunks: int,
  model: z.string(),
  retriever: z.string(),
  steps: z.array(agentStepSchema),
  /** The agent's final answer ("" after a failure). */
  prediction: z.string(),
  /** The benchmark's score of `prediction`, 0..1 (0 for a failure). */
  correct: z.number(),
  f1: z.number().optional(),
  /** Retrieval scores of everything retrieved; `coverage` = all supporting facts among them. */
  metrics: retrievalScoresSchema,
  /** Model calls made (the forced answer included). */
  calls: int,
  tokens: z.object({ prompt: int, completion: int }),
  /** Wall time of the sample: model calls, retrieval and our own work. */
  ms: z.number(),
  /** Of `ms`, the time inside model calls. */
  modelMs: z.number(),
  retries: int,
  forced: z.enum(AGENT_FORCED).optional(),
  /** A model call failed (the sample scores 0); the steps so far are kept. */
  failure: z.object({ kind: z.enum(READER_FAILURES), message: z.string() }).optional(),
});
export type AgentSample = z.infer<typeof agentSampleSchema>;

export const agentSummarySchema = z.object({
  type: z.literal("summary"),
  numChunks: int,
  model: z.string(),
  retriever: z.string(),
  n: int,
  correct: z.number(),
  accuracy: z.number(),
  /** 95 % Wilson interval of the accuracy (RULER's shares rounded to whole successes). */
  ci: z.object({ low: z.number(), high: z.number() }).nullable(),
  f1: z.number().optional(),
  /** Mean retrieval scores of everything retrieved per sample. */
  coverage: z.number(),
  recall: z.number(),
  meanSteps: z.number(),
  meanCalls: z.number(),
  meanRetrieved: z.number(),
  promptTokens: z.number(),
  completionTokens: z.number(),
  msPerSample: z.number(),
  failures: int,
  failureKinds: z.partialRecord(z.enum(READER_FAILURES), int),
  forced: z.partialRecord(z.enum(AGENT_FORCED), int),
});
export type AgentSummary = z.infer<typeof agentSummarySchema>;

export const agentRowSchema = z.discriminatedUnion("type", [agentSampleSchema, agentSummarySchema]);
export type AgentRow = z.infer<typeof agentRowSchema>;
