/**
 * The one writer of runs into the React Query cache besides their queries: run rows as the
 * server derived them (a "runs:state" message, or a mutation's answer) replace the matching
 * entries of every cached runs list and the run's detail (keeping the detail's config and
 * checkpoints). An older copy never overwrites a newer one (lastSeq is the run's version).
 */
import type { QueryClient } from "@tanstack/react-query";
import type { RunDetailDto, RunDto, RunListDto } from "./contracts/index.ts";
import { qk } from "./hooks/keys.ts";

const newer = (a: RunDto, b: RunDto) => a.lastSeq >= b.lastSeq;

/** Merges fresh run rows; returns the ids that no cached list holds (a list may need a refetch). */
export function putRuns(qc: QueryClient, runs: readonly RunDto[]): string[] {
  if (!runs.length) return [];
  const byId = new Map(runs.map((r) => [r.id, r]));
  const listed = new Set<string>();
  for (const q of qc.getQueryCache().findAll({ queryKey: qk.runs() })) {
    const data = q.state.data as RunListDto | undefined;
    if (!data) continue;
    let changed = false;
    const list = data.runs.map((r) => {
      const fresh = byId.get(r.id);
      if (!fresh) return r;
      listed.add(r.id);
      if (!newer(fresh, r)) return r;
      changed = true;
      // a pushed row carries no chosen columns: keep the list's until its next fetch
      return r.columns && !fresh.columns ? { ...fresh, columns: r.columns } : fresh;
    });
    if (changed) qc.setQueryData<RunListDto>(q.queryKey, { ...data, runs: list });
  }
  for (const fresh of runs) {
    qc.setQueryData<RunDetailDto>(qk.run(fresh.id), (old) => {
      if (!old || !newer(fresh, old)) return old;
      // a detail answer (mutations) carries config and checkpoints; a list row does not
      return { ...old, ...fresh, config: old.config, resumeFrom: "resumeFrom" in fresh ? (fresh as RunDetailDto).resumeFrom : old.resumeFrom, checkpoints: "checkpoints" in fresh ? (fresh as RunDetailDto).checkpoints : old.checkpoints };
    });
  }
  return runs.map((r) => r.id).filter((id) => !listed.has(id));
}
