"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { apiPost } from "../api.ts";
import type { ImportRunBody, ImportRunDto } from "../contracts/index.ts";
import { qk } from "./keys.ts";

/** POST /api/runs/import: a 400 rejects with HttpError whose fieldErrors are keyed by file name. */
export function useImportRun() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: ImportRunBody) => apiPost<ImportRunDto>("/api/runs/import", body),
    onSuccess: () => qc.invalidateQueries({ queryKey: qk.runs() }),
  });
}
