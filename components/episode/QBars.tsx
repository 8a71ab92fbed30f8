"use client";
/**
 * Bar chart of one step's top-k candidates by Q (highest first): gold facts marked, the chosen
 * chunk marked, and a reference line where the state's soft value V(s) sits (records written
 * before V and α were logged show none). Plain SVG, one <rect> per candidate.
 */
import type { EpisodeStep } from "../../lib/contracts/index.ts";
import { qDomain } from "../../lib/analysis/replay.ts";
import { fmtNum } from "../../lib/format.ts";

const ROW = 22;
const LABEL = 78;
const PLOT = 300;
const VALUE = 64;
const TOP = 18;

export function QBars({ step, gold }: { step: EpisodeStep; gold: ReadonlySet<number> }) {
  const rows = step.topk;
  const [lo, hi] = qDomain(rows.map((c) => c.q), step.v);
  const x = (q: number) => LABEL + ((q - lo) / (hi - lo || 1)) * PLOT;
  const height = TOP + rows.length * ROW + 4;
  const width = LABEL + PLOT + VALUE;
  return (
    <figure style={{ margin: 0 }}>
      <svg viewBox={`0 0 ${width} ${height}`} width="100%" style={{ maxWidth: width * 1.4 }} role="img" aria-label={`Q-values of the top ${rows.length} candidates`} data-testid="q-bars">
        <line x1={x(0)} x2={x(0)} y1={TOP - 4} y2={height} stroke="var(--muted)" strokeWidth={1} />
        {rows.map((c, k) => {
          const isGold = c.gold || gold.has(c.index);
          const chosen = c.index === step.index;
          const x0 = Math.min(x(0), x(c.q));
          const y = TOP + k * ROW;
          return (
            <g key={c.index}>
              <text x={LABEL - 6} y={y + 15} textAnchor="end" fontSize={11} fill="currentColor" fontWeight={chosen ? 700 : 400}>
                {chosen ? "▶ " : ""}#{c.index}
              </text>
              <rect
                x={x0}
                y={y + 3}
                width={Math.max(1, Math.abs(x(c.q) - x(0)))}
                height={ROW - 6}
                rx={2}
                fill={isGold ? "var(--ok)" : "var(--accent)"}
                fillOpacity={chosen ? 1 : 0.45}
                stroke={chosen ? "currentColor" : "none"}
                strokeWidth={chosen ? 1.5 : 0}
                data-testid="q-bar"
                data-index={c.index}
                data-q={c.q}
                data-gold={isGold ? "yes" : "no"}
                data-chosen={chosen ? "yes" : "no"}
              >
                <title>{`#${c.index}: Q ${fmtNum(c.q, 4)}${isGold ? ", gold fact" : ""}${chosen ? ", chosen" : ""}`}</title>
              </rect>
              <text x={LABEL + PLOT + 6} y={y + 15} fontSize={11} fill="currentColor">
                {fmtNum(c.q, 3)}
                {isGold ? " ★" : ""}
              </text>
            </g>
          );
        })}
        {step.v !== undefined && (
          <g data-testid="soft-value-line" data-v={step.v}>
            <line x1={x(step.v)} x2={x(step.v)} y1={TOP - 6} y2={height} stroke="var(--warn)" strokeWidth={2} strokeDasharray="4 3" />
            <text x={Math.min(x(step.v), LABEL + PLOT - 4)} y={11} fontSize={11} textAnchor="middle" fill="var(--warn)">
              V(s) {fmtNum(step.v, 3)}
            </text>
          </g>
        )}
      </svg>
      <figcaption className="small muted">
        Top-{rows.length} candidates by Q = Q1 + Q2 (bars; each head is trained towards half the return, so Q is the mean of the heads&apos; own estimates 2·Q1 and 2·Q2), <span className="gold-mark">★ gold facts</span>, ▶ chosen;{" "}
        {step.v !== undefined ? (
          <>
            dashed line: soft value V(s) at α = <span className="mono" data-testid="step-alpha">{fmtNum(step.alpha, 3)}</span> (α·logsumexp over the top-k per head, as the learner bootstraps it)
          </>
        ) : (
          "this record has no soft value (written before V(s) and α were logged)"
        )}
      </figcaption>
    </figure>
  );
}
