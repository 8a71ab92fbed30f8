/**
 * GET /api/runs/:id/episodes/:episodeId/chunks?from=&to= — chunk texts of an episode's haystack,
 * regenerated on the server from the run's config (the record keeps only the picked and gold
 * texts). The range is half-open and bounded so a hover never asks for a whole 400,000-chunk
 * haystack.
 */
import { z } from "zod";
import { intParam } from "./rest.ts";

/** Most chunks one request may ask for. */
export const MAX_CHUNK_RANGE = 200;
/** Largest haystack the engine builds (the 10M-token sweep length). */
const MAX_HAYSTACK = 400_000;

export const episodeChunksQuery = z
  .strictObject({ from: intParam(0, MAX_HAYSTACK), to: intParam(1, MAX_HAYSTACK) })
  .refine((q) => q.to > q.from, { path: ["to"], message: "must be greater than from" })
  .refine((q) => q.to - q.from <= MAX_CHUNK_RANGE, { path: ["to"], message: `at most ${MAX_CHUNK_RANGE} chunks per request` });
export type EpisodeChunksQuery = z.output<typeof episodeChunksQuery>;

export interface EpisodeChunksDto {
  numChunks: number;
  from: number;
  to: number;
  /** texts[k] is chunk from + k. Untrusted text: render as text only. */
  texts: string[];
}
