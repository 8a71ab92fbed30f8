"use client";
import Link from "next/link";
import { Suspense, useEffect, useState } from "react";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { MAX_COMPARE_RUNS, RUN_STATUSES, type RunStatus } from "../lib/contracts/index.ts";
import { HttpError } from "../lib/api.ts";
import { useRuns } from "../lib/hooks/useRuns.ts";
import { useQueues } from "../lib/hooks/useQueues.ts";
import type { RunListParams } from "../lib/hooks/keys.ts";
import { RunsTable } from "../components/RunsTable.tsx";
import { SaveRunsView } from "../components/SaveRunsView.tsx";
import { toggleRows } from "../lib/selection.ts";
import { searchFromState, withDefaults } from "../lib/compare-state.ts";

const PAGE = 50;

/** A text box of the runs query (filter, columns): applied on Enter or when left, its error marked. */
function QueryField(p: { label: string; value: string; onChange: (v: string) => void; keys: { onKeyDown: (e: React.KeyboardEvent) => void; onBlur: () => void }; error?: string; placeholder: string; testId: string }) {
  return (
    <label className="grow">
      {p.label}
      <input
        type="text"
        className="mono"
        placeholder={p.placeholder}
        value={p.value}
        onChange={(e) => p.onChange(e.target.value)}
        {...p.keys}
        aria-invalid={p.error ? true : undefined}
        spellCheck={false}
        data-testid={p.testId}
      />
    </label>
  );
}

function RunsPage() {
  const sp = useSearchParams();
  const router = useRouter();
  const pathname = usePathname();
  const sortParam = sp.get("sort");
  const params: RunListParams = {
    status: sp.get("status") ?? undefined,
    q: sp.get("q") ?? undefined,
    tag: sp.get("tag") ?? undefined,
    queue: sp.get("queue") ?? undefined,
    // a fixed column or a chosen one (the server names a sort it cannot do)
    sort: sortParam || "createdAt",
    order: sp.get("order") === "asc" ? "asc" : "desc",
    limit: PAGE,
    offset: Number(sp.get("offset") ?? 0) || 0,
    cols: sp.get("cols") ?? undefined,
    where: sp.get("where") ?? undefined,
  };
  const columns = (params.cols ?? "").split(",").map((c) => c.trim()).filter(Boolean);
  const runs = useRuns(params);
  const queues = useQueues();

  const setParams = (patch: Record<string, string | undefined>) => {
    const next = new URLSearchParams(sp.toString());
    for (const [k, v] of Object.entries(patch)) if (v) next.set(k, v); else next.delete(k);
    if (!("offset" in patch)) next.delete("offset");
    const s = next.toString();
    router.replace(s ? `${pathname}?${s}` : pathname, { scroll: false });
  };

  // the search box updates the URL after a short pause
  const [search, setSearch] = useState(params.q ?? "");
  const q = params.q ?? "";
  useEffect(() => {
    if (search === q) return;
    const t = setTimeout(() => setParams({ q: search || undefined }), 300);
    return () => clearTimeout(t);
  });

  // the filter expression and the chosen columns apply on Enter (or when the box is left)
  const [where, setWhere] = useState(params.where ?? "");
  const [cols, setCols] = useState(params.cols ?? "");
  const fieldError = (k: "where" | "cols" | "sort") => (runs.error instanceof HttpError ? runs.error.fieldErrors[k] : undefined);
  const applyOnEnter = (k: "where" | "cols", v: string) => ({
    onKeyDown: (e: React.KeyboardEvent) => {
      if (e.key === "Enter") setParams({ [k]: v.trim() || undefined });
    },
    onBlur: () => (v.trim() || undefined) !== params[k] && setParams({ [k]: v.trim() || undefined }),
  });
  const paramError = fieldError("where") ?? fieldError("cols") ?? fieldError("sort");

  // selection for Compare: rows by id (kept across pages), or "every run matching the filter"
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [anchor, setAnchor] = useState<string | null>(null);
  const filterKey = `${params.status ?? ""}|${params.q ?? ""}|${params.tag ?? ""}|${params.where ?? ""}|${params.queue ?? ""}`;
  const [allMatching, setAllMatching] = useState<string | null>(null);
  const matchingAll = allMatching === filterKey;
  const shown = runs.data?.runs ?? [];
  const selection = {
    selected,
    onToggle: (id: string, range: boolean) => {
      setSelected(toggleRows(shown.map((r) => r.id), selected, anchor, id, range));
      setAnchor(id);
      setAllMatching(null);
    },
    onToggleAll: () => {
      const all = shown.length > 0 && shown.every((r) => selected.has(r.id));
      const next = new Set(selected);
      for (const r of shown) if (all) next.delete(r.id); else next.add(r.id);
      setSelected(next);
      setAllMatching(null);
    },
  };
  // the view as a comparison's filter (what "all matching" compares, and what a saved view keeps)
  const viewFilter = { ...(params.status ? { status: params.status.split(",") as RunStatus[] } : {}), ...(params.q ? { q: params.q } : {}), ...(params.tag ? { tag: params.tag } : {}), ...(params.where ? { where: params.where } : {}) };
  const compareHref = matchingAll
    ? `/compare?${searchFromState(withDefaults({ filter: viewFilter }))}`
    : `/compare?runs=${[...selected].slice(0, MAX_COMPARE_RUNS).join(",")}`;

  const onSort = (k: NonNullable<RunListParams["sort"]>) =>
    setParams({ sort: k, order: params.sort === k && params.order === "desc" ? "asc" : "desc" });
  const total = runs.data?.total ?? 0;
  const offset = params.offset ?? 0;

  return (
    <main>
      <div className="page-head">
        <h1>Runs</h1>
        <span className="muted">{runs.data ? `${total} run${total === 1 ? "" : "s"}` : ""}</span>
        <span className="spacer" />
        <Link href="/runs/new" className="button primary">
          New run
        </Link>
      </div>
      <div className="row" style={{ marginBottom: 12 }}>
        <input type="search" placeholder="Search name, task, preset…" value={search} onChange={(e) => setSearch(e.target.value)} style={{ width: 260 }} aria-label="search runs" data-testid="runs-search" />
        <select value={params.status ?? ""} onChange={(e) => setParams({ status: e.target.value || undefined })} aria-label="filter by status" data-testid="status-filter">
          <option value="">all statuses</option>
          {RUN_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        {(queues.data?.length ?? 0) > 1 && (
          <select value={params.queue ?? ""} onChange={(e) => setParams({ queue: e.target.value || undefined })} aria-label="filter by queue" data-testid="queue-filter">
            <option value="">all queues</option>
            {queues.data!.map((q) => (
              <option key={q.name} value={q.name}>
                {q.name}
              </option>
            ))}
          </select>
        )}
        {params.tag && (
          <span className="chip active" data-testid="tag-filter">
            tag: {params.tag}
            <button type="button" aria-label="clear tag filter" onClick={() => setParams({ tag: undefined })}>
              ×
            </button>
          </span>
        )}
        {runs.isPlaceholderData && <span className="muted small">loading…</span>}
        <span className="spacer" />
        {!paramError && <SaveRunsView filter={viewFilter} table={{ cols: columns, sort: params.sort, order: params.order }} />}
      </div>
      <div className="row runs-query" style={{ marginBottom: 12 }}>
        <QueryField label="filter" value={where} onChange={setWhere} keys={applyOnEnter("where", where)} error={fieldError("where")} placeholder="envs.task = qa2 and best.eval_coverage >= 0.9" testId="runs-where" />
        <QueryField label="columns" value={cols} onChange={setCols} keys={applyOnEnter("cols", cols)} error={fieldError("cols")} placeholder="envs.task, algo.optimizer.lr, best.eval_coverage, min.qf_loss" testId="runs-cols" />
      </div>
      {paramError && (
        <p className="field-error" role="alert" data-testid="runs-query-error">
          {fieldError("where") ? "filter" : fieldError("cols") ? "columns" : "sort"}: {paramError}
        </p>
      )}
      {(selected.size > 0 || matchingAll) && (
        <div className="row selection-bar" style={{ marginBottom: 12 }} data-testid="selection-bar">
          <span data-testid="selection-count">{matchingAll ? `all ${total} matching runs selected${total > MAX_COMPARE_RUNS ? ` (the newest ${MAX_COMPARE_RUNS} are compared)` : ""}` : `${selected.size} selected`}</span>
          {/* the compare view filters by status, search, tag and expression, not by queue: not offered under a queue */}
          {!matchingAll && !params.queue && total > shown.length && shown.every((r) => selected.has(r.id)) && (
            <button type="button" className="link" onClick={() => setAllMatching(filterKey)} data-testid="select-all-matching">
              Select all {total} matching
            </button>
          )}
          <Link href={compareHref} className={`button primary${matchingAll || selected.size >= 1 ? "" : " disabled"}`} data-testid="compare-button">
            Compare
          </Link>
          <button type="button" className="link" onClick={() => (setSelected(new Set()), setAllMatching(null))}>
            clear
          </button>
        </div>
      )}
      {paramError ? null : runs.error ? (
        <div className="form-banner">Could not load runs: {(runs.error as Error).message}</div>
      ) : runs.isLoading ? (
        <div className="empty">Loading runs…</div>
      ) : (
        <RunsTable runs={runs.data?.runs ?? []} sort={params.sort!} order={params.order!} onSort={onSort} activeTag={params.tag} onTag={(t) => setParams({ tag: t === params.tag ? undefined : t })} activeQueue={params.queue} onQueue={(q) => setParams({ queue: q === params.queue ? undefined : q })} selection={selection} columns={columns} />
      )}
      {total > PAGE && (
        <div className="row" style={{ marginTop: 10 }}>
          <button type="button" disabled={offset === 0} onClick={() => setParams({ offset: String(Math.max(0, offset - PAGE)) })}>
            ← Newer
          </button>
          <span className="muted small">
            {offset + 1}–{Math.min(total, offset + PAGE)} of {total}
          </span>
          <button type="button" disabled={offset + PAGE >= total} onClick={() => setParams({ offset: String(offset + PAGE) })}>
            Older →
          </button>
        </div>
      )}
    </main>
  );
}

export default function Page() {
  return (
    <Suspense fallback={<main className="empty">Loading…</main>}>
      <RunsPage />
    </Suspense>
  );
}
