"use client";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { apiGet, qs } from "../api.ts";
import type { RunListDto } from "../contracts/index.ts";
import { qk, type RunListParams } from "./keys.ts";

/** The runs table. Kept live by useRunsState ("runs:state" rows merged; refetched when membership may change). */
export function useRuns(params: RunListParams) {
  return useQuery({
    queryKey: qk.runList(params),
    queryFn: ({ signal }) => apiGet<RunListDto>(`/api/runs${qs({ ...params })}`, signal),
    placeholderData: keepPreviousData,
  });
}
