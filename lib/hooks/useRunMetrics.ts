"use client";
import { useQuery } from "@tanstack/react-query";
import { apiGet, qs } from "../api.ts";
import type { MetricsDto } from "../contracts/index.ts";
import { qk, type MetricsParams } from "./keys.ts";

/**
 * Metric series of a run, bucketed by the server for `width` pixels. Loaded once per key set;
 * from then on useRunStream appends live points, so this never refetches on its own.
 */
export function useRunMetrics(id: string | undefined, params: MetricsParams) {
  return useQuery({
    queryKey: qk.metrics(id ?? "", params),
    queryFn: ({ signal }) =>
      apiGet<MetricsDto>(`/api/runs/${encodeURIComponent(id!)}/metrics${qs({ keys: params.keys.join(","), width: params.width, x: params.x })}`, signal),
    enabled: !!id,
    staleTime: Infinity,
    refetchOnWindowFocus: false,
    refetchOnReconnect: false,
  });
}
