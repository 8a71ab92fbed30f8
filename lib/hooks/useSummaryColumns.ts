"use client";
/**
 * The compared runs' metric summaries (last./best./min./max. columns) as the runs table gets them:
 * one runs-list query restricted to these ids, so the server's one computation (list-columns.ts)
 * serves both. Config columns need no request: the view reads them from the runs' configs.
 */
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import { apiGet, qs } from "../api.ts";
import { parseColumn, type CellValue, type RunListDto } from "../contracts/index.ts";
import { qk } from "./keys.ts";

export function useSummaryColumns(ids: readonly string[], keys: readonly string[]): { byRun: Map<string, Record<string, CellValue>>; ready: boolean; error: Error | null } {
  const metricKeys = [...new Set(keys)].filter((k) => {
    const c = parseColumn(k);
    return !("error" in c) && c.kind === "metric";
  }).sort();
  const params = { ids: [...ids].sort().join(","), cols: metricKeys.join(","), limit: 200 };
  const q = useQuery({
    queryKey: qk.runList(params),
    queryFn: ({ signal }) => apiGet<RunListDto>(`/api/runs${qs(params)}`, signal),
    enabled: ids.length > 0 && metricKeys.length > 0,
    placeholderData: keepPreviousData,
  });
  const byRun = useMemo(() => new Map((q.data?.runs ?? []).map((r) => [r.id, r.columns ?? {}])), [q.data]);
  // ready: these runs' summaries are in (a previous answer kept as placeholder is not theirs)
  const ready = ids.length === 0 || metricKeys.length === 0 || (q.data !== undefined && !q.isPlaceholderData);
  return { byRun, ready, error: (q.error as Error | null) ?? null };
}
