"use client";
/** /dashboards/:id : a saved comparison, live; its settings can be changed and saved back. */
import Link from "next/link";
import { useParams } from "next/navigation";
import { useState } from "react";
import type { DashboardDto } from "../../../lib/contracts/index.ts";
import { CompareView } from "../../../components/CompareView.tsx";
import { searchFromState, specFromState, withDefaults, type CompareState } from "../../../lib/compare-state.ts";
import { useDashboard, usePatchDashboard } from "../../../lib/hooks/useDashboards.ts";

function Editor({ dashboard }: { dashboard: DashboardDto }) {
  const [state, setState] = useState<CompareState>(() => withDefaults(dashboard.spec));
  const [name, setName] = useState(dashboard.name);
  const patch = usePatchDashboard(dashboard.id);
  const saved = JSON.stringify(specFromState(withDefaults(dashboard.spec))) === JSON.stringify(specFromState(state)) && name.trim() === dashboard.name;
  const actions = (
    <span className="row" style={{ gap: 6 }}>
      <Link href={`/compare?${searchFromState(state)}`} className="small">
        open as link
      </Link>
      <button type="button" className="primary" disabled={saved || !name.trim() || patch.isPending} onClick={() => patch.mutate({ name: name.trim(), spec: specFromState(state) })} data-testid="save-dashboard-changes">
        {patch.isPending ? "Saving…" : saved ? "Saved" : "Save changes"}
      </button>
      {patch.error && <span className="error-text small">{(patch.error as Error).message}</span>}
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
