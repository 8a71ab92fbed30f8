"use client";
/**
 * /dashboards/:id : a saved comparison, live; its settings can be changed and saved back by its
 * owner or an admin; anyone may save the current settings as a copy of their own.
 */
import Link from "next/link";
import { useParams, useRouter } from "next/navigation";
import { useState } from "react";
import type { DashboardDto } from "../../../lib/contracts/index.ts";
import { CompareView } from "../../../components/CompareView.tsx";
import { searchFromState, specFromState, withDefaults, type CompareState } from "../../../lib/compare-state.ts";
import { useCreateDashboard, useDashboard, usePatchDashboard } from "../../../lib/hooks/useDashboards.ts";

function Editor({ dashboard }: { dashboard: DashboardDto }) {
  const [state, setState] = useState<CompareState>(() => withDefaults(dashboard.spec));
  const [name, setName] = useState(dashboard.name);
  const patch = usePatchDashboard(dashboard.id);
  const copy = useCreateDashboard();
  const router = useRouter();
  const saved = JSON.stringify(specFromState(withDefaults(dashboard.spec))) === JSON.stringify(specFromState(state)) && name.trim() === dashboard.name;
  const saveCopy = () =>
    copy.mutate({ name: `${name.trim() || dashboard.name} (copy)`.slice(0, 200), spec: specFromState(state) }, { onSuccess: (d) => router.push(`/dashboards/${encodeURIComponent(d.id)}`) });
  const error = (patch.error ?? copy.error) as Error | null;
  const actions = (
    <span className="row" style={{ gap: 6 }}>
      <span className="muted small" data-testid="dashboard-owner">
        {dashboard.owner ? `saved by ${dashboard.owner}` : "saved before dashboards had owners"}
        {dashboard.canEdit ? "" : " · read-only for you"}
      </span>
      <Link href={`/compare?${searchFromState(state)}`} className="small">
        open as link
      </Link>
      <button type="button" className={dashboard.canEdit ? "" : "primary"} disabled={!name.trim() || copy.isPending} onClick={saveCopy} data-testid="save-dashboard-copy">
        {copy.isPending ? "Copying…" : "Save a copy"}
      </button>
      {dashboard.canEdit && (
        <button type="button" className="primary" disabled={saved || !name.trim() || patch.isPending} onClick={() => patch.mutate({ name: name.trim(), spec: specFromState(state) })} data-testid="save-dashboard-changes">
          {patch.isPending ? "Saving…" : saved ? "Saved" : "Save changes"}
        </button>
      )}
      {error && <span className="error-text small">{error.message}</span>}
    </span>
  );
  return (
    <main className="stack" data-testid="dashboard-page" data-dashboard-id={dashboard.id}>
      <div className="page-head" style={{ margin: 0 }}>
        <input className="title-input" value={name} maxLength={200} onChange={(e) => setName(e.target.value)} aria-label="dashboard name" data-testid="dashboard-title" />
      </div>
      <CompareView state={state} onChange={setState} actions={actions} />
    </main>
  );
}

export default function DashboardPage() {
  const { id } = useParams<{ id: string }>();
  const d = useDashboard(id);
  if (d.error) return <main className="form-banner">Could not load dashboard {id}: {(d.error as Error).message}</main>;
  if (!d.data) return <main className="empty">Loading dashboard…</main>;
  return <Editor key={d.data.id} dashboard={d.data} />;
}
