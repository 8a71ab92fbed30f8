"use client";
/**
 * The compare view's parallel-coordinates panel: one vertical axis per chosen column (config keys
 * or summaries, lib/analysis/summary-axes.ts) and the summary metric last; one polyline per run,
 * coloured by that metric. Dragging along an axis brushes it (a click clears it); runs outside any
 * brush are dimmed here and in the scatter. Brushes live in the view's state (URL, dashboard).
 * Hovering a line reads out its run and values. An axis is moved by dragging its title sideways,
 * or with its ← / → buttons from the keyboard (the metric stays last) and each numeric axis switches between linear and log by hand; both are
 * kept in the spec (URL, dashboard). Hand-drawn SVG: Recharts has no parallel coordinates. Lines expose data-run / data-kept and
 * axes data-top / data-bottom / data-min / data-max / data-cats for the browser tests.
 */
import { useState, type PointerEvent } from "react";
import { MAX_PCOORD_AXES, type AxisBrush, type PcoordSpec } from "../../lib/contracts/index.ts";
import { SUMMARY_KEYS_OFFERED, brushFractions, brushOf, fractionOn, metricColor, type SummaryAxis, type SummaryRun } from "../../lib/analysis/summary-axes.ts";
import { useElementWidth } from "../../lib/hooks/useElementWidth.ts";
import { fmtNum } from "../../lib/format.ts";
import { moveAxisTo, slotAt } from "../../lib/analysis/axis-order.ts";
import { RunReadOut, useHoverRun } from "./RunReadOut.tsx";


const H = 320;
const M = { l: 70, r: 70, t: 34, b: 40 };
/** Where a run without a value on an axis is drawn: just under it. */
const MISSING_DY = 18;

const tickText = (v: number) => (Math.abs(v) !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e6) ? v.toExponential(1) : String(Number(v.toPrecision(4))));
const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

interface Props {
  spec: PcoordSpec;
  runs: readonly SummaryRun[];
  axes: readonly SummaryAxis[];
  /** Runs every brush keeps. */
  kept: ReadonlySet<string>;
  configKeys: readonly string[];
  onChange: (next: PcoordSpec | undefined) => void;
}

export function ParallelCoordsPanel({ spec, runs, axes, kept, configKeys, onChange }: Props) {
  const [box, W] = useElementWidth(900, 320);
  const [drag, setDrag] = useState<{ key: string; a: number; b: number } | null>(null);
  // an axis being dragged by its title: the pointer's x where it started and now (client px)
  const [moving, setMoving] = useState<{ key: string; from: number; to: number } | null>(null);
  const { hover, handlers } = useHoverRun();
  const top = M.t;
  const bottom = H - M.b;
  const span = bottom - top;
  const xOf = (i: number) => (axes.length <= 1 ? W / 2 : M.l + (i * (W - M.l - M.r)) / (axes.length - 1));
  const yOf = (f: number | null) => (f === null ? bottom + MISSING_DY : top + (1 - f) * span);
  const metricAxis = axes[axes.length - 1];
  const brushes = spec.brushes ?? [];

  const setBrush = (key: string, b: AxisBrush | null) => {
    const rest = brushes.filter((x) => x.key !== key);
    const next = b ? [...rest, b] : rest;
    onChange({ ...spec, brushes: next.length ? next : undefined });
  };
  const fracAt = (e: PointerEvent<SVGRectElement>) => {
    const r = e.currentTarget.getBoundingClientRect();
    return Math.min(1, Math.max(0, 1 - (e.clientY - r.top) / r.height));
  };
  const onDown = (key: string) => (e: PointerEvent<SVGRectElement>) => {
    e.currentTarget.setPointerCapture(e.pointerId);
    const f = fracAt(e);
    setDrag({ key, a: f, b: f });
  };
  const onMove = (e: PointerEvent<SVGRectElement>) => {
    if (drag) setDrag({ ...drag, b: fracAt(e) });
  };
  const onUp = (axis: SummaryAxis) => (e: PointerEvent<SVGRectElement>) => {
    if (!drag) return;
    const b = fracAt(e);
    setDrag(null);
    // a click (no real drag) clears the axis's brush
    setBrush(axis.key, Math.abs(b - drag.a) < 0.01 ? null : brushOf(axis, drag.a, b));
  };

  const lines = runs.map((r) => {
    const pts = axes.map((a, i) => `${xOf(i).toFixed(2)},${yOf(fractionOn(a, r.values[a.key])).toFixed(2)}`).join(" ");
    return { r, pts, color: metricColor(metricAxis ? fractionOn(metricAxis, r.values[metricAxis.key]) : null), on: kept.has(r.id) };
  });
  // dimmed lines first, so kept ones are drawn over them
  lines.sort((a, b) => Number(a.on) - Number(b.on));

  /** Moves an axis one place left (-1) or right (+1) among the axes before the metric. */
  const move = (k: string, by: -1 | 1) => {
    const i = spec.axes.indexOf(k);
    const j = i + by;
    if (i < 0 || j < 0 || j >= spec.axes.length) return;
    const next = [...spec.axes];
    [next[i], next[j]] = [next[j], next[i]];
    onChange({ ...spec, axes: next });
  };
  const gap = axes.length <= 1 ? 0 : (W - M.l - M.r) / (axes.length - 1);
  const onTitleDown = (key: string) => (e: PointerEvent<SVGRectElement>) => {
    e.currentTarget.setPointerCapture(e.pointerId);
    setMoving({ key, from: e.clientX, to: e.clientX });
  };
  const onTitleMove = (e: PointerEvent<SVGRectElement>) => {
    if (moving) setMoving({ ...moving, to: e.clientX });
  };
  /** Dropped: the axis takes the slot nearest to where it was let go (the metric stays last). */
  const onTitleUp = (e: PointerEvent<SVGRectElement>) => {
    if (!moving) return;
    const i = spec.axes.indexOf(moving.key);
    setMoving(null);
    const to = slotAt(xOf(i) + e.clientX - moving.from, M.l, gap, spec.axes.length);
    if (i >= 0 && to !== i) onChange({ ...spec, axes: moveAxisTo(spec.axes, moving.key, to) });
  };
  const axisOfKey = new Map(axes.map((a) => [a.key, a]));
  /** The lin/log switch of a numeric axis (categorical ones have none). */
  const scaleToggle = (k: string) => {
    const a = axisOfKey.get(k);
    if (a?.kind !== "num") return null;
    const next = a.log ? "linear" : "log";
    const set = () => {
      // only the axes shown keep a scale (a metric since changed drops its own)
      const shown = [...spec.axes, spec.metric];
      const scales = [...(spec.scales ?? []).filter((x) => x.key !== k && shown.includes(x.key)), { key: k, scale: next } as const];
      onChange({ ...spec, scales });
    };
    return (
      <button type="button" className="link small" title={`draw ${k} on a ${next} scale`} onClick={set} data-testid="pcoord-scale" data-axis={k} data-scale={a.log ? "log" : "linear"}>
        {a.log ? "log" : "lin"}
      </button>
    );
  };

  const offered = [...new Set([...configKeys, ...SUMMARY_KEYS_OFFERED])].filter((k) => !spec.axes.includes(k) && k !== spec.metric);

  return (
    <section className="panel stack" style={{ gap: 8 }} data-testid="pcoord-panel" data-kept={kept.size} data-runs={runs.length}>
      <div className="chart-toolbar">
        <h2 style={{ margin: 0 }}>Parallel coordinates</h2>
        <span className="small muted" data-testid="pcoord-count">
          {kept.size} of {runs.length} runs kept
        </span>
        <label>
          metric
          <select value={spec.metric} onChange={(e) => onChange({ ...spec, metric: e.target.value, brushes: brushes.filter((b) => b.key !== spec.metric) })} data-testid="pcoord-metric">
            {SUMMARY_KEYS_OFFERED.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </label>
        <label>
          add axis
          <select value="" disabled={spec.axes.length >= MAX_PCOORD_AXES - 1} onChange={(e) => e.target.value && onChange({ ...spec, axes: [...spec.axes, e.target.value] })} data-testid="pcoord-add-axis">
            <option value="">…</option>
            {offered.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </label>
        {axisOfKey.get(spec.metric)?.kind === "num" && <span className="small muted">metric scale {scaleToggle(spec.metric)}</span>}
        {spec.axes.map((k, i) => (
          <span key={k} className="badge" data-testid="pcoord-axis-chip" data-axis={k}>
            <button type="button" className="link small" title={`move ${k} left`} disabled={i === 0} onClick={() => move(k, -1)} data-testid="pcoord-move-left" data-axis={k}>
              ←
            </button>
            {k}{" "}
            <button type="button" className="link small" title={`move ${k} right`} disabled={i === spec.axes.length - 1} onClick={() => move(k, 1)} data-testid="pcoord-move-right" data-axis={k}>
              →
            </button>{" "}
            {scaleToggle(k)}{" "}
            <button type="button" className="link small" title={`remove ${k}`} onClick={() => onChange({ ...spec, axes: spec.axes.filter((a) => a !== k), brushes: brushes.filter((b) => b.key !== k), scales: spec.scales?.some((x) => x.key !== k) ? spec.scales.filter((x) => x.key !== k) : undefined })} data-testid="pcoord-remove-axis" data-axis={k}>
              ×
            </button>
          </span>
        ))}
        {brushes.length > 0 && (
          <button type="button" className="link small" onClick={() => onChange({ ...spec, brushes: undefined })} data-testid="pcoord-clear">
            clear brushes
          </button>
        )}
        <span className="spacer" />
        <button type="button" className="link small" onClick={() => onChange(undefined)} data-testid="pcoord-close">
          close
        </button>
      </div>
      <div ref={box} style={{ width: "100%" }}>
        <svg width={W} height={H + MISSING_DY} data-testid="pcoord-svg" style={{ display: "block", touchAction: "none" }}>
          {lines.map(({ r, pts, color, on }) => (
            <polyline key={r.id} points={pts} fill="none" stroke={on ? color : "#bbb"} strokeOpacity={on ? 0.9 : 0.35} strokeWidth={hover === r.id ? 4 : on ? 2 : 1} data-testid="pcoord-line" data-run={r.id} data-kept={on ? "1" : "0"} />
          ))}
          {/* wide invisible twins take the hover: a 2 px line is hard to hit */}
          {lines.map(({ r, pts }) => (
            <polyline key={r.id} points={pts} fill="none" stroke="transparent" strokeWidth={9} {...handlers(r.id)} data-testid="pcoord-hit" data-run={r.id} />
          ))}
          {axes.map((a, i) => {
            const x = xOf(i);
            const brush = brushes.find((b) => b.key === a.key);
            const live = drag?.key === a.key ? ([Math.min(drag.a, drag.b), Math.max(drag.a, drag.b)] as [number, number]) : null;
            // a brush reaching past the axis's ends (a URL's, or the values moved) is drawn to them
            const raw = live ?? (brush ? brushFractions(a, brush) : null);
            const fr = raw && ([Math.max(0, raw[0]), Math.min(1, raw[1])] as [number, number]);
            const dx = moving?.key === a.key ? moving.to - moving.from : 0;
            const movable = i < spec.axes.length && spec.axes[i] === a.key;
            return (
              <g key={a.key} transform={dx ? `translate(${dx} 0)` : undefined} opacity={dx ? 0.7 : undefined} data-testid="pcoord-axis" data-axis={a.key} data-kind={a.kind} data-scale={a.kind === "num" && a.log ? "log" : "linear"} data-x={x.toFixed(2)} data-top={top} data-bottom={bottom} data-min={a.kind === "num" ? a.domain[0] : ""} data-max={a.kind === "num" ? a.domain[1] : ""} data-cats={a.kind === "cat" ? JSON.stringify(a.cats) : ""}>
                <line x1={x} x2={x} y1={top} y2={bottom} stroke="#555" />
                <text x={x} y={top - 14} textAnchor="middle" fontSize={12} fontWeight={i === axes.length - 1 ? 600 : 400}>
                  {clip(a.key, 28)}
                  {a.kind === "num" && a.log ? " (log)" : ""}
                </text>
                {a.kind === "num"
                  ? a.ticks.map((t) => (
                      <text key={t} x={x - 6} y={yOf(fractionOn(a, t)) + 4} textAnchor="end" fontSize={11} fill="#555">
                        {tickText(t)}
                      </text>
                    ))
                  : a.cats.map((c, j) => (
                      <text key={c} x={x - 6} y={yOf((j + 0.5) / a.cats.length) + 4} textAnchor="end" fontSize={11} fill="#555">
                        {clip(c, 14)}
                      </text>
                    ))}
                {runs.some((r) => fractionOn(a, r.values[a.key]) === null) && (
                  <text x={x - 6} y={bottom + MISSING_DY + 4} textAnchor="end" fontSize={11} fill="#999" data-testid="pcoord-none">
                    none
                  </text>
                )}
                {fr && <rect x={x - 7} width={14} y={yOf(fr[1])} height={Math.max(1, (fr[1] - fr[0]) * span)} fill="#1f6feb" fillOpacity={0.25} stroke="#1f6feb" data-testid="pcoord-brush" data-axis={a.key} />}
                <rect x={x - 12} width={24} y={top} height={span} fill="transparent" style={{ cursor: "ns-resize" }} onPointerDown={onDown(a.key)} onPointerMove={onMove} onPointerUp={onUp(a)} data-testid="pcoord-brush-area" data-axis={a.key} />
                {/* the title is the handle that drags the axis sideways (the ← / → buttons do the same from the keyboard) */}
                {movable && (
                  <rect x={x - Math.min(gap / 2 || 60, 90)} width={Math.min(gap || 120, 180)} y={0} height={top - 2} fill="transparent" style={{ cursor: moving ? "grabbing" : "grab" }} onPointerDown={onTitleDown(a.key)} onPointerMove={onTitleMove} onPointerUp={onTitleUp} onPointerCancel={() => setMoving(null)} data-testid="pcoord-axis-handle" data-axis={a.key}>
                    <title>drag to move {a.key}</title>
                  </rect>
                )}
              </g>
            );
          })}
        </svg>
      </div>
      <RunReadOut run={runs.find((r) => r.id === hover)} keys={axes.map((a) => a.key)} testId="pcoord-readout" hint="hover a line to read its run" />
      {metricAxis?.kind === "num" && (
        <div className="small muted">
          colour: {spec.metric} from {fmtNum(metricAxis.domain[0])} (blue) to {fmtNum(metricAxis.domain[1])} (orange)
        </div>
      )}
    </section>
  );
}
