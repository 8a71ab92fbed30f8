"use client";
import { useQuery } from "@tanstack/react-query";
import { apiGet } from "../api.ts";
import type { ConfigSchemaDto } from "../contracts/index.ts";
import { qk } from "./keys.ts";

/** The run config's JSON Schema (the launch form is drawn from it). */
export function useConfigSchema() {
  return useQuery({
    queryKey: qk.schema(),
    queryFn: ({ signal }) => apiGet<ConfigSchemaDto>("/api/schema", signal),
    staleTime: Infinity,
  });
}
