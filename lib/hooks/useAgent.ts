"use client";
/** An agent evaluation of a run: a `qrag agent --out` file uploaded (POST …/agent/upload), or one queued for the worker (POST …/agent). */
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { apiPost } from "../api.ts";
import type { CreateAgentBody, SweepDto, UploadAgentBody } from "../contracts/index.ts";
import { sweepKeys } from "./useSweeps.ts";

export function useUploadAgent(runId: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: UploadAgentBody) => apiPost<SweepDto>(`/api/runs/${encodeURIComponent(runId)}/agent/upload`, body),
    onSuccess: () => qc.invalidateQueries({ queryKey: sweepKeys.ofRun(runId) }),
  });
}

/** POST /api/runs/:id/agent: an agent evaluation the worker runs. */
export function useStartAgent(runId: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: CreateAgentBody) => apiPost<SweepDto>(`/api/runs/${encodeURIComponent(runId)}/agent`, body),
    onSuccess: () => qc.invalidateQueries({ queryKey: sweepKeys.ofRun(runId) }),
  });
}
