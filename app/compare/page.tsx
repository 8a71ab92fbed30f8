"use client";
/** /compare?runs=a,b,c&group=envs.task&… : the compare view with its state in the URL, savable as a dashboard. */
import { Suspense, useState } from "react";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { CompareView } from "../../components/CompareView.tsx";
import { searchFromState, specFromState, stateFromSearch, type CompareState } from "../../lib/compare-state.ts";
import { useCreateDashboard } from "../../lib/hooks/useDashboards.ts";

function SaveDashboard({ state }: { state: CompareState }) {
  const router = useRouter();
  const create = useCreateDashboard();
  const [name, setName] = useState("");
  const save = () =>
    create.mutate({ name: name.trim(), spec: specFromState(state) }, { onSuccess: (d) => router.push(`/dashboards/${encodeURIComponent(d.id)}`) });
  return (
    <span className="row" style={{ gap: 6 }}>
      <input value={name} maxLength={200} placeholder="dashboard name" onChange={(e) => setName(e.target.value)} onKeyDown={(e) => e.key === "Enter" && name.trim() && save()} data-testid="dashboard-name" />
      <button type="button" className="primary" disabled={!name.trim() || create.isPending} onClick={save} data-testid="save-dashboard">
        {create.isPending ? "Saving…" : "Save as dashboard"}
      </button>
      {create.error && <span className="error-text small">{(create.error as Error).message}</span>}
    </span>
  );
}

function ComparePage() {
  const sp = useSearchParams();
  const router = useRouter();
  const pathname = usePathname();
  const state = stateFromSearch(new URLSearchParams(sp.toString()));
  const onChange = (next: CompareState) => {
    const s = searchFromState(next);
    router.replace(s ? `${pathname}?${s}` : pathname, { scroll: false });
  };
  return (
    <main className="stack" data-testid="compare-page">
      <div className="page-head" style={{ margin: 0 }}>
        <h1>Compare runs</h1>
      </div>
      <CompareView state={state} onChange={onChange} actions={<SaveDashboard state={state} />} />
    </main>
  );
}

export default function Page() {
  return (
    <Suspense fallback={<main className="empty">Loading…</main>}>
      <ComparePage />
    </Suspense>
  );
}
