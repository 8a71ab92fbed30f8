"use client";
/**
 * One chart per metric group (Recharts). Each series is bucketed by the one rule the server uses
 * (lib/contracts/series-buckets.ts), so a live chart draws what a reload draws; a bucket's min–max
 * is a light envelope under the line. A series of at least SMOOTH_FROM points is drawn twice, the
 * raw curve faint behind the debiased-EMA smoothed one; a sparser one (evaluations, imports) is
 * drawn raw, since an average over a handful of points misplaces its last value. The read-out
 * gives raw values only. x is the step or the wall time; the y axis can be logarithmic. The
 * container exposes data-points (points held), data-drawn (points drawn) and data-last-wall (wall
 * seconds of the newest point) so tests and the latency benchmark can watch it grow.
 */
import { memo, useState } from "react";
import { Area, CartesianGrid, ComposedChart, Line, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { bucketSeries, type SeriesPoint } from "../lib/contracts/index.ts";
import type { XAxis as XAxisKind } from "../lib/contracts/index.ts";
import { SMOOTH_FROM, smoothDense } from "../lib/smoothing.ts";
import { fmtDuration, fmtNum } from "../lib/format.ts";
import { linearAxis, logAxis } from "../lib/chart-ticks.ts";
import type { ChartSeries } from "../lib/metric-panels.ts";

interface Props {
  title: string;
  /** data-testid of the container, e.g. "chart-qf_loss". */
  testId: string;
  series: readonly ChartSeries[];
  data: Record<string, SeriesPoint[]> | undefined;
  x: XAxisKind;
  smoothing: number;
  /** Buckets across the chart: the width the page asked the server for. */
  buckets?: number;
  height?: number;
}

interface Row {
  x: number;
  raw: number;
  smooth: number;
  /** The bucket's [min, max]; equal ends for a lone point. */
  range: [number, number];
}

const rangeOf = (r: Row) => r.range;

/** Short tick labels: 0.25, 1200, 8e-4, 1.5e+6. */
function fmtTick(v: number): string {
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(1).replace(/\.0e/, "e");
  return String(Number(v.toPrecision(4)));
}

// Props handed to Recharts are module constants where possible: a new function or object on every
// render makes its selectors recompute, and the charts re-render on every live batch.
const MARGIN = { top: 6, right: 12, bottom: 0, left: 0 };
const MARGIN_RIGHT_AXIS = { top: 6, right: 4, bottom: 0, left: 0 };
const fmtStep = (v: number) => fmtNum(v, 3);
const fmtWall = (v: number) => fmtDuration(v);
const stepLabel = (v: unknown) => `step ${fmtStep(Number(v))}`;
const wallLabel = (v: unknown) => `wall ${fmtWall(Number(v))}`;
const fmtValue = (v: unknown, name: unknown) => [fmtNum(Number(v)), String(name)] as [string, string];

function buildRows(points: SeriesPoint[], x: XAxisKind, smoothing: number, log: boolean, buckets: number): Row[] {
  const pts = bucketSeries(log ? points.filter((p) => p.value > 0) : points, buckets, x);
  const smooth = smoothDense(pts.map((p) => p.value), smoothing);
  const floor = log ? Number.MIN_VALUE : -Infinity; // a bucket's min ≤ 0 has no place on a log axis
  return pts.map((p, i) => ({ x: x === "wall" ? p.wall : p.step, raw: p.value, smooth: smooth[i], range: [Math.max(floor, p.min ?? p.value), p.max ?? p.value] }));
}

function MetricChartImpl({ title, testId, series, data, x, smoothing, buckets = 800, height = 220 }: Props) {
  const [log, setLog] = useState(false);
  const lists = series.map((s) => data?.[s.key] ?? []);
  const count = lists.reduce((n, l) => n + l.length, 0);
  const lastWall = lists.reduce((m, l) => (l.length ? Math.max(m, l[l.length - 1].wall) : m), 0);
  // O(points) per render; memo() below skips renders where none of this chart's series changed
  const rows = lists.map((l) => buildRows(l, x, smoothing, log, buckets));
  const drawn = rows.reduce((n, r) => n + r.length, 0);
  const hasRight = series.some((s) => s.axis === "right");
  const axisFor = (side: "left" | "right") => {
    let lo = Infinity;
    let hi = -Infinity;
    series.forEach((s, i) => {
      if ((s.axis ?? "left") !== side) return;
      for (const r of rows[i]) {
        for (const v of [r.raw, r.smooth, ...r.range]) {
          if (Number.isFinite(v)) {
            lo = Math.min(lo, v);
            hi = Math.max(hi, v);
          }
        }
      }
    });
    return log ? logAxis(lo, hi) : linearAxis(lo, hi);
  };
  const left = axisFor("left");
  const xs = rows.flatMap((r) => (r.length ? [r[0].x, r[r.length - 1].x] : []));
  let xMin = xs.length ? Math.min(...xs) : 0;
  let xMax = xs.length ? Math.max(...xs) : 1;
  if (xMax <= xMin) {
    // one point (e.g. the evaluation at step 0): a zero-width domain breaks the scale
    xMin -= 1;
    xMax += 1;
  }
  const xTicks = linearAxis(xMin, xMax, 5).ticks.filter((t) => t >= xMin && t <= xMax);
  const right = hasRight ? axisFor("right") : null;
  const fmtX = x === "wall" ? fmtWall : fmtStep;

  return (
    <section className="chart" data-testid={testId} data-points={count} data-drawn={drawn} data-last-wall={lastWall}>
      <div className="chart-head">
        <h2>{title}</h2>
        {series.length > 1 &&
          series.map((s) => (
            <span key={s.key} className="legend-item">
              <span className="swatch" style={{ background: s.color }} />
              {s.label}
            </span>
          ))}
        <label>
          <input type="checkbox" checked={log} onChange={(e) => setLog(e.target.checked)} /> log
        </label>
      </div>
      {count === 0 ? (
        <div className="chart-empty" style={{ height }}>
          no points yet
        </div>
      ) : (
        <ResponsiveContainer width="100%" height={height}>
          <ComposedChart margin={hasRight ? MARGIN_RIGHT_AXIS : MARGIN}>
            <CartesianGrid strokeDasharray="3 3" />
            <XAxis dataKey="x" type="number" domain={[xMin, xMax]} ticks={xTicks} tickFormatter={fmtX} allowDuplicatedCategory={false} />
            <YAxis yAxisId="left" scale={log ? "log" : "linear"} domain={left.domain} ticks={left.ticks} allowDataOverflow tickFormatter={fmtTick} width={58} />
            {right && <YAxis yAxisId="right" orientation="right" scale={log ? "log" : "linear"} domain={right.domain} ticks={right.ticks} allowDataOverflow tickFormatter={fmtTick} width={58} />}
            <Tooltip isAnimationActive={false} labelFormatter={x === "wall" ? wallLabel : stepLabel} formatter={fmtValue} />
            {series.flatMap((s, i) => {
              const smoothed = rows[i].length >= SMOOTH_FROM && smoothing > 0;
              const spread = rows[i].some((r) => r.range[1] > r.range[0]);
              return [
                spread && (
                  <Area
                    key={`${s.key}-range`}
                    data={rows[i]}
                    dataKey={rangeOf}
                    yAxisId={s.axis ?? "left"}
                    stroke="none"
                    fill={s.color}
                    fillOpacity={0.12}
                    isAnimationActive={false}
                    activeDot={false}
                    legendType="none"
                    tooltipType="none"
                  />
                ),
                // the read-out reads this raw line: no smoothed number is ever shown
                <Line
                  key={`${s.key}-raw`}
                  data={rows[i]}
                  dataKey="raw"
                  name={s.label}
                  yAxisId={s.axis ?? "left"}
                  stroke={s.color}
                  strokeOpacity={smoothed ? 0.3 : 1}
                  strokeWidth={smoothed ? 1 : 1.8}
                  dot={rows[i].length === 1}
                  activeDot={smoothed ? false : undefined}
                  isAnimationActive={false}
                />,
                smoothed && (
                  <Line
                    key={`${s.key}-smooth`}
                    data={rows[i]}
                    dataKey="smooth"
                    name={`${s.label} (smoothed)`}
                    yAxisId={s.axis ?? "left"}
                    stroke={s.color}
                    strokeWidth={1.8}
                    dot={false}
                    isAnimationActive={false}
                    legendType="none"
                    tooltipType="none"
                  />
                ),
              ];
            })}
          </ComposedChart>
        </ResponsiveContainer>
      )}
    </section>
  );
}

/** Re-renders only when one of its own series (or a setting) changes. */
export const MetricChart = memo(MetricChartImpl, (a, b) => {
  if (a.x !== b.x || a.smoothing !== b.smoothing || a.title !== b.title || a.series !== b.series || a.height !== b.height || a.buckets !== b.buckets) return false;
  return a.series.every((s) => a.data?.[s.key] === b.data?.[s.key]);
});
