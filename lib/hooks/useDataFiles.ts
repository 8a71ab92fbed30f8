"use client";
import { useQuery } from "@tanstack/react-query";
import { apiGet } from "../api.ts";
import type { DataFilesDto } from "../contracts/index.ts";

/** What the data root holds (GET /api/data-files), for the launch form's path suggestions. */
export function useDataFiles() {
  return useQuery({
    queryKey: ["data-files"] as const,
    queryFn: ({ signal }) => apiGet<DataFilesDto>("/api/data-files", signal),
    staleTime: 30_000,
  });
}
