/**
 * The playground (issue 28 item 8): a run's checkpoint over a pasted document and question.
 * POST /api/runs/:id/playground runs the greedy agent and stores nothing; POST
 * /api/runs/:id/playground/episodes runs it again and stores the episode (phase "playground");
 * GET /api/runs/:id/playground/sample?index= is a test sample of the run's own dataset to edit.
 * Every size a user sets is bounded here, for the server and the page alike.
 */
import { z } from "zod";
import type { EpisodeRecord } from "./engine-events.ts";
import { intParam } from "./rest.ts";

export const PLAYGROUND_LIMITS = {
  /** UTF-8 bytes of the document. */
  documentBytes: 200_000,
  /** GPT-2 tokens of the document. */
  documentTokens: 50_000,
  /** Chunks (sentences) the document may split into. */
  chunks: 5_000,
  questionBytes: 1_024,
  answerBytes: 1_024,
  /** Gold facts (texts of chunks to mark), each at most `goldBytes`. */
  gold: 20,
  goldBytes: 2_000,
  /** Largest sample index "load a benchmark sample" takes. */
  sampleIndex: 100_000,
} as const;

const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;
const kb = (n: number) => (n >= 1000 ? `${Math.round(n / 1000)} KB` : `${n} bytes`);
const bounded = (max: number) => z.string().refine((s) => utf8Bytes(s) <= max, `at most ${kb(max)} (UTF-8)`);

export const playgroundCheckpoint = z.enum(["best", "last"]);
export type PlaygroundCheckpoint = z.output<typeof playgroundCheckpoint>;

export const playgroundBody = z.strictObject({
  /** The run's current "best" or "last" checkpoint folder. */
  checkpoint: playgroundCheckpoint.default("best"),
  document: bounded(PLAYGROUND_LIMITS.documentBytes).refine((s) => s.trim().length > 0, "must not be empty"),
  question: bounded(PLAYGROUND_LIMITS.questionBytes).refine((s) => s.trim().length > 0, "must not be empty"),
  answer: bounded(PLAYGROUND_LIMITS.answerBytes).optional(),
  /** Texts of the chunks that answer the question (marked gold, scored); optional. */
  gold: z.array(bounded(PLAYGROUND_LIMITS.goldBytes)).max(PLAYGROUND_LIMITS.gold).optional(),
  /** The Q-threshold of the stopping filter (default 0.5). */
  threshold: z.number().min(0).max(1).optional(),
});
export type PlaygroundBody = z.input<typeof playgroundBody>;

export const playgroundSampleQuery = z.strictObject({ index: intParam(0, PLAYGROUND_LIMITS.sampleIndex).optional(), checkpoint: playgroundCheckpoint.optional() });

/** What the engine runs: the document split into sentences, the gold chunks found in it. */
export interface PlaygroundInput {
  id: string;
  question: string;
  answer: string;
  chunks: string[];
  supportIdx: number[];
  /** GPT-2 tokens of the document. */
  tokens: number;
  threshold: number;
}

export interface PlaygroundResultDto {
  /** The episode as the replay player renders it; `chunks` holds the whole document's chunks. */
  record: EpisodeRecord;
  checkpoint: { name: PlaygroundCheckpoint; update: number; step: number };
  /** Milliseconds: the whole request on the server, and the engine's episode alone. */
  ms: { total: number; engine: number };
  /** The checkpoint was already loaded (a warm engine process). */
  warm: boolean;
}

export interface PlaygroundSavedDto {
  episodeId: number;
  runId: string;
}

export interface PlaygroundSampleDto {
  sampleId: string;
  /** The sample's chunks, one per line (the splitter treats a newline as a sentence end). */
  document: string;
  question: string;
  answer: string;
  gold: string[];
}
