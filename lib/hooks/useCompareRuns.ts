"use client";
/**
 * The data of a comparison: its runs (the explicit list, or every run matching the filter, kept
 * current by useRunsState), their details (configs) and their metric series for the chosen
 * panels, in the same cache entries as the run page, so useRunStream keeps them live.
 */
import { useQueries, useQuery } from "@tanstack/react-query";
import { apiGet, qs } from "../api.ts";
import type { MetricsDto, RunDetailDto, RunListDto, XAxis } from "../contracts/index.ts";
import { filterQuery, type CompareState } from "../compare-state.ts";
import { qk } from "./keys.ts";
import { runMetricsQuery } from "./useRunMetrics.ts";

/** Pixel width the server buckets each series for (two points per drawn pixel at most). */
export const COMPARE_WIDTH = 600;

export interface CompareRuns {
  ids: string[];
  runs: (RunDetailDto | undefined)[];
  metrics: (MetricsDto | undefined)[];
  loading: boolean;
  /** Whether the runs compared are known: a filter's list has answered (an explicit list always is). */
  listed: boolean;
  error: Error | null;
}

export function useCompareRuns(state: CompareState, x: XAxis): CompareRuns {
  const listParams = state.filter ? filterQuery(state.filter) : {};
  // the same cache entry as the runs table's list: useRunsState refetches it when membership changes
  const list = useQuery({ queryKey: qk.runList(listParams), queryFn: ({ signal }) => apiGet<RunListDto>(`/api/runs${qs({ ...listParams })}`, signal), enabled: !!state.filter });
  const ids = state.filter ? (list.data?.runs.map((r) => r.id) ?? []) : (state.runs ?? []);
  const details = useQueries({
    queries: ids.map((id) => ({ queryKey: qk.run(id), queryFn: ({ signal }: { signal: AbortSignal }) => apiGet<RunDetailDto>(`/api/runs/${encodeURIComponent(id)}`, signal) })),
    combine: (rs) => ({ data: rs.map((r) => r.data), loading: rs.some((r) => r.isLoading), error: (rs.find((r) => r.error)?.error as Error | undefined) ?? null }),
  });
  const params = { keys: state.panels, width: COMPARE_WIDTH, x };
  const metrics = useQueries({
    queries: ids.map((id) => runMetricsQuery(id, params)),
    combine: (rs) => ({ data: rs.map((r) => r.data), loading: rs.some((r) => r.isLoading), error: (rs.find((r) => r.error)?.error as Error | undefined) ?? null }),
  });
  return {
    ids,
    runs: details.data,
    metrics: metrics.data,
    loading: (state.filter ? list.isLoading : false) || details.loading || metrics.loading,
    // until the first answer "0 runs" would be a guess (and read as "nothing matches")
    listed: state.filter ? list.data !== undefined : true,
    error: (list.error as Error | null) ?? details.error ?? metrics.error,
  };
}
