"use client";
import { useQuery } from "@tanstack/react-query";
import { apiGet } from "../api.ts";
import type { EpisodeDto } from "../contracts/index.ts";
import { qk } from "./keys.ts";

/** One stored episode with its full record (steps, top-k candidates, gold facts). */
export function useEpisode(id: string | undefined, episodeId: string | undefined) {
  return useQuery({
    queryKey: qk.episode(id ?? "", episodeId ?? ""),
    queryFn: ({ signal }) => apiGet<EpisodeDto>(`/api/runs/${encodeURIComponent(id!)}/episodes/${encodeURIComponent(episodeId!)}`, signal),
    enabled: !!id && !!episodeId,
    staleTime: Infinity,
  });
}
