"use client";
/**
 * The compare view (used by /compare and /dashboards/:id): metric panels with a line per run or,
 * grouped by a config key, a band per group; a legend with hide/solo; the config diff. Its state
 * is owned by the page (the URL, or a dashboard being edited) and changed through `onChange`.
 * Runs still training stream in: each active run is subscribed like on its own page.
 */
import Link from "next/link";
import { memo, useMemo, type ReactNode } from "react";
import { ACTIVE_STATUSES, type SeriesPoint } from "../lib/contracts/index.ts";
import { alignSteps, groupBand, type Band } from "../lib/analysis/bands.ts";
import { configDiff, groupBy } from "../lib/analysis/config-diff.ts";
import type { CompareState } from "../lib/compare-state.ts";
import { METRIC_TITLES } from "../lib/metric-panels.ts";
import { COMPARE_WIDTH, useCompareRuns } from "../lib/hooks/useCompareRuns.ts";
import { useRunStream } from "../lib/hooks/useRunStream.ts";
import { fmtNum } from "../lib/format.ts";
import { CompareChart, type CompareBand, type CompareLine } from "./CompareChart.tsx";
import { ConfigDiffTable } from "./ConfigDiffTable.tsx";
import { SweepOverlay } from "./sweeps/SweepOverlay.tsx";
import { ExportMenu } from "./ExportMenu.tsx";
import { SummaryPanels } from "./compare/SummaryPanels.tsx";
import { RunsTablePanel } from "./compare/RunsTablePanel.tsx";
import { useSummaryRows } from "../lib/hooks/useSummaryRows.ts";

/** The summary both new panels start on: what a retrieval run is judged by. */
const DEFAULT_SUMMARY = "best.eval_coverage";

/** Distinct colours for any number of runs: hues a golden angle apart. */
export const runColor = (i: number) => `hsl(${Math.round((i * 137.508) % 360)} 62% 46%)`;
const EMPTY: SeriesPoint[] = [];

/** Subscribes one active run's live batches into the cache (a component, so one hook per run). */
const RunFeed = memo(function RunFeed({ id }: { id: string }) {
  useRunStream(id);
  return null;
});

interface LegendEntry {
  id: string;
  label: string;
  color: string;
  runs?: number;
  /** Of `runs`, those the brushes keep (in the group's band and statistics). */
  kept?: number;
  /** Left out by the parallel-coordinates brushes (drawn faint). */
  faint?: boolean;
}

function Legend({ entries, hidden, onChange }: { entries: LegendEntry[]; hidden: Set<string>; onChange: (hidden: string[]) => void }) {
  const ids = entries.map((e) => e.id);
  const toggle = (id: string) => onChange(hidden.has(id) ? [...hidden].filter((h) => h !== id) : [...hidden, id]);
  const solo = (id: string) => {
    const soloed = ids.every((x) => (x === id) !== hidden.has(x));
    onChange(soloed ? [] : ids.filter((x) => x !== id));
  };
  return (
    <div className="legend" data-testid="compare-legend">
      {entries.map((e) => (
        <span
          key={e.id}
          className={`legend-entry${hidden.has(e.id) ? " hidden" : ""}`}
          style={e.faint && !hidden.has(e.id) ? { opacity: 0.4 } : undefined}
          data-testid="legend-item"
          data-id={e.id}
          data-hidden={hidden.has(e.id) ? "1" : "0"}
          data-faint={e.faint ? "1" : "0"}
        >
          <button type="button" className="link" onClick={() => toggle(e.id)} title={hidden.has(e.id) ? "show" : e.faint ? "outside the brushes; hide" : "hide"} data-testid="legend-toggle">
            <span className="swatch" style={{ background: e.color }} />
            {e.label}
            {e.runs !== undefined && <span className="muted small"> (n = {e.kept !== undefined && e.kept !== e.runs ? `${e.kept} of ${e.runs}` : e.runs})</span>}
          </button>
          <button type="button" className="link small" onClick={() => solo(e.id)} data-testid="legend-solo">
            solo
          </button>
        </span>
      ))}
    </div>
  );
}

interface GroupRow {
  id: string;
  label: string;
  /** The band over the runs the brushes keep (all of them when none is kept: drawn faint). */
  band: Band;
  /** The group's runs in the statistics, and all of its runs. */
  kept: number;
  of: number;
  /** The run drawn as a line instead of a band (one run in it). */
  lineRun?: string;
}

/** "n = 3 of 5, 2 brushed out": what the statistics are over, once a brush leaves runs out. */
function bandCaption(rows: readonly GroupRow[]): string | null {
  const kept = rows.reduce((a, r) => a + r.kept, 0);
  const of = rows.reduce((a, r) => a + r.of, 0);
  return kept === of ? null : `n = ${kept} of ${of}, ${of - kept} brushed out in the parallel coordinates`;
}

function BandSummary({ testId, rows }: { testId: string; rows: GroupRow[] }) {
  const caption = bandCaption(rows);
  return (
    <table className="table small band-summary" data-testid={testId}>
      {caption && (
        <caption className="small muted" style={{ captionSide: "top", textAlign: "left" }} data-testid="band-caption">
          {caption}
        </caption>
      )}
      <thead>
        <tr>
          <th>group</th>
          <th className="num">runs</th>
          <th className="num">last shared step</th>
          <th className="num">mean</th>
          <th className="num">std</th>
          <th className="num">min</th>
          <th className="num">max</th>
          <th className="num">band ends</th>
        </tr>
      </thead>
      <tbody>
        {rows.map(({ id, label, band: drawn, kept, of }) => {
          // a group the brushes leave out entirely has no statistics (its faint band is context)
          const band = kept ? drawn : { points: [], runs: 0, endsAt: null };
          const p = band.points[band.points.length - 1];
          return (
            <tr key={id} data-group={id} data-runs={band.runs} data-of={of} data-step={p?.step ?? ""} data-mean={p?.mean ?? ""} data-std={p?.std ?? ""} data-min={p?.min ?? ""} data-max={p?.max ?? ""} data-ends-at={band.endsAt ?? ""}>
              <td>{label}</td>
              <td className="num">{kept === of ? band.runs : `${kept} of ${of}`}</td>
              <td className="num">{p ? p.step : "—"}</td>
              <td className="num">{fmtNum(p?.mean)}</td>
              <td className="num">{fmtNum(p?.std)}</td>
              <td className="num">{fmtNum(p?.min)}</td>
              <td className="num">{fmtNum(p?.max)}</td>
              <td className="num">{band.endsAt === null ? "—" : band.endsAt}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** A group's label as shown: the value of the key (strings without their JSON quotes). */
const groupLabel = (key: string, json: string) => `${key} = ${/^"(.*)"$/.exec(json)?.[1] ?? json}`;

export function CompareView({ state, onChange, actions }: { state: CompareState; onChange: (next: CompareState) => void; actions?: ReactNode }) {
  const grouped = !!state.group;
  // bands are aligned by step: a grouped view always has step on x
  const x = grouped ? "step" : state.x;
  const data = useCompareRuns(state, x);
  const { ids, runs, metrics } = data;
  const set = (patch: Partial<CompareState>) => onChange({ ...state, ...patch });

  const configs = useMemo(() => {
    const out: Record<string, unknown> = {};
    ids.forEach((id, i) => {
      if (runs[i]) out[id] = runs[i]!.config;
    });
    return out;
  }, [ids, runs]);
  const diff = useMemo(() => configDiff(configs), [configs]);
  // the seed is what a group's runs differ by: never a grouping key
  const groupKeys = diff.map((r) => r.key).filter((k) => k !== "seed" && !k.endsWith(".seed"));
  const groups = useMemo(() => (state.group ? [...groupBy(configs, state.group)] : []), [configs, state.group]);
  const hidden = useMemo(() => new Set(state.hidden), [state.hidden]);
  const named = ids.map((id, i) => ({ id, name: runs[i]?.name ?? id }));
  const seriesOf = (id: string, key: string) => metrics[ids.indexOf(id)]?.series[key] ?? EMPTY;

  // the summary panels leave out what the legend hides: a run, or (grouped) its group
  const hiddenGroupRuns = new Set(groups.flatMap(([label, gids]) => (hidden.has(`g:${label}`) ? gids : [])));
  const summaryRuns = ids.flatMap((id, i) => (runs[i] && !hidden.has(id) && !hiddenGroupRuns.has(id) ? [{ id, name: runs[i]!.name, config: runs[i]!.config, color: runColor(i) }] : []));
  const summary = useSummaryRows(state, summaryRuns);
  // brushed out: a run outside the brushes, a group none of whose runs is inside them. Drawn faint,
  // not hidden: the kept runs are read against the rest, as on the parallel-coordinates panel
  // (only once the summaries are in: before, a brush on a summary would leave every run out)
  const brushed = summary.brushed && summary.ready;
  const faintRun = (id: string) => brushed && !summary.kept.has(id);
  const faintGroup = (gids: readonly string[]) => brushed && gids.every((g) => !summary.kept.has(g));
  /** A group's runs in its band and statistics: those the brushes keep. */
  const keptOf = (gids: readonly string[]) => (brushed ? gids.filter((g) => summary.kept.has(g)) : [...gids]);

  const legend: LegendEntry[] = grouped
    ? groups.map(([label, gids], i) => ({ id: `g:${label}`, label: groupLabel(state.group!, label), color: runColor(i), runs: gids.length, kept: keptOf(gids).length, faint: faintGroup(gids) }))
    : named.map((r, i) => ({ id: r.id, label: r.name, color: runColor(i), faint: faintRun(r.id) }));

  const panels = state.panels.map((key) => {
    if (!grouped) {
      const lines: CompareLine[] = named.flatMap((r, i) => (hidden.has(r.id) ? [] : [{ id: r.id, label: r.name, color: runColor(i), points: seriesOf(r.id, key), faint: faintRun(r.id) }]));
      return { key, lines, bands: [] as CompareBand[], rows: [] as GroupRow[] };
    }
    const rows: GroupRow[] = groups.flatMap(([label, gids]) => {
      const id = `g:${label}`;
      if (hidden.has(id)) return [];
      const kept = keptOf(gids);
      const used = kept.length ? kept : gids;
      // one run's "band" is its own values (no spread): the table reads them, the chart draws its line
      const band = groupBand(alignSteps(used.map((g) => seriesOf(g, key)), COMPARE_WIDTH), Math.min(2, used.length));
      return [{ id, label: groupLabel(state.group!, label), band, kept: kept.length, of: gids.length, lineRun: used.length === 1 ? used[0] : undefined }];
    });
    const colorOf = (id: string) => legend.find((l) => l.id === id)!.color;
    const faintOf = (id: string) => legend.find((l) => l.id === id)!.faint;
    // a group down to one run has no band: its line is drawn instead
    const bands: CompareBand[] = rows.filter((r) => !r.lineRun).map((r) => ({ id: r.id, label: r.label, color: colorOf(r.id), band: r.band, faint: faintOf(r.id) }));
    const lines: CompareLine[] = rows.flatMap((r) => (r.lineRun ? [{ id: r.id, label: r.label, color: colorOf(r.id), points: seriesOf(r.lineRun, key), faint: faintOf(r.id) }] : []));
    return { key, lines, bands, rows };
  });

  const active = runs.filter((r) => r && ACTIVE_STATUSES.includes(r.status)).map((r) => r!.id);
  const allKeys = [...METRIC_TITLES.keys()];

  return (
    <div className="stack" data-testid="compare-view" data-runs={ids.length} data-loading={data.loading ? "1" : "0"}>
      {active.map((id) => (
        <RunFeed key={id} id={id} />
      ))}
      <div className="chart-toolbar panel">
        <span data-testid="compare-count" data-listed={data.listed ? "1" : "0"}>
          {!data.listed ? "loading runs…" : `${ids.length} run${ids.length === 1 ? "" : "s"}${state.filter ? " matching the filter" : ""}`}
        </span>
        {active.length > 0 && <span className="badge ok">{active.length} streaming</span>}
        <label>
          group by
          <select value={state.group ?? ""} onChange={(e) => set({ group: e.target.value || undefined, hidden: [] })} data-testid="group-by">
            <option value="">none (a line per run)</option>
            {[...new Set([...(state.group ? [state.group] : []), ...groupKeys])].map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </label>
        {grouped && (
          <label>
            band
            <select value={state.band} onChange={(e) => set({ band: e.target.value as CompareState["band"] })} data-testid="band-kind">
              <option value="std">mean ± 1 std</option>
              <option value="minmax">min – max</option>
            </select>
          </label>
        )}
        <label>
          smoothing
          <input type="range" min={0} max={0.99} step={0.01} value={state.smoothing} onChange={(e) => set({ smoothing: Number(e.target.value) })} data-testid="smoothing" />
          <span className="mono" style={{ width: 32 }}>
            {state.smoothing.toFixed(2)}
          </span>
        </label>
        <label title={grouped ? "bands are aligned by step" : undefined}>
          x axis
          <select value={x} disabled={grouped} onChange={(e) => set({ x: e.target.value as CompareState["x"] })} data-testid="x-axis">
            <option value="step">step</option>
            <option value="wall">wall time</option>
          </select>
        </label>
        <details className="panel-picker">
          <summary>panels ({state.panels.length})</summary>
          <div className="stack" style={{ gap: 4 }}>
            {allKeys.map((k) => (
              <label key={k}>
                <input
                  type="checkbox"
                  checked={state.panels.includes(k)}
                  disabled={state.panels.length === 1 && state.panels.includes(k)}
                  onChange={(e) => set({ panels: e.target.checked ? allKeys.filter((a) => a === k || state.panels.includes(a)) : state.panels.filter((p) => p !== k) })}
                  data-testid={`panel-${k}`}
                />{" "}
                {METRIC_TITLES.get(k)}
              </label>
            ))}
          </div>
        </details>
        <label title="config keys → a summary metric, one line per run">
          <input type="checkbox" checked={!!state.pcoord} onChange={(e) => set({ pcoord: e.target.checked ? { axes: groupKeys.slice(0, 3), metric: DEFAULT_SUMMARY } : undefined })} data-testid="show-pcoord" />
          parallel coordinates
        </label>
        <label title="a config key or summary against a summary, one point per run">
          <input type="checkbox" checked={!!state.scatter} onChange={(e) => set({ scatter: e.target.checked ? { x: groupKeys[0] ?? "last.qf_loss", y: DEFAULT_SUMMARY } : undefined })} data-testid="show-scatter" />
          scatter
        </label>
        <label title="the runs table with chosen columns (config keys, summaries), saved with the dashboard">
          <input type="checkbox" checked={!!state.table} onChange={(e) => set({ table: e.target.checked ? { cols: [...groupKeys.slice(0, 3), DEFAULT_SUMMARY] } : undefined })} data-testid="show-runs-table" />
          runs table
        </label>
        {data.loading && <span className="muted small">loading…</span>}
        {data.error && <span className="error-text small">{data.error.message}</span>}
        <span className="spacer" />
        {ids.length > 0 && <ExportMenu runIds={ids} />}
        {actions}
      </div>
      {!data.listed ? (
        <div className="empty" data-testid="compare-loading">
          Loading runs…
        </div>
      ) : ids.length === 0 && !data.loading ? (
        <div className="empty" data-testid="compare-empty">
          {state.filter ? "No runs match the filter." : "No runs to compare."} Select runs in the <Link href="/">runs table</Link>.
        </div>
      ) : (
        <>
          <Legend entries={legend} hidden={hidden} onChange={(h) => set({ hidden: h })} />
          {/* a saved runs view's table comes first: it is what the dashboard was saved for */}
          {state.table && <RunsTablePanel state={state} spec={state.table} onChange={(t) => set({ table: t })} onTag={state.filter ? (tag) => set({ filter: { ...state.filter, tag: tag === state.filter?.tag ? undefined : tag } }) : undefined} />}
          <div className="charts">
            {panels.map((p) => (
              <div key={p.key} className="stack" style={{ gap: 6 }} data-testid={`compare-panel-${p.key}`}>
                <CompareChart testId={`compare-chart-${p.key}`} title={METRIC_TITLES.get(p.key) ?? p.key} lines={p.lines} bands={p.bands} bandKind={state.band} x={x} smoothing={state.smoothing} />
                {grouped && (
                  <div className="table-scroll">
                    <BandSummary testId={`band-summary-${p.key}`} rows={p.rows} />
                  </div>
                )}
              </div>
            ))}
          </div>
          <SummaryPanels state={state} summary={summary} colors={new Map(summaryRuns.map((r) => [r.id, r.color]))} configKeys={groupKeys} set={set} />
          <SweepOverlay runs={named} />
          <section className="panel">
            <h2>Config differences</h2>
            <ConfigDiffTable rows={diff} runs={named.filter((r) => r.id in configs)} />
          </section>
        </>
      )}
    </div>
  );
}
