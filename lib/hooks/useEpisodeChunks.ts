"use client";
import { useQuery } from "@tanstack/react-query";
import { apiGet } from "../api.ts";
import type { EpisodeChunksDto } from "../contracts/index.ts";
import { chunkBlock } from "../analysis/replay.ts";

/**
 * The text of chunk `cell` of an episode's haystack, fetched on demand in aligned blocks (one
 * request serves its neighbours; a block is never refetched). `cell` null fetches nothing.
 */
export function useChunkText(runId: string, episodeId: string, numChunks: number, cell: number | null) {
  const block = cell === null ? null : chunkBlock(cell, numChunks);
  const q = useQuery({
    queryKey: ["run", runId, "episode", episodeId, "chunks", block?.from ?? -1],
    queryFn: ({ signal }) =>
      apiGet<EpisodeChunksDto>(`/api/runs/${encodeURIComponent(runId)}/episodes/${encodeURIComponent(episodeId)}/chunks?from=${block!.from}&to=${block!.to}`, signal),
    enabled: block !== null && !!runId && !!episodeId,
    staleTime: Infinity,
    retry: false,
  });
  const text = cell !== null && q.data ? q.data.texts[cell - q.data.from] : undefined;
  return { text, error: q.error as Error | null, loading: q.isFetching };
}
