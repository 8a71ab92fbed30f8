"use client";
/**
 * A run's sweeps (GET /api/runs/:id/sweeps) and one sweep job (GET /api/sweeps/:id), kept live:
 * a sweep job is a run, so "runs:state" tells when one of them moved (a new point, a status);
 * the answer is refetched then, at most every 400 ms.
 */
import { useEffect } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { apiGet, apiPost } from "../api.ts";
import { getUiSocket } from "../socket.ts";
import type { AcrossLengthsDto, CreateSweepBody, RunsStateMsg, SweepDto, SweepListDto, UploadSweepBody } from "../contracts/index.ts";

export const sweepKeys = {
  ofRun: (runId: string) => ["sweeps", "of", runId] as const,
  one: (id: string) => ["sweeps", "one", id] as const,
  across: (id: string) => ["sweeps", "across", id] as const,
};

const REFETCH_EVERY_MS = 400;

/** Refetches `key` whenever "runs:state" carries a run that `matches`. */
function useLiveRefetch(key: readonly unknown[], matches: (r: RunsStateMsg["runs"][number]) => boolean, enabled: boolean) {
  const qc = useQueryClient();
  const keyText = JSON.stringify(key);
  useEffect(() => {
    if (!enabled) return;
    const socket = getUiSocket();
    let timer: ReturnType<typeof setTimeout> | null = null;
    const onState = (msg: RunsStateMsg) => {
      if (!msg.runs.some(matches)) return;
      timer ??= setTimeout(() => {
        timer = null;
        void qc.invalidateQueries({ queryKey: JSON.parse(keyText) as unknown[] });
      }, REFETCH_EVERY_MS);
    };
    socket.on("runs:state", onState);
    return () => {
      socket.off("runs:state", onState);
      if (timer) clearTimeout(timer);
    };
    // `matches` is rebuilt each render from the ids in keyText
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [qc, keyText, enabled]);
}

export function useRunSweeps(runId: string | undefined) {
  useLiveRefetch(sweepKeys.ofRun(runId ?? ""), (r) => r.sweepOf === runId, !!runId);
  return useQuery({
    queryKey: sweepKeys.ofRun(runId ?? ""),
    queryFn: ({ signal }) => apiGet<SweepListDto>(`/api/runs/${encodeURIComponent(runId!)}/sweeps`, signal),
    enabled: !!runId,
  });
}

export function useSweep(id: string | undefined) {
  useLiveRefetch(sweepKeys.one(id ?? ""), (r) => r.id === id, !!id);
  return useQuery({
    queryKey: sweepKeys.one(id ?? ""),
    queryFn: ({ signal }) => apiGet<SweepDto>(`/api/sweeps/${encodeURIComponent(id!)}`, signal),
    enabled: !!id,
  });
}

export function useAcrossLengths(id: string | undefined, live: boolean) {
  useLiveRefetch(sweepKeys.across(id ?? ""), (r) => r.id === id, !!id && live);
  return useQuery({
    queryKey: sweepKeys.across(id ?? ""),
    queryFn: ({ signal }) => apiGet<AcrossLengthsDto>(`/api/sweeps/${encodeURIComponent(id!)}/across`, signal),
    enabled: !!id,
  });
}

export function useStartSweep(runId: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: CreateSweepBody) => apiPost<SweepDto>(`/api/runs/${encodeURIComponent(runId)}/sweeps`, body),
    onSuccess: () => qc.invalidateQueries({ queryKey: sweepKeys.ofRun(runId) }),
  });
}

export function useUploadSweep(runId: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: UploadSweepBody) => apiPost<SweepDto>(`/api/runs/${encodeURIComponent(runId)}/sweeps/upload`, body),
    onSuccess: () => qc.invalidateQueries({ queryKey: sweepKeys.ofRun(runId) }),
  });
}
