"use client";
import Link from "next/link";
import { SUMMARY_COLUMNS, type CellValue, type RunDto } from "../lib/contracts/index.ts";
import type { RunListParams } from "../lib/hooks/keys.ts";
import { fmtDateTime, fmtDuration, fmtNum, runSeconds } from "../lib/format.ts";
import { useNow } from "../lib/hooks/useNow.ts";
import { KindBadge, Progress, StatusBadge } from "./Badges.tsx";

type SortKey = NonNullable<RunListParams["sort"]>;

/** A chosen column's cell: numbers to 4 significant digits, text as text, "—" where the run has none. */
function Cell({ v }: { v: CellValue | undefined }) {
  if (v === undefined || v === null) return <span className="muted">—</span>;
  if (typeof v === "number") return <>{fmtNum(v)}</>;
  return <>{String(v)}</>;
}

interface Props {
  runs: RunDto[];
  sort: SortKey;
  order: "asc" | "desc";
  onSort: (key: SortKey) => void;
  activeTag?: string;
  onTag: (tag: string) => void;
  /** The queue filter (a queue cell filters by its queue when given). */
  activeQueue?: string;
  onQueue?: (queue: string) => void;
  /** Chosen columns (config keys, metric stats) after the fixed ones, their values in each row's `columns`. */
  columns?: readonly string[];
  /** Row selection for Compare (checkbox column shown when given). */
  selection?: {
    selected: ReadonlySet<string>;
    /** A row's checkbox clicked; `range`: with shift (select from the last clicked row). */
    onToggle: (id: string, range: boolean) => void;
    /** The header checkbox: select (or clear) every row shown. */
    onToggleAll: () => void;
  };
}

function SortHeader({ label, k, sort, order, onSort, className }: { label: string; k: SortKey; sort: SortKey; order: string; onSort: (k: SortKey) => void; className?: string }) {
  const active = sort === k;
  return (
    <th className={`sortable ${className ?? ""}`} onClick={() => onSort(k)} aria-sort={active ? (order === "asc" ? "ascending" : "descending") : "none"} data-sort={k}>
      {label} {active ? (order === "asc" ? "▲" : "▼") : ""}
    </th>
  );
}

/** The runs table: status, queue, preset, task, live key metrics, created, duration, tags. */
export function RunsTable({ runs, sort, order, onSort, activeTag, onTag, activeQueue, onQueue, selection, columns = [] }: Props) {
  const now = useNow(1_000);
  const h = { sort, order, onSort };
  return (
    <div className="table-wrap">
      <table className="table" data-testid="runs-table">
        <thead>
          <tr>
            {selection && (
              <th style={{ width: 28 }}>
                <input
                  type="checkbox"
                  aria-label="select all shown"
                  checked={runs.length > 0 && runs.every((r) => selection.selected.has(r.id))}
                  onChange={selection.onToggleAll}
                  data-testid="select-all-shown"
                />
              </th>
            )}
            <SortHeader label="Run" k="name" {...h} />
            <SortHeader label="Status" k="status" {...h} />
            <SortHeader label="Queue" k="queue" {...h} />
            <th>Preset</th>
            <th>Task</th>
            {SUMMARY_COLUMNS.map((c) => (
              <th key={c.key} className="num" title={c.tooltip}>
                {c.header}
              </th>
            ))}
            {columns.map((c) => (
              <SortHeader key={c} label={c} k={c} className="num mono chosen" {...h} />
            ))}
            <th>Progress</th>
            <SortHeader label="Created" k="createdAt" {...h} />
            <SortHeader label="Duration" k="duration" className="num" {...h} />
            <th>Tags</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.id} data-run-id={r.id} className={selection?.selected.has(r.id) ? "selected" : undefined}>
              {selection && (
                <td>
                  <input
                    type="checkbox"
                    aria-label={`select ${r.name}`}
                    checked={selection.selected.has(r.id)}
                    // onClick sees the shift key; onChange is kept for React's controlled input
                    onClick={(e) => selection.onToggle(r.id, e.shiftKey)}
                    onChange={() => {}}
                    data-testid="select-run"
                  />
                </td>
              )}
              <td className="name">
                <Link href={`/runs/${r.id}`} title={r.name}>
                  {r.name}
                </Link>
              </td>
              <td>
                <StatusBadge status={r.status} /> <KindBadge kind={r.kind} />
              </td>
              <td data-column="queue" title={r.executor ? `Slurm job ${r.executor.jobId ?? "(not submitted yet)"}: ${r.executor.state ?? "—"}` : "connected workers"}>
                {onQueue ? (
                  <button type="button" className={`chip${r.queue === activeQueue ? " active" : ""}`} onClick={() => onQueue(r.queue)} title={`filter by queue ${r.queue}`}>
                    {r.queue}
                  </button>
                ) : (
                  r.queue
                )}
              </td>
              <td>{r.preset ?? <span className="muted">custom</span>}</td>
              <td className="mono">
                {r.envName}/{r.task}
              </td>
              {SUMMARY_COLUMNS.map((c) => (
                <td key={c.key} className="num">
                  {fmtNum(r.summary[c.key], c.digits)}
                </td>
              ))}
              {columns.map((c) => (
                <td key={c} className="num" data-column={c}>
                  <Cell v={r.columns?.[c]} />
                </td>
              ))}
              <td>
                <Progress done={r.progressDone} total={r.progressTotal} />
              </td>
              <td className="muted">{fmtDateTime(r.createdAt)}</td>
              <td className="num">{fmtDuration(runSeconds(r, now))}</td>
              <td>
                <span className="chips">
                  {r.tags.map((t) => (
                    <button key={t} type="button" className={`chip${t === activeTag ? " active" : ""}`} onClick={() => onTag(t)} title={`filter by tag ${t}`}>
                      {t}
                    </button>
                  ))}
                </span>
              </td>
            </tr>
          ))}
          {runs.length === 0 && (
            <tr>
              <td colSpan={(selection ? 15 : 14) + columns.length} className="empty">
                No runs match. <Link href="/runs/new">Launch one</Link>.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}
