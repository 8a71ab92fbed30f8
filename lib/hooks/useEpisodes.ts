"use client";
import { useQuery } from "@tanstack/react-query";
import { apiGet, qs } from "../api.ts";
import type { EpisodeDto } from "../contracts/index.ts";
import { qk, type EpisodesParams } from "./keys.ts";

/** Latest episodes of a run (latest first); useRunStream prepends live ones. */
export function useEpisodes(id: string | undefined, params: EpisodesParams) {
  return useQuery({
    queryKey: qk.episodes(id ?? "", params),
    queryFn: ({ signal }) => apiGet<EpisodeDto[]>(`/api/runs/${encodeURIComponent(id!)}/episodes${qs({ limit: params.limit, phase: params.phase, numChunks: params.numChunks })}`, signal),
    enabled: !!id,
    staleTime: Infinity,
    refetchOnWindowFocus: false,
  });
}
