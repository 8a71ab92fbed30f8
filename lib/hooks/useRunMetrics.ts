"use client";
import { useQuery } from "@tanstack/react-query";
import { apiGet, qs } from "../api.ts";
import type { MetricsDto } from "../contracts/index.ts";
import { qk, type MetricsParams } from "./keys.ts";

/** The query of one run's series (shared with the compare view's useQueries, same cache entries). */
export const runMetricsQuery = (id: string, params: MetricsParams) => ({
  queryKey: qk.metrics(id, params),
  queryFn: ({ signal }: { signal: AbortSignal }) =>
    apiGet<MetricsDto>(`/api/runs/${encodeURIComponent(id)}/metrics${qs({ keys: params.keys.join(","), width: params.width, x: params.x })}`, signal),
  staleTime: Infinity,
  refetchOnWindowFocus: false,
  refetchOnReconnect: false,
});

/**
 * Metric series of a run, bucketed by the server for `width` pixels. Loaded once per key set;
 * from then on useRunStream appends live points, so this never refetches on its own.
 */
export function useRunMetrics(id: string | undefined, params: MetricsParams) {
  return useQuery({ ...runMetricsQuery(id ?? "", params), enabled: !!id });
}
