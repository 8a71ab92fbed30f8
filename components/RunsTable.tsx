"use client";
import Link from "next/link";
import type { RunDto } from "../lib/contracts/index.ts";
import type { RunListParams } from "../lib/hooks/keys.ts";
import { fmtDateTime, fmtDuration, fmtNum, runSeconds } from "../lib/format.ts";
import { useNow } from "../lib/hooks/useNow.ts";
import { KindBadge, Progress, StatusBadge } from "./Badges.tsx";

type SortKey = NonNullable<RunListParams["sort"]>;

interface Props {
  runs: RunDto[];
  sort: SortKey;
  order: "asc" | "desc";
  onSort: (key: SortKey) => void;
  activeTag?: string;
  onTag: (tag: string) => void;
}

function SortHeader({ label, k, sort, order, onSort, className }: { label: string; k: SortKey; sort: SortKey; order: string; onSort: (k: SortKey) => void; className?: string }) {
  const active = sort === k;
  return (
    <th className={`sortable ${className ?? ""}`} onClick={() => onSort(k)} aria-sort={active ? (order === "asc" ? "ascending" : "descending") : "none"} data-sort={k}>
      {label} {active ? (order === "asc" ? "▲" : "▼") : ""}
    </th>
  );
}

/** The runs table: status, preset, task, live key metrics, created, duration, tags. */
export function RunsTable({ runs, sort, order, onSort, activeTag, onTag }: Props) {
  const now = useNow(1_000);
  const h = { sort, order, onSort };
  return (
    <div className="table-wrap">
      <table className="table" data-testid="runs-table">
        <thead>
          <tr>
            <SortHeader label="Run" k="name" {...h} />
            <SortHeader label="Status" k="status" {...h} />
            <th>Preset</th>
            <th>Task</th>
            <th className="num" title="latest TD loss">TD loss</th>
            <th className="num">Eval return</th>
            <th className="num">Coverage</th>
            <th className="num">F1</th>
            <th className="num" title="transitions per second">Trans/s</th>
            <th>Progress</th>
            <SortHeader label="Created" k="createdAt" {...h} />
            <SortHeader label="Duration" k="duration" className="num" {...h} />
            <th>Tags</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.id} data-run-id={r.id}>
              <td className="name">
                <Link href={`/runs/${r.id}`} title={r.name}>
                  {r.name}
                </Link>
              </td>
              <td>
                <StatusBadge status={r.status} /> <KindBadge kind={r.kind} />
              </td>
              <td>{r.preset ?? <span className="muted">custom</span>}</td>
              <td className="mono">
                {r.envName}/{r.task}
              </td>
              <td className="num">{fmtNum(r.summary.qf_loss)}</td>
              <td className="num">{fmtNum(r.summary.eval_return, 3)}</td>
              <td className="num">{fmtNum(r.summary.eval_coverage, 3)}</td>
              <td className="num">{fmtNum(r.summary.eval_f1, 3)}</td>
              <td className="num">{fmtNum(r.summary.transitions_per_s, 3)}</td>
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
              <td colSpan={13} className="empty">
                No runs match. <Link href="/runs/new">Launch one</Link>.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}
