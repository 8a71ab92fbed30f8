"use client";
import { useQuery } from "@tanstack/react-query";
import { apiGet } from "../api.ts";
import type { WorkerDto } from "../contracts/index.ts";
import { qk } from "./keys.ts";

/** Connected and recently seen trainer workers (polled; they change rarely). */
export function useWorkers() {
  return useQuery({
    queryKey: qk.workers(),
    queryFn: ({ signal }) => apiGet<WorkerDto[]>("/api/workers", signal),
    refetchInterval: 5_000,
  });
}
