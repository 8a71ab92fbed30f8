"use client";
/**
 * One metric panel of the compare view: a line per run, or a band per group (mean line, ±1 std or
 * min–max shaded), smoothed as the run page smooths (dense series only, lib/smoothing.ts) and each
 * run bucketed by the rule the server uses (live = reloaded). Drawn as plain SVG paths (one per
 * run) rather than Recharts: 50 overlaid runs stay cheap to redraw on every live batch. The SVG is
 * laid out at its measured pixel width (ticks stay 11 px at any panel size). Hovering shows a
 * read-out of every line's raw value at that step (never a smoothed one) with the step and wall
 * time; dragging across the plot zooms x (double-click or "reset zoom" undoes it); "log y" per panel.
 * Lines (bands) the parallel-coordinates brushes leave out are drawn faint and left out of the read-out.
 * The container exposes data-points / data-lines / data-bands / data-zoom for tests and the benchmark.
 */
import { memo, useEffect, useMemo, useRef, useState, type MouseEvent } from "react";
import { bucketSeries, type SeriesPoint, type XAxis } from "../lib/contracts/index.ts";
import type { BandKind } from "../lib/contracts/index.ts";
import type { Band } from "../lib/analysis/bands.ts";
import { smoothDense } from "../lib/smoothing.ts";
import { linearAxis, logAxis } from "../lib/chart-ticks.ts";
import { fmtDuration, fmtNum } from "../lib/format.ts";

export interface CompareLine {
  id: string;
  label: string;
  color: string;
  points: readonly SeriesPoint[];
  /** Outside the summary panels' brushes: drawn faint under the rest, left out of the read-out. */
  faint?: boolean;
}
export interface CompareBand {
  id: string;
  label: string;
  color: string;
  band: Band;
  /** Every run of the group is outside the brushes. */
  faint?: boolean;
}

interface Props {
  title: string;
  testId: string;
  lines: readonly CompareLine[];
  bands: readonly CompareBand[];
  bandKind: BandKind;
  x: XAxis;
  smoothing: number;
  height?: number;
}

/** Width before the first measurement (server render, tests without layout). */
const DEFAULT_W = 560;
const M = { l: 60, r: 10, t: 8, b: 24 };
const TICK_PX = 11;
/** Buckets per line (the server's answer is bucketed for it; live tails are bucketed the same way). */
const MAX_DRAWN = 500;

function thinIdx(n: number): number[] {
  if (n <= MAX_DRAWN) return Array.from({ length: n }, (_, i) => i);
  const every = Math.ceil(n / MAX_DRAWN);
  const out: number[] = [];
  for (let i = 0; i < n; i += every) out.push(i);
  if (out[out.length - 1] !== n - 1) out.push(n - 1);
  return out;
}

const fmtTick = (v: number) => {
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(1).replace(/\.0e/, "e");
  return String(Number(v.toPrecision(4)));
};

interface Drawn {
  id: string;
  label: string;
  color: string;
  xs: number[];
  ys: number[];
  /** The unsmoothed values at xs: what the read-out shows. */
  raw: number[];
  /** Wall seconds at xs (lines only). */
  walls?: number[];
  lo?: number[];
  hi?: number[];
  endsAt?: number | null;
  faint?: boolean;
}

/** Stroke opacity of a line (or band mean) the brushes leave out; its band's fill is scaled alike. */
const FAINT = 0.15;

/** Whether a value can be drawn: finite, and above 0 on a log axis. */
const plotted = (v: number, log: boolean) => Number.isFinite(v) && (!log || v > 0);

/** The last index with xs[i] ≤ v (−1 if none); xs ascending. */
function atOrBefore(xs: readonly number[], v: number): number {
  let lo = 0;
  let hi = xs.length - 1;
  let best = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] <= v) {
      best = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return best;
}

/** The element's content width in pixels, kept current. */
function useWidth(): [React.RefObject<HTMLDivElement | null>, number] {
  const ref = useRef<HTMLDivElement>(null);
  const [w, setW] = useState(DEFAULT_W);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setW(Math.max(200, Math.round(el.clientWidth))));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, w];
}

function CompareChartImpl({ title, testId, lines, bands, bandKind, x, smoothing, height = 220 }: Props) {
  const [box, W] = useWidth();
  const [log, setLog] = useState(false);
  const [zoom, setZoom] = useState<[number, number] | null>(null);
  const [hover, setHover] = useState<number | null>(null);
  const [drag, setDrag] = useState<[number, number] | null>(null);
  const keep = (v: number) => plotted(v, log);
  // bucketing and smoothing depend on the data, not on the pointer: a hover re-renders without them
  const { drawn, count } = useMemo(() => {
    const drawn: Drawn[] = [];
    let count = 0;
    for (const l of lines) {
      count += l.points.length;
      const finite = bucketSeries(l.points.filter((p) => plotted(p.value, log)), MAX_DRAWN, x);
      const sm = smoothDense(finite.map((p) => p.value), smoothing);
      drawn.push({ id: l.id, label: l.label, color: l.color, xs: finite.map((p) => (x === "wall" ? p.wall : p.step)), ys: sm, raw: finite.map((p) => p.value), walls: finite.map((p) => p.wall), faint: l.faint });
    }
    for (const b of bands) {
      const pts = b.band.points.filter((p) => plotted(p.mean, log));
      count += b.band.points.length;
      const mean = smoothDense(pts.map((p) => p.mean), smoothing);
      const lo = smoothDense(pts.map((p) => (bandKind === "std" ? p.mean - p.std : p.min)), smoothing);
      const hi = smoothDense(pts.map((p) => (bandKind === "std" ? p.mean + p.std : p.max)), smoothing);
      const idx = thinIdx(pts.length);
      drawn.push({ id: b.id, label: b.label, color: b.color, xs: idx.map((i) => pts[i].step), ys: idx.map((i) => mean[i]), raw: idx.map((i) => pts[i].mean), lo: idx.map((i) => lo[i]), hi: idx.map((i) => hi[i]), endsAt: b.band.endsAt, faint: b.faint });
    }
    // faint ones first, so the kept ones are drawn over them
    drawn.sort((a, b) => Number(!!b.faint) - Number(!!a.faint));
    return { drawn, count };
  }, [lines, bands, bandKind, x, smoothing, log]);
  let yLo = Infinity;
  let yHi = -Infinity;
  let xLo = Infinity;
  let xHi = -Infinity;
  for (const d of drawn) {
    if (!d.xs.length) continue;
    xLo = Math.min(xLo, d.xs[0]);
    xHi = Math.max(xHi, d.xs[d.xs.length - 1]);
  }
  if (zoom) [xLo, xHi] = zoom;
  for (const d of drawn) {
    for (const arr of [d.ys, d.lo ?? [], d.hi ?? []]) {
      arr.forEach((v, i) => {
        if (!keep(v) || d.xs[i] < xLo || d.xs[i] > xHi) return;
        yLo = Math.min(yLo, v);
        yHi = Math.max(yHi, v);
      });
    }
  }
  if (!(xHi > xLo)) {
    // one point, or none: a zero-width domain breaks the scale
    xLo = (Number.isFinite(xLo) ? xLo : 0) - 1;
    xHi = (Number.isFinite(xHi) ? xHi : 0) + 1;
  }
  const yAxis = log ? logAxis(yLo, yHi) : linearAxis(yLo, yHi);
  const xTicks = linearAxis(xLo, xHi, Math.max(2, Math.floor(W / 110))).ticks.filter((t) => t >= xLo && t <= xHi);
  const pw = W - M.l - M.r;
  const ph = height - M.t - M.b;
  const sx = (v: number) => M.l + ((v - xLo) / (xHi - xLo)) * pw;
  const ix = (px: number) => xLo + ((px - M.l) / pw) * (xHi - xLo);
  const [d0, d1] = log ? yAxis.domain.map(Math.log10) : yAxis.domain;
  const sy = (v: number) => M.t + (1 - ((log ? Math.log10(v) : v) - d0) / (d1 - d0 || 1)) * ph;
  const path = (xs: number[], ys: number[]) => {
    let s = "";
    for (let i = 0; i < xs.length; i++) if (keep(ys[i]) && xs[i] >= xLo && xs[i] <= xHi) s += `${s ? "L" : "M"}${sx(xs[i]).toFixed(1)},${sy(Math.max(ys[i], log ? yAxis.domain[0] : -Infinity)).toFixed(1)}`;
    return s;
  };
  const ends = bands.filter((b) => b.band.endsAt !== null);
  const fmtX = x === "wall" ? (v: number) => fmtDuration(v) : (v: number) => fmtNum(v, 3);
  const pxOf = (e: MouseEvent<SVGSVGElement>) => {
    const r = e.currentTarget.getBoundingClientRect();
    return Math.min(W - M.r, Math.max(M.l, ((e.clientX - r.left) * W) / (r.width || W)));
  };
  // the read-out: each visible line's raw value at its last point at or before the hovered x
  const readout =
    hover === null
      ? []
      : drawn.flatMap((d) => {
          if (d.faint) return [];
          const i = atOrBefore(d.xs, hover);
          return i < 0 ? [] : [{ id: d.id, label: d.label, color: d.color, at: d.xs[i], value: d.raw[i], wall: d.walls?.[i] }];
        });
  const readoutWall = readout.find((r) => r.wall !== undefined)?.wall;

  return (
    <section className="chart" data-testid={testId} data-points={count} data-lines={lines.length} data-bands={bands.length} data-zoom={zoom ? `${zoom[0]},${zoom[1]}` : ""} data-log={log ? "yes" : "no"}>
      <div className="chart-head">
        <h2>{title}</h2>
        {ends.length > 0 && (
          <span className="muted small" data-testid={`${testId}-band-end`}>
            {ends.map((b) => `${b.label}: band ends at step ${fmtNum(b.band.endsAt, 6)} (fewer than 2 runs beyond)`).join(" · ")}
          </span>
        )}
        {zoom && (
          <button type="button" className="link small" onClick={() => setZoom(null)} data-testid={`${testId}-unzoom`}>
            reset zoom
          </button>
        )}
        <label>
          <input type="checkbox" checked={log} onChange={(e) => setLog(e.target.checked)} data-testid={`${testId}-log`} /> log y
        </label>
      </div>
      <div ref={box} className="compare-plot">
        {count === 0 ? (
          <div className="chart-empty" style={{ height }}>
            no points yet
          </div>
        ) : (
          <svg
            viewBox={`0 0 ${W} ${height}`}
            width={W}
            height={height}
            role="img"
            aria-label={title}
            className="compare-svg"
            onMouseMove={(e) => {
              const px = pxOf(e);
              setHover(ix(px));
              if (drag) setDrag([drag[0], px]);
            }}
            onMouseLeave={() => {
              setHover(null);
              setDrag(null);
            }}
            onMouseDown={(e) => setDrag([pxOf(e), pxOf(e)])}
            onMouseUp={() => {
              if (drag && Math.abs(drag[1] - drag[0]) > 4) {
                const [a, b] = [ix(Math.min(...drag)), ix(Math.max(...drag))];
                setZoom([a, b]);
              }
              setDrag(null);
            }}
            onDoubleClick={() => setZoom(null)}
          >
            {yAxis.ticks.map((t) => (
              <g key={`y${t}`}>
                <line x1={M.l} x2={W - M.r} y1={sy(t)} y2={sy(t)} stroke="var(--grid)" strokeDasharray="3 3" />
                <text x={M.l - 4} y={sy(t) + 4} textAnchor="end" fontSize={TICK_PX} fill="var(--muted)" data-tick="y">
                  {fmtTick(t)}
                </text>
              </g>
            ))}
            {xTicks.map((t) => (
              <text key={`x${t}`} x={sx(t)} y={height - 7} textAnchor="middle" fontSize={TICK_PX} fill="var(--muted)" data-tick="x">
                {fmtX(t)}
              </text>
            ))}
            {/* nothing to draw yet (series loading, or none in range): an empty band would be the path "Z" */}
            {drawn.filter((d) => d.xs.length > 0).map((d) =>
              d.lo && d.hi ? (
                <g key={d.id} data-band={d.id} data-faint={d.faint ? "1" : "0"}>
                  <path d={`${path(d.xs, d.hi)}${path([...d.xs].reverse(), [...d.lo].reverse()).replace(/^M/, "L")}Z`} fill={d.color} fillOpacity={d.faint ? 0.18 * FAINT : 0.18} stroke="none" />
                  <path d={path(d.xs, d.ys)} fill="none" stroke={d.color} strokeWidth={1.8} strokeOpacity={d.faint ? FAINT : 1} />
                  {d.endsAt !== null && d.endsAt !== undefined && d.endsAt <= xHi && d.endsAt >= xLo && <line x1={sx(d.endsAt)} x2={sx(d.endsAt)} y1={M.t} y2={M.t + ph} stroke={d.color} strokeDasharray="4 3" />}
                </g>
              ) : (
                <path key={d.id} data-line={d.id} data-faint={d.faint ? "1" : "0"} d={path(d.xs, d.ys)} fill="none" stroke={d.color} strokeWidth={d.faint ? 1 : 1.5} strokeOpacity={d.faint ? FAINT : 1} />
              ),
            )}
            {hover !== null && <line x1={sx(hover)} x2={sx(hover)} y1={M.t} y2={M.t + ph} stroke="var(--muted)" strokeWidth={1} data-testid={`${testId}-crosshair`} />}
            {drag && <rect x={Math.min(...drag)} y={M.t} width={Math.abs(drag[1] - drag[0])} height={ph} fill="var(--accent)" fillOpacity={0.12} />}
          </svg>
        )}
        {readout.length > 0 && hover !== null && (
          <div className="readout" data-testid={`${testId}-readout`} style={{ left: Math.min(sx(hover) + 12, Math.max(0, W - 230)) }}>
            <div className="muted">
              {x === "wall" ? `wall ${fmtDuration(hover)}` : `step ${fmtNum(Math.round(hover), 6)}`}
              {x === "step" && readoutWall !== undefined ? ` · wall ${fmtDuration(readoutWall)}` : ""}
            </div>
            {readout.map((r) => (
              <div key={r.id} className="readout-row" data-run={r.id} data-value={r.value} data-at={r.at}>
                <span className="swatch" style={{ background: r.color }} />
                <span className="readout-label">{r.label}</span>
                <span className="num">{fmtNum(r.value, 4)}</span>
              </div>
            ))}
          </div>
        )}
      </div>
    </section>
  );
}

export const CompareChart = memo(CompareChartImpl);
