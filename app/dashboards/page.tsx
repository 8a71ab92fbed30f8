"use client";
/** /dashboards: the saved comparisons, newest change first. */
import Link from "next/link";
import { useDashboards, useDeleteDashboard } from "../../lib/hooks/useDashboards.ts";
import { fmtDateTime } from "../../lib/format.ts";

export default function DashboardsPage() {
  const list = useDashboards();
  const del = useDeleteDashboard();
  const rows = list.data ?? [];
  return (
    <main>
      <div className="page-head">
        <h1>Dashboards</h1>
        <span className="muted">{list.data ? `${rows.length} saved` : ""}</span>
      </div>
      {list.error ? (
        <div className="form-banner">Could not load dashboards: {(list.error as Error).message}</div>
      ) : list.isLoading ? (
        <div className="empty">Loading…</div>
      ) : rows.length === 0 ? (
        <div className="empty">
          No dashboards yet: select runs in the <Link href="/">runs table</Link>, press Compare, then save the comparison.
        </div>
      ) : (
        <div className="table-wrap">
          <table className="table" data-testid="dashboards-table">
            <thead>
              <tr>
                <th>name</th>
                <th>runs</th>
                <th>grouped by</th>
                <th>owner</th>
                <th>updated</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {rows.map((d) => (
                <tr key={d.id} data-dashboard-id={d.id}>
                  <td className="name">
                    <Link href={`/dashboards/${encodeURIComponent(d.id)}`}>{d.name}</Link>
                  </td>
                  <td>{d.spec.runs ? `${d.spec.runs.length} runs` : "filter"}</td>
                  <td className="mono">{d.spec.group ?? "—"}</td>
                  <td>{d.owner ?? <span className="muted">—</span>}</td>
                  <td className="muted">{fmtDateTime(d.updatedAt)}</td>
                  <td>
                    {d.canEdit && (
                      <button type="button" className="link small" onClick={() => confirm(`Delete the dashboard "${d.name}"?`) && del.mutate(d.id)} disabled={del.isPending}>
                        delete
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </main>
  );
}
