/**
 * The one writer of runs into the React Query cache besides their queries: run rows as the
 * server derived them (a "runs:state" message, or a mutation's answer) replace the matching
 * entries of every cached runs list and the run's detail (keeping the detail's config and
 * checkpoints). An older copy never overwrites a newer one (lastSeq is the run's version).
 */
import type { QueryClient, QueryKey } from "@tanstack/react-query";
import type { RunDetailDto, RunDto, RunListDto } from "./contracts/index.ts";
import { qk, type RunListParams } from "./hooks/keys.ts";

const newer = (a: RunDto, b: RunDto) => a.lastSeq >= b.lastSeq;
const sameSummary = (a: RunDto, b: RunDto) => JSON.stringify(a.summary) === JSON.stringify(b.summary);

export interface PutResult {
  /** Runs no cached list holds (a list may need a refetch). */
  unlisted: string[];
  /**
   * Lists the pushed rows cannot keep right: chosen columns (best/min/last of a metric, computed by
   * the server) of a run whose summary moved, or a filter that a run's new summary may now pass or fail.
   */
  stale: QueryKey[];
}

/** Merges fresh run rows into every cached list and run detail. */
export function putRuns(qc: QueryClient, runs: readonly RunDto[]): PutResult {
  if (!runs.length) return { unlisted: [], stale: [] };
  const byId = new Map(runs.map((r) => [r.id, r]));
  const listed = new Set<string>();
  const stale: QueryKey[] = [];
  for (const q of qc.getQueryCache().findAll({ queryKey: qk.runs() })) {
    const data = q.state.data as RunListDto | undefined;
    if (!data) continue;
    const params = (q.queryKey[1] ?? {}) as RunListParams;
    let changed = false;
    let summaryMoved = false;
    const list = data.runs.map((r) => {
      const fresh = byId.get(r.id);
      if (!fresh) return r;
      listed.add(r.id);
      if (!newer(fresh, r)) return r;
      changed = true;
      if (!sameSummary(fresh, r)) summaryMoved = true;
      // a pushed row carries no chosen columns: keep the list's until its next fetch
      return r.columns && !fresh.columns ? { ...fresh, columns: r.columns } : fresh;
    });
    if (changed) qc.setQueryData<RunListDto>(q.queryKey, { ...data, runs: list });
    // a filter may now take a run it does not hold: any pushed run can change its rows
    if ((params.cols && summaryMoved) || (params.where && (summaryMoved || runs.some((r) => !data.runs.some((x) => x.id === r.id))))) stale.push(q.queryKey);
  }
  for (const fresh of runs) {
    qc.setQueryData<RunDetailDto>(qk.run(fresh.id), (old) => {
      if (!old || !newer(fresh, old)) return old;
      // a detail answer (mutations) carries config and checkpoints; a list row does not
      return { ...old, ...fresh, config: old.config, resumeFrom: "resumeFrom" in fresh ? (fresh as RunDetailDto).resumeFrom : old.resumeFrom, checkpoints: "checkpoints" in fresh ? (fresh as RunDetailDto).checkpoints : old.checkpoints };
    });
  }
  return { unlisted: runs.map((r) => r.id).filter((id) => !listed.has(id)), stale };
}
