"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { apiPatch, apiPost } from "../api.ts";
import type { CreateRunBody, RunDetailDto, RunDto } from "../protocol.ts";
import { qk } from "./keys.ts";

/** POST /api/runs: a 400 rejects with ApiError carrying fieldErrors for the form. */
export function useCreateRun() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: CreateRunBody) => apiPost<RunDto>("/api/runs", body),
    onSuccess: () => qc.invalidateQueries({ queryKey: qk.runs() }),
  });
}

function useRunAction(action: "cancel" | "resume") {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (id: string) => apiPost<RunDto>(`/api/runs/${encodeURIComponent(id)}/${action}`),
    onSuccess: (run, id) => {
      // keep the detail's config and checkpoints; take the fresh status fields
      if (run && typeof run === "object" && "status" in run) {
        qc.setQueryData<RunDetailDto>(qk.run(id), (old) => (old ? { ...old, ...run, lastSeq: Math.max(old.lastSeq, run.lastSeq ?? 0) } : old));
      }
      void qc.invalidateQueries({ queryKey: qk.run(id), exact: true });
      void qc.invalidateQueries({ queryKey: qk.runs() });
    },
  });
}
export const useCancelRun = () => useRunAction("cancel");
export const useResumeRun = () => useRunAction("resume");

export interface RunPatch {
  name?: string;
  tags?: string[];
  notes?: string;
}
export function usePatchRun(id: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (patch: RunPatch) => apiPatch<RunDto>(`/api/runs/${encodeURIComponent(id)}`, patch),
    onSuccess: (run) => {
      qc.setQueryData<RunDetailDto>(qk.run(id), (old) => (old ? { ...old, name: run.name, tags: run.tags, notes: run.notes } : old));
      void qc.invalidateQueries({ queryKey: qk.runs() });
    },
  });
}
