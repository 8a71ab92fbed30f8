"use client";
/** The config keys whose values differ across the compared runs, one column per run (values as text). */
import type { DiffRow } from "../lib/analysis/config-diff.ts";

const show = (v: unknown) => (v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v));

export function ConfigDiffTable({ rows, runs }: { rows: readonly DiffRow[]; runs: readonly { id: string; name: string }[] }) {
  if (runs.length < 2) return <div className="empty">Select two or more runs to see how their configs differ.</div>;
  if (!rows.length) return <div className="empty" data-testid="config-diff-empty">The configs are identical.</div>;
  return (
    <div className="table-wrap" style={{ maxHeight: 360, overflow: "auto" }}>
      <table className="table" data-testid="config-diff">
        <thead>
          <tr>
            <th>key</th>
            {runs.map((r) => (
              <th key={r.id} title={r.id}>
                {r.name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.key} data-key={row.key}>
              <td className="mono">{row.key}</td>
              {runs.map((r) => (
                <td key={r.id} className="mono" data-run-id={r.id}>
                  {show(row.values[r.id])}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
