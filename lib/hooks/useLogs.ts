"use client";
import { useQuery } from "@tanstack/react-query";
import { apiGet, qs } from "../api.ts";
import type { LogLineDto } from "../contracts/index.ts";
import { qk } from "./keys.ts";

/** The log tail of a run (latest last); useRunStream appends live lines. */
export function useLogs(id: string | undefined, limit = 200) {
  return useQuery({
    queryKey: qk.logs(id ?? "", limit),
    queryFn: ({ signal }) => apiGet<LogLineDto[]>(`/api/runs/${encodeURIComponent(id!)}/logs${qs({ limit })}`, signal),
    enabled: !!id,
    staleTime: Infinity,
    refetchOnWindowFocus: false,
  });
}
