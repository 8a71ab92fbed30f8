"use client";
import { useQuery } from "@tanstack/react-query";
import { apiGet } from "../api.ts";
import type { QueueDto } from "../contracts/index.ts";
import { qk } from "./keys.ts";

/** The queues this dashboard has, with their defaults and waiting/running counts (polled; refetched when runs change status). */
export function useQueues() {
  return useQuery({
    queryKey: qk.queues(),
    queryFn: ({ signal }) => apiGet<QueueDto[]>("/api/queues", signal),
    refetchInterval: 5_000,
  });
}
