"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { apiGet, apiPatch, apiPost } from "../api.ts";
import type { CreateDashboardBody, DashboardDto, PatchDashboardBody } from "../contracts/index.ts";

const key = ["dashboards"] as const;

export function useDashboards() {
  return useQuery({ queryKey: key, queryFn: ({ signal }) => apiGet<DashboardDto[]>("/api/dashboards", signal) });
}

export function useDashboard(id: string | undefined) {
  return useQuery({ queryKey: [...key, id ?? ""], queryFn: ({ signal }) => apiGet<DashboardDto>(`/api/dashboards/${encodeURIComponent(id!)}`, signal), enabled: !!id, staleTime: Infinity });
}

export function useCreateDashboard() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: CreateDashboardBody) => apiPost<DashboardDto>("/api/dashboards", body),
    onSuccess: (d) => {
      qc.setQueryData([...key, d.id], d);
      void qc.invalidateQueries({ queryKey: key, exact: true });
    },
  });
}

export function usePatchDashboard(id: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: PatchDashboardBody) => apiPatch<DashboardDto>(`/api/dashboards/${encodeURIComponent(id)}`, body),
    onSuccess: (d) => {
      qc.setQueryData([...key, d.id], d);
      void qc.invalidateQueries({ queryKey: key, exact: true });
    },
  });
}

export function useDeleteDashboard() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (id: string) => {
      const res = await fetch(`/api/dashboards/${encodeURIComponent(id)}`, { method: "DELETE" });
      if (!res.ok) throw new Error(`could not delete (HTTP ${res.status})`);
    },
    onSuccess: () => void qc.invalidateQueries({ queryKey: key }),
  });
}
