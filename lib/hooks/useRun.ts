"use client";
import { useQuery } from "@tanstack/react-query";
import { apiGet } from "../api.ts";
import type { RunDetailDto } from "../contracts/index.ts";
import { qk } from "./keys.ts";

/** One run with its config and checkpoints; useRunStream patches status, progress and summary. */
export function useRun(id: string | undefined) {
  return useQuery({
    queryKey: qk.run(id ?? ""),
    queryFn: ({ signal }) => apiGet<RunDetailDto>(`/api/runs/${encodeURIComponent(id!)}`, signal),
    enabled: !!id,
  });
}
