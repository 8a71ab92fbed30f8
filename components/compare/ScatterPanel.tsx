"use client";
/**
 * The compare view's scatter panel: a config key or summary on x against a summary on y, a point
 * per run in its legend colour; hovering a point names the run and both values. Runs dimmed by
 * the parallel-coordinates brushes are dimmed here too. Points expose data-run / data-kept and the
 * plot its pixel box and domains (data-x0 … data-ymax) for the browser tests.
 */
import type { ScatterSpec } from "../../lib/contracts/index.ts";
import { SUMMARY_KEYS_OFFERED, fractionOn, type SummaryAxis, type SummaryRun } from "../../lib/analysis/summary-axes.ts";
import { useElementWidth } from "../../lib/hooks/useElementWidth.ts";
import { RunReadOut, useHoverRun } from "./RunReadOut.tsx";

const H = 300;
const M = { l: 64, r: 16, t: 12, b: 40 };
/** Points keep this far from the axes, so a run at a domain's end is not drawn on the axis line. */
const INSET = 12;

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

interface Props {
  spec: ScatterSpec;
  runs: readonly SummaryRun[];
  colors: ReadonlyMap<string, string>;
  x: SummaryAxis;
  y: SummaryAxis;
  /** Runs the parallel-coordinates brushes keep (null: no brushing). */
  kept: ReadonlySet<string> | null;
  configKeys: readonly string[];
  onChange: (next: ScatterSpec | undefined) => void;
}

function ticksOf(a: SummaryAxis): { f: number; label: string }[] {
  if (a.kind === "num") return a.ticks.map((t) => ({ f: fractionOn(a, t) ?? 0, label: String(Number(t.toPrecision(4))) }));
  return a.cats.map((c, i) => ({ f: (i + 0.5) / a.cats.length, label: clip(c, 16) }));
}

export function ScatterPanel({ spec, runs, colors, x, y, kept, configKeys, onChange }: Props) {
  const [box, W] = useElementWidth(560, 280);
  const { hover, handlers } = useHoverRun();
  const x0 = M.l + INSET;
  const x1 = W - M.r - INSET;
  const y0 = H - M.b - INSET;
  const y1 = M.t + INSET;
  const px = (f: number) => x0 + f * (x1 - x0);
  const py = (f: number) => y0 - f * (y0 - y1);
  const points = runs.flatMap((r) => {
    const fx = fractionOn(x, r.values[x.key]);
    const fy = fractionOn(y, r.values[y.key]);
    return fx === null || fy === null ? [] : [{ r, cx: px(fx), cy: py(fy) }];
  });
  const h = points.find((p) => p.r.id === hover);
  const xKeys = [...new Set([...configKeys, ...SUMMARY_KEYS_OFFERED, spec.x])];
  const yKeys = [...new Set([...SUMMARY_KEYS_OFFERED, spec.y])];

  return (
    <section className="panel stack" style={{ gap: 8 }} data-testid="scatter-panel" data-points={points.length}>
      <div className="chart-toolbar">
        <h2 style={{ margin: 0 }}>Scatter</h2>
        <label>
          x
          <select value={spec.x} onChange={(e) => onChange({ ...spec, x: e.target.value })} data-testid="scatter-x">
            {xKeys.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </label>
        <label>
          y
          <select value={spec.y} onChange={(e) => onChange({ ...spec, y: e.target.value })} data-testid="scatter-y">
            {yKeys.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </label>
        {runs.length > points.length && <span className="small muted">{runs.length - points.length} run(s) without both values</span>}
        <span className="spacer" />
        <button type="button" className="link small" onClick={() => onChange(undefined)} data-testid="scatter-close">
          close
        </button>
      </div>
      <div ref={box} style={{ width: "100%", position: "relative" }}>
        <svg
          width={W}
          height={H}
          style={{ display: "block" }}
          data-testid="scatter-svg"
          data-x0={x0}
          data-x1={x1}
          data-y0={y0}
          data-y1={y1}
          data-xkind={x.kind}
          data-xscale={x.kind === "num" && x.log ? "log" : "linear"}
          data-yscale={y.kind === "num" && y.log ? "log" : "linear"}
          data-xmin={x.kind === "num" ? x.domain[0] : ""}
          data-xmax={x.kind === "num" ? x.domain[1] : ""}
          data-xcats={x.kind === "cat" ? JSON.stringify(x.cats) : ""}
          data-ymin={y.kind === "num" ? y.domain[0] : ""}
          data-ymax={y.kind === "num" ? y.domain[1] : ""}
        >
          <line x1={M.l} x2={W - M.r} y1={H - M.b} y2={H - M.b} stroke="#555" />
          <line x1={M.l} x2={M.l} y1={H - M.b} y2={M.t} stroke="#555" />
          {ticksOf(x).map((t) => (
            <text key={`x${t.f}`} x={px(t.f)} y={H - M.b + 16} textAnchor="middle" fontSize={11} fill="#555">
              {t.label}
            </text>
          ))}
          {ticksOf(y).map((t) => (
            <text key={`y${t.f}`} x={M.l - 6} y={py(t.f) + 4} textAnchor="end" fontSize={11} fill="#555">
              {t.label}
            </text>
          ))}
          <text x={(x0 + x1) / 2} y={H - 6} textAnchor="middle" fontSize={12}>
            {clip(spec.x, 60)}
            {x.kind === "num" && x.log ? " (log)" : ""}
          </text>
          <text x={12} y={(y0 + y1) / 2} textAnchor="middle" fontSize={12} transform={`rotate(-90 12 ${(y0 + y1) / 2})`}>
            {clip(spec.y, 40)}
            {y.kind === "num" && y.log ? " (log)" : ""}
          </text>
          {points.map(({ r, cx, cy }) => {
            const on = !kept || kept.has(r.id);
            return (
              <circle
                key={r.id}
                cx={cx.toFixed(2)}
                cy={cy.toFixed(2)}
                r={hover === r.id ? 7 : 5}
                fill={on ? (colors.get(r.id) ?? "#333") : "#ccc"}
                fillOpacity={on ? 0.9 : 0.5}
                stroke="#fff"
                {...handlers(r.id)}
                data-testid="scatter-point"
                data-run={r.id}
                data-kept={on ? "1" : "0"}
              />
            );
          })}
        </svg>
        {h && (
          <RunReadOut run={h.r} keys={[...new Set([spec.x, spec.y])]} testId="scatter-readout" className="chart-readout" style={{ position: "absolute", left: Math.min(h.cx + 10, W - 240), top: Math.max(0, h.cy - 48), background: "var(--panel, #fff)", border: "1px solid #ccc", padding: "4px 8px", pointerEvents: "none", maxWidth: 260 }} />
        )}
      </div>
    </section>
  );
}
