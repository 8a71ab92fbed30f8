"use client";
/**
 * One metric panel of the compare view: a line per run, or a band per group (mean line, ±1 std or
 * min–max shaded), smoothed as the run page smooths (dense series only, lib/smoothing.ts) and each
 * run bucketed by the rule the server uses (live = reloaded). Drawn as plain SVG paths (one
 * per run) rather than Recharts: 50 overlaid runs stay cheap to redraw on every live batch.
 * The container exposes data-points / data-lines / data-bands for tests and the benchmark.
 */
import { memo } from "react";
import { bucketSeries, type SeriesPoint, type XAxis } from "../lib/contracts/index.ts";
import type { BandKind } from "../lib/contracts/index.ts";
import type { Band } from "../lib/analysis/bands.ts";
import { smoothDense } from "../lib/smoothing.ts";
import { linearAxis } from "../lib/chart-ticks.ts";
import { fmtDuration, fmtNum } from "../lib/format.ts";

export interface CompareLine {
  id: string;
  label: string;
  color: string;
  points: readonly SeriesPoint[];
}
export interface CompareBand {
  id: string;
  label: string;
  color: string;
  band: Band;
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

const W = 560;
const M = { l: 56, r: 10, t: 8, b: 22 };
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
  lo?: number[];
  hi?: number[];
  endsAt?: number | null;
}

function CompareChartImpl({ title, testId, lines, bands, bandKind, x, smoothing, height = 220 }: Props) {
  const drawn: Drawn[] = [];
  let count = 0;
  for (const l of lines) {
    count += l.points.length;
    const finite = bucketSeries(l.points.filter((p) => Number.isFinite(p.value)), MAX_DRAWN, x);
    const sm = smoothDense(finite.map((p) => p.value), smoothing);
    drawn.push({ id: l.id, label: l.label, color: l.color, xs: finite.map((p) => (x === "wall" ? p.wall : p.step)), ys: sm });
  }
  for (const b of bands) {
    const pts = b.band.points;
    count += pts.length;
    const mean = smoothDense(pts.map((p) => p.mean), smoothing);
    const lo = smoothDense(pts.map((p) => (bandKind === "std" ? p.mean - p.std : p.min)), smoothing);
    const hi = smoothDense(pts.map((p) => (bandKind === "std" ? p.mean + p.std : p.max)), smoothing);
    const idx = thinIdx(pts.length);
    drawn.push({ id: b.id, label: b.label, color: b.color, xs: idx.map((i) => pts[i].step), ys: idx.map((i) => mean[i]), lo: idx.map((i) => lo[i]), hi: idx.map((i) => hi[i]), endsAt: b.band.endsAt });
  }
  let yLo = Infinity;
  let yHi = -Infinity;
  let xLo = Infinity;
  let xHi = -Infinity;
  for (const d of drawn) {
    for (const arr of [d.ys, d.lo ?? [], d.hi ?? []]) {
      for (const v of arr) {
        if (!Number.isFinite(v)) continue;
        yLo = Math.min(yLo, v);
        yHi = Math.max(yHi, v);
      }
    }
    if (!d.xs.length) continue;
    xLo = Math.min(xLo, d.xs[0]);
    xHi = Math.max(xHi, d.xs[d.xs.length - 1]);
  }
  if (!(xHi > xLo)) {
    // one point, or none: a zero-width domain breaks the scale
    xLo = (Number.isFinite(xLo) ? xLo : 0) - 1;
    xHi = (Number.isFinite(xHi) ? xHi : 0) + 1;
  }
  const yAxis = linearAxis(yLo, yHi);
  const xTicks = linearAxis(xLo, xHi, 5).ticks.filter((t) => t >= xLo && t <= xHi);
  const pw = W - M.l - M.r;
  const ph = height - M.t - M.b;
  const sx = (v: number) => M.l + ((v - xLo) / (xHi - xLo)) * pw;
  const [d0, d1] = yAxis.domain;
  const sy = (v: number) => M.t + (1 - (v - d0) / (d1 - d0 || 1)) * ph;
  const path = (xs: number[], ys: number[]) => {
    let s = "";
    for (let i = 0; i < xs.length; i++) if (Number.isFinite(ys[i])) s += `${s ? "L" : "M"}${sx(xs[i]).toFixed(1)},${sy(ys[i]).toFixed(1)}`;
    return s;
  };
  const ends = bands.filter((b) => b.band.endsAt !== null);
  const fmtX = x === "wall" ? (v: number) => fmtDuration(v) : (v: number) => fmtNum(v, 3);

  return (
    <section className="chart" data-testid={testId} data-points={count} data-lines={lines.length} data-bands={bands.length}>
      <div className="chart-head">
        <h2>{title}</h2>
        {ends.length > 0 && (
          <span className="muted small" data-testid={`${testId}-band-end`}>
            {ends.map((b) => `${b.label}: band ends at step ${fmtNum(b.band.endsAt, 6)} (fewer than 2 runs beyond)`).join(" · ")}
          </span>
        )}
      </div>
      {count === 0 ? (
        <div className="chart-empty" style={{ height }}>
          no points yet
        </div>
      ) : (
        <svg viewBox={`0 0 ${W} ${height}`} width="100%" role="img" aria-label={title} className="compare-svg">
          {yAxis.ticks.map((t) => (
            <g key={`y${t}`}>
              <line x1={M.l} x2={W - M.r} y1={sy(t)} y2={sy(t)} stroke="var(--grid)" strokeDasharray="3 3" />
              <text x={M.l - 4} y={sy(t) + 3} textAnchor="end" fontSize={10} fill="var(--muted)">
                {fmtTick(t)}
              </text>
            </g>
          ))}
          {xTicks.map((t) => (
            <text key={`x${t}`} x={sx(t)} y={height - 6} textAnchor="middle" fontSize={10} fill="var(--muted)">
              {fmtX(t)}
            </text>
          ))}
          {/* nothing to draw yet (series loading, or none in range): an empty band would be the path "Z" */}
          {drawn.filter((d) => d.xs.length > 0).map((d) =>
            d.lo && d.hi ? (
              <g key={d.id} data-band={d.id}>
                <path d={`${path(d.xs, d.hi)}${path([...d.xs].reverse(), [...d.lo].reverse()).replace(/^M/, "L")}Z`} fill={d.color} fillOpacity={0.18} stroke="none" />
                <path d={path(d.xs, d.ys)} fill="none" stroke={d.color} strokeWidth={1.8}>
                  <title>{d.label}</title>
                </path>
                {d.endsAt !== null && d.endsAt !== undefined && d.endsAt <= xHi && <line x1={sx(d.endsAt)} x2={sx(d.endsAt)} y1={M.t} y2={M.t + ph} stroke={d.color} strokeDasharray="4 3" />}
              </g>
            ) : (
              <path key={d.id} data-line={d.id} d={path(d.xs, d.ys)} fill="none" stroke={d.color} strokeWidth={1.5}>
                <title>{d.label}</title>
              </path>
            ),
          )}
        </svg>
      )}
    </section>
  );
}

export const CompareChart = memo(CompareChartImpl);
