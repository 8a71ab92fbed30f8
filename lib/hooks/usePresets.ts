"use client";
import { useQuery } from "@tanstack/react-query";
import { apiGet } from "../api.ts";
import type { PresetDto } from "../contracts/index.ts";
import { qk } from "./keys.ts";

/** Presets from configs/presets, resolved by the engine. */
export function usePresets() {
  return useQuery({
    queryKey: qk.presets(),
    queryFn: ({ signal }) => apiGet<PresetDto[]>("/api/presets", signal),
    staleTime: 5 * 60_000,
  });
}
