"use client";
import { useQuery } from "@tanstack/react-query";
import { apiGet } from "../api.ts";
import type { EpisodeChunksDto } from "../contracts/index.ts";
import { chunkBlock } from "../analysis/replay.ts";

/**
 * The text of chunk `cell` of an episode's haystack, fetched on demand in aligned blocks (one
 * request serves its neighbours; a block is never refetched). `cell` null fetches nothing. With
 * `texts` (a record that holds its chunks: a playground episode) nothing is fetched.
 */
export function useChunkText(runId: string, episodeId: string, numChunks: number, cell: number | null, texts?: readonly string[]) {
  const block = cell === null ? null : chunkBlock(cell, numChunks);
  const q = useQuery({
    queryKey: ["run", runId, "episode", episodeId, "chunks", block?.from ?? -1],
    queryFn: ({ signal }) =>
      apiGet<EpisodeChunksDto>(`/api/runs/${encodeURIComponent(runId)}/episodes/${encodeURIComponent(episodeId)}/chunks?from=${block!.from}&to=${block!.to}`, signal),
    enabled: block !== null && !texts && !!runId && !!episodeId,
    staleTime: Infinity,
    retry: false,
  });
  if (texts) return { text: cell !== null ? texts[cell] : undefined, error: null, loading: false };
  const text = cell !== null && q.data ? q.data.texts[cell - q.data.from] : undefined;
  return { text, error: q.error as Error | null, loading: q.isFetching };
}
