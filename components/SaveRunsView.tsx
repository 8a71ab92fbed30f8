"use client";
/**
 * The runs page's "save view": its filter (status, search, tag, filter expression) and its chosen
 * columns and sort saved as a new dashboard, or into one the user may edit (its owner or an admin):
 * there the view replaces the dashboard's runs and its runs-table panel; its charts and other
 * panels stay. Either way the dashboard then opens with the same columns, their values live.
 */
import { useState } from "react";
import { useRouter } from "next/navigation";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { apiPatch } from "../lib/api.ts";
import type { DashboardDto, DashboardSpec, RunFilterSpec, RunsTableSpec } from "../lib/contracts/index.ts";
import { useCreateDashboard, useDashboards } from "../lib/hooks/useDashboards.ts";

interface Props {
  filter: RunFilterSpec;
  table: RunsTableSpec;
}

export function SaveRunsView({ filter, table }: Props) {
  const router = useRouter();
  const qc = useQueryClient();
  const list = useDashboards();
  const create = useCreateDashboard();
  const into = useMutation({
    mutationFn: ({ id, spec }: { id: string; spec: DashboardSpec }) => apiPatch<DashboardDto>(`/api/dashboards/${encodeURIComponent(id)}`, { spec }),
    onSuccess: (d) => {
      qc.setQueryData(["dashboards", d.id], d);
      void qc.invalidateQueries({ queryKey: ["dashboards"], exact: true });
    },
  });
  const [target, setTarget] = useState("");
  const [name, setName] = useState("");
  const editable = (list.data ?? []).filter((d) => d.canEdit);
  const open = (d: DashboardDto) => router.push(`/dashboards/${encodeURIComponent(d.id)}`);
  const save = () => {
    const existing = editable.find((d) => d.id === target);
    if (!existing) return create.mutate({ name: name.trim(), spec: { filter, table } }, { onSuccess: open });
    // the view's runs replace the dashboard's (a list or a filter: one of the two)
    const { runs: _runs, filter: _filter, ...rest } = existing.spec;
    into.mutate({ id: existing.id, spec: { ...rest, filter, table } }, { onSuccess: open });
  };
  const pending = create.isPending || into.isPending;
  const error = (create.error ?? into.error) as Error | null;
  return (
    <span className="row" style={{ gap: 6 }} data-testid="save-runs-view">
      <select value={target} onChange={(e) => setTarget(e.target.value)} aria-label="save the view into" data-testid="save-view-target">
        <option value="">as a new dashboard</option>
        {editable.map((d) => (
          <option key={d.id} value={d.id}>
            into {d.name}
          </option>
        ))}
      </select>
      {!target && <input value={name} maxLength={200} placeholder="dashboard name" onChange={(e) => setName(e.target.value)} aria-label="dashboard name" data-testid="save-view-name" />}
      <button type="button" disabled={pending || (!target && !name.trim())} onClick={save} data-testid="save-view">
        {pending ? "Saving…" : "Save view"}
      </button>
      {error && <span className="error-text small">{error.message}</span>}
    </span>
  );
}
