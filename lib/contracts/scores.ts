/** Retrieval scores and reader failure kinds: shared by the engine's events and the agent's rows (no import cycle). */
import { z } from "zod";

export const retrievalScoresSchema = z.object({
  precision: z.number(),
  recall: z.number(),
  f1: z.number(),
  /** The reference's "em": all supporting facts retrieved. */
  coverage: z.number(),
});
export type RetrievalScores = z.infer<typeof retrievalScoresSchema>;

/** Why a reader call failed (server/qrag/reader/reader.ts `ReaderFailure`): the sample counts as wrong. */
export const READER_FAILURES = ["context", "timeout", "rate_limit", "server", "unparseable", "bad_request", "connection", "auth"] as const;
