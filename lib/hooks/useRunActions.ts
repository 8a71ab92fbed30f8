"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { apiPatch, apiPost } from "../api.ts";
import type { CreateRunBody, PatchRunBody, RunDetailDto, ValidatedConfigDto, ValidateConfigBody } from "../contracts/index.ts";
import { putRuns } from "../run-cache.ts";
import { qk } from "./keys.ts";

/** POST /api/runs: a 400 rejects with HttpError carrying fieldErrors for the form. */
export function useCreateRun() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: CreateRunBody) => apiPost<RunDetailDto>("/api/runs", body),
    onSuccess: () => qc.invalidateQueries({ queryKey: qk.runs() }),
  });
}

/** POST /api/runs/validate: the server's verdict on a form's config (400 → fieldErrors). */
export const validateConfig = (body: ValidateConfigBody) => apiPost<ValidatedConfigDto>("/api/runs/validate", body);

function useRunAction(action: "cancel" | "resume") {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (id: string) => apiPost<RunDetailDto>(`/api/runs/${encodeURIComponent(id)}/${action}`),
    onSuccess: (run) => putRuns(qc, [run]),
  });
}
export const useCancelRun = () => useRunAction("cancel");
export const useResumeRun = () => useRunAction("resume");

export function usePatchRun(id: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (patch: PatchRunBody) => apiPatch<RunDetailDto>(`/api/runs/${encodeURIComponent(id)}`, patch),
    onSuccess: (run) => putRuns(qc, [run]),
  });
}
