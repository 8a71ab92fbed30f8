"use client";
/**
 * Coverage, F1 or the LLM reader's answer accuracy against context length: a log x-axis at the
 * sweep's measured token counts (labelled 1.7K … 13.4M), one colour per sweep (overlays), one dash
 * per method (Q-RAG all picks, after the Q-threshold, BM25, dense), and a 95 % interval bar at
 * every point. An uploaded agent evaluation (the R3-style agent, lib/analysis/agent-series.ts) is
 * a dash-dot line in its sweep's colour, on the answer-accuracy and coverage charts. The paper's published BabiLong curves are drawn as labelled grey dashed lines
 * (lib/analysis/paper-figures.ts) so a sweep is read against the paper at a glance. The container's
 * data-points counts our points drawn, so tests can watch a live sweep fill it in.
 */
import { useState } from "react";
import { CartesianGrid, ErrorBar, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { SweepDto } from "../../lib/contracts/index.ts";
import { METHOD_LABELS, SWEEP_METHODS, distinctLabels, fmtTokens, readerCurve, readerModels, sweepCurve, type SweepFigure, type SweepMethod, type SweepMetric } from "../../lib/analysis/sweep-series.ts";
import { agentCurve } from "../../lib/analysis/agent-series.ts";
import { PAPER_CHOICES, paperCurveLabel, paperCurves, paperLengthTokens, paperRows, type PaperChoice } from "../../lib/analysis/paper-figures.ts";
import { fmtNum } from "../../lib/format.ts";
import { toggled } from "../../lib/selection.ts";

export const SWEEP_COLORS = ["#6d28d9", "#e4572e", "#17a398", "#3a86ff", "#d4a017", "#ef476f", "#2a9d8f", "#8d6e63"];
const DASH: Record<SweepMethod, string | undefined> = { qrag: undefined, qragFiltered: "6 3", qragPruned: "1 2", bm25: "2 3", dense: "9 3 2 3" };
const AGENT_DASH = "8 3 2 3 2 3";
const MARGIN = { top: 8, right: 16, bottom: 4, left: 0 };
/** The paper's curves: greys and muted tones, all dashed, so they never read as one of our runs. */
const PAPER_COLORS = ["#6b7280", "#9ca3af", "#a16207", "#0e7490", "#92400e", "#be123c", "#4d7c0f", "#374151", "#c2410c"];
const PAPER_DASH = "5 4";
type ChartMetric = SweepMetric | "accuracy";
const METRIC_TITLES: Record<ChartMetric, string> = { coverage: "Coverage", f1: "F1", accuracy: "Answer accuracy" };
const PAPER_CHOICE_LABELS: Record<PaperChoice, string> = { none: "no paper curves", qrag: "paper: Q-RAG", all: "paper: all methods" };

const defaultLabel = (s: SweepDto) => (s.spec.source === "agent" ? s.spec.checkpointLabel : `${s.spec.checkpointLabel}, Q ≥ ${s.spec.threshold}`);

interface Row {
  x: number;
  y: number;
  /** Distances below and above y (Recharts' ErrorBar form). */
  ci: [number, number];
  n: number;
}

/** `labelOf` names each sweep in overlays (default: its checkpoint and threshold). */
export function SweepChart({ sweeps, height = 280, labelOf = defaultLabel }: { sweeps: SweepDto[]; height?: number; labelOf?: (s: SweepDto) => string }) {
  const [metric, setMetric] = useState<ChartMetric>("coverage");
  const [methods, setMethods] = useState<Set<SweepMethod>>(new Set(SWEEP_METHODS));
  const [paper, setPaper] = useState<PaperChoice>("qrag");
  const labels = distinctLabels(sweeps.map(labelOf), sweeps.map((s) => s.run.createdAt));
  const hasReader = sweeps.some((s) => s.points.some((p) => p.reader) || (s.agent?.length ?? 0) > 0);
  const qragPoints = sweeps.flatMap((s) => s.points);
  const toRows = (fs: SweepFigure[]): Row[] => fs.map((f) => ({ x: f.tokens, y: f.value, n: f.samples, ci: f.interval ? [f.value - f.interval.low, f.interval.high - f.value] : [0, 0] }));
  const prefix = (si: number) => (sweeps.length > 1 ? `${labels[si]} · ` : "");
  const lines = sweeps.flatMap((s, si) =>
    s.agent?.length
      ? metric === "f1"
        ? []
        : [{ key: `${s.run.id}:agent`, name: `${sweeps.length > 1 && labels[si] !== s.spec.checkpointLabel ? prefix(si) : ""}${s.spec.checkpointLabel}${metric === "coverage" ? ", coverage of all retrieved" : ""}`, color: SWEEP_COLORS[si % SWEEP_COLORS.length], dash: AGENT_DASH, rows: toRows(agentCurve(s.agent, metric, qragPoints)), agent: true }]
      : metric === "accuracy"
      ? [{ key: `${s.run.id}:reader`, name: `${prefix(si)}answer accuracy (${readerModels(s.points).join(", ") || "no reader"})`, color: SWEEP_COLORS[si % SWEEP_COLORS.length], dash: undefined, rows: toRows(readerCurve(s.points)), agent: false }]
      : SWEEP_METHODS.filter((m) => methods.has(m)).map((m) => ({ key: `${s.run.id}:${m}`, name: `${prefix(si)}${METHOD_LABELS[m]}`, color: SWEEP_COLORS[si % SWEEP_COLORS.length], dash: DASH[m], rows: toRows(sweepCurve(s.points, m, metric)), agent: false })),
  ).filter((l) => l.rows.length);
  const ticks = [...new Set(lines.flatMap((l) => l.rows.map((r) => r.x)))].sort((a, b) => a - b);
  const count = lines.reduce((n, l) => n + l.rows.length, 0);
  const domain: [number, number] = ticks.length ? [ticks[0] / 1.4, ticks[ticks.length - 1] * 1.4] : [1, 10];
  const paperX = paperLengthTokens(qragPoints);
  const references = paperCurves(paper, sweeps.map((s) => s.run.task))
    .map((c, i) => ({ curve: c, color: PAPER_COLORS[i % PAPER_COLORS.length], rows: paperRows(c, paperX, domain[0], domain[1]) }))
    .filter((r) => r.rows.length);
  const toggle = (m: SweepMethod) => setMethods((old) => toggled(old, m));
  return (
    <section className="chart" data-testid="sweep-chart" data-points={count} data-metric={metric} data-references={references.map((r) => r.curve.id).join(" ")}>
      <div className="chart-head">
        <h2>{METRIC_TITLES[metric]} vs context length (95 % interval)</h2>
        <select value={metric} onChange={(e) => setMetric(e.target.value as ChartMetric)} data-testid="sweep-metric" aria-label="metric">
          <option value="coverage">coverage</option>
          <option value="f1">F1</option>
          {hasReader && <option value="accuracy">answer accuracy (LLM reader)</option>}
        </select>
        <select value={paper} onChange={(e) => setPaper(e.target.value as PaperChoice)} data-testid="sweep-paper" aria-label="paper reference curves" title="the Q-RAG paper's published BabiLong answer accuracy (docs/paper-figures.md)">
          {PAPER_CHOICES.map((c) => (
            <option key={c} value={c}>
              {PAPER_CHOICE_LABELS[c]}
            </option>
          ))}
        </select>
      </div>
      <div className="row small" style={{ gap: 12, marginBottom: 4 }}>
        {metric !== "accuracy" && SWEEP_METHODS.map((m) => (
          <label key={m} className="legend-item">
            <input type="checkbox" checked={methods.has(m)} onChange={() => toggle(m)} data-testid={`sweep-method-${m}`} />
            <svg width="22" height="6" aria-hidden>
              <line x1="0" y1="3" x2="22" y2="3" stroke="currentColor" strokeWidth="2" strokeDasharray={DASH[m]} />
            </svg>
            {METHOD_LABELS[m]}
          </label>
        ))}
        {sweeps.length > 1 &&
          sweeps.map((s, si) => (s.agent?.length ? null : ( // an agent's line has its own legend entry below
            <span key={s.run.id} className="legend-item">
              <span className="swatch" style={{ background: SWEEP_COLORS[si % SWEEP_COLORS.length], width: 12, height: 3, display: "inline-block" }} />
              {labelOf(s)}
            </span>
          )))}
        {lines.filter((l) => l.agent).map((l) => (
          <span key={l.key} className="legend-item" data-testid="sweep-agent-legend">
            <svg width="22" height="6" aria-hidden>
              <line x1="0" y1="3" x2="22" y2="3" stroke={l.color} strokeWidth="2" strokeDasharray={AGENT_DASH} />
            </svg>
            {l.name}
          </span>
        ))}
        {references.map((r) => (
          <span key={r.curve.id} className="legend-item" title={r.curve.source} data-testid="sweep-paper-legend" data-curve={r.curve.id}>
            <svg width="22" height="6" aria-hidden>
              <line x1="0" y1="3" x2="22" y2="3" stroke={r.color} strokeWidth="2" strokeDasharray={PAPER_DASH} />
            </svg>
            {paperCurveLabel(r.curve)}, answer accuracy
          </span>
        ))}
      </div>
      {count === 0 ? (
        <div className="chart-empty" style={{ height }}>
          no lengths finished yet
        </div>
      ) : (
        <ResponsiveContainer width="100%" height={height}>
          <LineChart margin={MARGIN}>
            <CartesianGrid strokeDasharray="3 3" />
            <XAxis dataKey="x" type="number" scale="log" domain={domain} ticks={ticks} tickFormatter={fmtTokens} allowDuplicatedCategory={false} label={{ value: "context (GPT-2 tokens, measured)", position: "insideBottom", offset: -2, fontSize: 11 }} height={40} />
            <YAxis domain={[0, 1]} ticks={[0, 0.25, 0.5, 0.75, 1]} width={44} />
            <Tooltip
              isAnimationActive={false}
              labelFormatter={(v) => `${fmtTokens(Number(v))} tokens`}
              formatter={(v, name, item) => {
                const r = (item as { payload?: Partial<Row> & { length?: string } }).payload;
                const ci = r?.ci && r.y !== undefined ? ` [${fmtNum(r.y - r.ci[0], 3)}, ${fmtNum(r.y + r.ci[1], 3)}] n=${r.n}` : r?.length ? ` (paper, ${r.length})` : "";
                return [`${fmtNum(Number(v), 3)}${ci}`, String(name)];
              }}
            />
            {references.map((r) => (
              <Line key={`paper:${r.curve.id}`} data={r.rows} dataKey="y" name={`${paperCurveLabel(r.curve)}, answer accuracy`} stroke={r.color} strokeDasharray={PAPER_DASH} strokeWidth={1.4} dot={{ r: 2, fill: "#fff", className: "paper-dot" }} isAnimationActive={false} className="paper-curve" />
            ))}
            {lines.map((l) => (
              <Line key={l.key} data={l.rows} dataKey="y" name={l.name} stroke={l.color} strokeDasharray={l.dash} strokeWidth={1.8} dot={{ r: 3, className: l.agent ? "sweep-dot agent-dot" : "sweep-dot" }} isAnimationActive={false} className={l.agent ? "agent-curve" : undefined}>
                <ErrorBar dataKey="ci" width={4} strokeWidth={1} stroke={l.color} direction="y" />
              </Line>
            ))}
          </LineChart>
        </ResponsiveContainer>
      )}
    </section>
  );
}
