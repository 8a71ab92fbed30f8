"use client";
/**
 * The compare view's runs-table panel (a dashboard's saved runs view): the comparison's runs (its
 * run list, or its filter with the filter expression) in the runs table with the chosen columns
 * and sort, live like the runs page (the same list query, kept fresh by useRunsState). Columns
 * are edited here (applied on Enter or when the box is left); a header click sorts.
 */
import { useState } from "react";
import { MAX_COMPARE_RUNS, type RunsTableSpec } from "../../lib/contracts/index.ts";
import { HttpError } from "../../lib/api.ts";
import { filterQuery, type CompareState } from "../../lib/compare-state.ts";
import { useRuns } from "../../lib/hooks/useRuns.ts";
import type { RunListParams } from "../../lib/hooks/keys.ts";
import { RunsTable } from "../RunsTable.tsx";

interface Props {
  state: CompareState;
  spec: RunsTableSpec;
  onChange: (next: RunsTableSpec | undefined) => void;
  /** A tag chip clicked (filters the comparison by it when it is a filter). */
  onTag?: (tag: string) => void;
}

export function RunsTablePanel({ state, spec, onChange, onTag }: Props) {
  const sort = spec.sort ?? "createdAt";
  const order = spec.order ?? "desc";
  const base: RunListParams = state.filter ? { ...filterQuery(state.filter) } : { ids: (state.runs ?? []).join(","), limit: MAX_COMPARE_RUNS };
  const params: RunListParams = { ...base, sort, order, cols: spec.cols.length ? spec.cols.join(",") : undefined };
  const runs = useRuns(params);
  const [cols, setCols] = useState(spec.cols.join(", "));
  const apply = () => {
    const next = cols.split(",").map((c) => c.trim()).filter(Boolean);
    if (next.join(",") !== spec.cols.join(",")) onChange({ ...spec, cols: next });
  };
  const fieldError = runs.error instanceof HttpError ? (runs.error.fieldErrors.cols ?? runs.error.fieldErrors.sort ?? runs.error.fieldErrors.where) : undefined;
  return (
    <section className="panel stack" style={{ gap: 8 }} data-testid="runs-table-panel" data-cols={spec.cols.join(",")}>
      <div className="chart-toolbar">
        <h2 style={{ margin: 0 }}>Runs</h2>
        <label className="grow">
          columns
          <input
            type="text"
            className="mono"
            style={{ minWidth: 420 }}
            value={cols}
            placeholder="envs.task, algo.optimizer.lr, best.eval_coverage"
            onChange={(e) => setCols(e.target.value)}
            onKeyDown={(e) => e.key === "Enter" && apply()}
            onBlur={apply}
            aria-invalid={fieldError ? true : undefined}
            spellCheck={false}
            data-testid="table-panel-cols"
          />
        </label>
        <button type="button" className="link small" onClick={() => onChange(undefined)} data-testid="table-panel-close">
          close
        </button>
      </div>
      {fieldError ? (
        <p className="field-error" role="alert">
          {fieldError}
        </p>
      ) : runs.error ? (
        <div className="error-text small">Could not load runs: {(runs.error as Error).message}</div>
      ) : runs.isLoading ? (
        <div className="empty">Loading runs…</div>
      ) : (
        <RunsTable
          runs={runs.data?.runs ?? []}
          sort={sort}
          order={order}
          onSort={(k) => onChange({ ...spec, sort: k, order: sort === k && order === "desc" ? "asc" : "desc" })}
          activeTag={state.filter?.tag}
          onTag={onTag ?? (() => {})}
          columns={spec.cols}
        />
      )}
    </section>
  );
}
