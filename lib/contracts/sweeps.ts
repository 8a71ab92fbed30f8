/**
 * Context-length sweeps as dashboard jobs: what the "Sweep" form posts, the spec stored on the
 * sweep job (a Run of kind "sweep") and sent to the worker, an upload of `qrag sweep --out /
 * --episodes` files, and the answers. Sizes are bounded here: a sweep at 400,000 chunks costs
 * seconds to minutes per episode on a CPU.
 */
import { z } from "zod";
import type { RunDto } from "./dto.ts";
import type { SweepPoint } from "./engine-events.ts";
import type { AgentSummary } from "./llm-agent.ts";

/** The reference lengths (chunks) in the order the paper reports them: ≈1K … 1M tokens. */
export const DEFAULT_SWEEP_LENGTHS = [50, 160, 1200, 4600, 40000] as const;
export const MAX_SWEEP_CHUNKS = 400_000;

const lengths = z
  .array(z.number().int().min(2, "at least 2 chunks").max(MAX_SWEEP_CHUNKS, `at most ${MAX_SWEEP_CHUNKS} chunks`))
  .min(1, "at least one length")
  .max(8, "at most 8 lengths")
  .refine((l) => new Set(l).size === l.length, "lengths must be distinct");

/**
 * An LLM reader on each episode's kept chunks (issue 30): a GGUF model in the data root, or the
 * OpenAI-compatible endpoint the worker is configured with (QRAG_READER_URL; its key stays in the
 * worker's environment). The URL is never a form field: a key must not follow a user's URL.
 */
export const sweepReaderSchema = z.discriminatedUnion("provider", [
  z.strictObject({ provider: z.literal("gguf"), file: z.string().trim().min(1, "a GGUF file in the data root").max(1024) }),
  z.strictObject({ provider: z.literal("endpoint"), model: z.string().trim().min(1, "the model name the endpoint serves").max(200).regex(/^[\x21-\x7e]+$/, "printable characters, no spaces") }),
]);
export type SweepReader = z.infer<typeof sweepReaderSchema>;
/** How a sweep's reader is named in its label and run config. */
export const sweepReaderLabel = (r: SweepReader) => (r.provider === "gguf" ? `gguf:${r.file}` : `endpoint:${r.model}`);

/** POST /api/runs/:id/sweeps */
export const createSweepBody = z.strictObject({
  /** "best", "last", or the update number of a stored checkpoint. */
  checkpoint: z.union([z.literal("best"), z.literal("last"), z.number().int().min(0)]).default("best"),
  lengths: lengths.default([...DEFAULT_SWEEP_LENGTHS]),
  samples: z.number().int().min(1).max(500).default(20),
  threshold: z.number().min(-1000).max(1000).default(0.5),
  baselines: z.boolean().default(true),
  oracleStop: z.boolean().default(false),
  reader: sweepReaderSchema.optional(),
});
/** What the form sends (defaults optional) … */
export type CreateSweepBody = z.input<typeof createSweepBody>;
/** … and what the service gets once the API parsed it. */
export type SweepRequest = z.output<typeof createSweepBody>;

/**
 * POST /api/runs/:id/agent: an agent evaluation the worker runs (runAgent in its engine process)
 * over the run's BabiLong task. `retriever` "dense" and "qrag" use the run's best checkpoint
 * (dense: its encoders, single step; qrag: Q-RAG's state encoder); bm25 needs none.
 */
export const AGENT_RETRIEVERS = ["bm25", "dense", "qrag"] as const;
export const createAgentBody = z.strictObject({
  model: sweepReaderSchema,
  retriever: z.enum(AGENT_RETRIEVERS).default("bm25"),
  lengths: lengths.default([50]),
  samples: z.number().int().min(1).max(500).default(20),
  format: z.enum(["json", "r3rag"]).default("json"),
  /** Model calls before the answer is forced (R3-RAG's chain length is 10). */
  maxCalls: z.number().int().min(1).max(64).default(10),
  maxTokens: z.number().int().min(8).max(4096).default(256),
});
export type CreateAgentBody = z.input<typeof createAgentBody>;
export type AgentRequest = z.output<typeof createAgentBody>;

/** The sweep job's stored config, and what the worker runs. */
export const sweepSpecSchema = z.strictObject({
  /** The checkpoint folder, as stored on the evaluated run's checkpoint row. */
  checkpoint: z.string().min(1).max(4096),
  /** "best @ update 120", "last @ update 200", or "uploaded". */
  checkpointLabel: z.string().max(200),
  lengths,
  samples: z.number().int().min(1).max(500),
  threshold: z.number(),
  baselines: z.boolean(),
  oracleStop: z.boolean(),
  /** "agent": an uploaded `qrag agent --out` evaluation (its points are the agent's summary rows). */
  source: z.enum(["dashboard", "upload", "agent"]),
  /** source "agent": the agent's model and retriever, as its rows name them. */
  agent: z.strictObject({ model: z.string().max(300), retriever: z.string().max(300) }).optional(),
  /** An agent evaluation queued from the dashboard: what the worker passes to runAgent (`checkpoint` is the retriever's run, "" for bm25). */
  agentRun: z
    .strictObject({ model: sweepReaderSchema, retriever: z.enum(AGENT_RETRIEVERS), format: z.enum(["json", "r3rag"]), maxCalls: z.number().int().min(1).max(64), maxTokens: z.number().int().min(8).max(4096), task: z.string().regex(/^qa[1-5]$/).optional() })
    .optional(),
  /** The reader, its GGUF file as the data-root-relative path checked when the sweep was queued. */
  reader: sweepReaderSchema.optional(),
});
export type SweepSpec = z.infer<typeof sweepSpecSchema>;

/** POST /api/runs/:id/sweeps/upload: the text of `qrag sweep --out` (and `--episodes`) files. */
export const uploadSweepBody = z.strictObject({
  name: z.string().trim().max(200).optional(),
  points: z.strictObject({ name: z.string().min(1).max(255), text: z.string().min(1).max(1_000_000) }),
  /** The route accepts import-sized bodies (IMPORT_MAX_BODY_BYTES): 500 samples × 8 lengths of episodes. */
  episodes: z.strictObject({ name: z.string().min(1).max(255), text: z.string().max(60_000_000) }).optional(),
});
export type UploadSweepBody = z.input<typeof uploadSweepBody>;
export type SweepUpload = z.output<typeof uploadSweepBody>;

/**
 * POST /api/runs/:id/agent/upload: the text of a `qrag agent --out` file (sample rows, then one
 * summary row per length; lib/contracts/llm-agent.ts). Bounded like a sweep's episodes file.
 */
export const uploadAgentBody = z.strictObject({
  name: z.string().trim().max(200).optional(),
  file: z.strictObject({ name: z.string().min(1).max(255), text: z.string().min(1).max(60_000_000) }),
});
export type UploadAgentBody = z.input<typeof uploadAgentBody>;
export type AgentUpload = z.output<typeof uploadAgentBody>;
/** An uploaded agent evaluation holds at most this many samples per length (8 lengths, as a sweep). */
export const MAX_AGENT_SAMPLES_PER_LENGTH = 1000;
/** … and at most this many steps per sample (64 model calls of reason, query and retrieve, and the answer). */
export const MAX_AGENT_STEPS = 400;

export interface SweepDto {
  /** The sweep job (status, progress, worker, error). */
  run: RunDto;
  spec: SweepSpec;
  /** Q-RAG's points; empty for an agent evaluation. */
  points: SweepPoint[];
  /** An agent evaluation (spec.source "agent"): its summary row per length, shortest first. */
  agent?: AgentSummary[];
}

export interface SweepListDto {
  sweeps: SweepDto[];
}

/** One sample of a sweep at every length (the "across lengths" view). */
export interface AcrossCellDto {
  episodeId: number;
  coverage: number;
  f1: number;
  /** Per step: chosen chunk, its Q, gold or not. */
  steps: { index: number; q: number; gold: boolean }[];
  /** Gold facts the episode found / all gold facts. */
  found: number;
  gold: number;
}
export interface AcrossSampleDto {
  /** The sample id without its haystack size (the same question and facts at every length). */
  sample: string;
  question: string;
  /** numChunks → the episode at that length (absent: not run there). */
  cells: Record<number, AcrossCellDto>;
}
export interface AcrossLengthsDto {
  lengths: number[];
  samples: AcrossSampleDto[];
}
