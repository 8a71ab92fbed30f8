"use client";
/** POST /api/runs/:id/agent/upload: a `qrag agent --out` file stored as an agent evaluation of the run. */
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { apiPost } from "../api.ts";
import type { SweepDto, UploadAgentBody } from "../contracts/index.ts";
import { sweepKeys } from "./useSweeps.ts";

export function useUploadAgent(runId: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: UploadAgentBody) => apiPost<SweepDto>(`/api/runs/${encodeURIComponent(runId)}/agent/upload`, body),
    onSuccess: () => qc.invalidateQueries({ queryKey: sweepKeys.ofRun(runId) }),
  });
}
