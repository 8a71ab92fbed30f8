"use client";
/**
 * Every step of the episode as a card: the pick with its Q, Q1, Q2 and reward, whether the stopping
 * filter (and pruning) keeps it at the slider's threshold, its text and its top-k candidates. The
 * current replay step is marked. Chunk text is untrusted: text only.
 */
import type { EpisodeRecord, EpisodeStep } from "../../lib/contracts/index.ts";
import { pickFate, type PickFate, type PruneView, type ThresholdView } from "../../lib/analysis/threshold.ts";
import { fmtNum } from "../../lib/format.ts";

function TopCandidates({ s, gold }: { s: EpisodeStep; gold: ReadonlySet<number> }) {
  return (
    <details>
      <summary className="small muted">top-{s.topk.length} candidates</summary>
      <table className="table small">
        <thead>
          <tr>
            <th>chunk</th>
            <th className="num">Q</th>
            <th>gold</th>
          </tr>
        </thead>
        <tbody>
          {s.topk.map((c) => (
            <tr key={c.index}>
              <td className="mono">
                #{c.index}
                {c.index === s.index ? " (chosen)" : ""}
              </td>
              <td className="num">{fmtNum(c.q, 4)}</td>
              <td>{c.gold || gold.has(c.index) ? <span className="gold-mark">✓</span> : ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}

interface StepCardProps {
  s: EpisodeStep;
  i: number;
  current: boolean;
  fate: PickFate;
  threshold: number;
  /** Whether pruning is on (the toggle, on a record with leave-one-out Q). */
  pruning: boolean;
  /** Leave-one-out Q of the pick, or undefined without leave-one-out values. */
  looQ: number | undefined;
  gold: ReadonlySet<number>;
}

function StepCard({ s, i, current, fate, threshold, pruning, looQ, gold }: StepCardProps) {
  return (
    <div
      className={`step-card ${s.gold ? "gold" : "miss"}${current ? " current" : ""}`}
      data-testid="episode-step"
      data-kept={fate === "kept" ? "yes" : "no"}
      data-current={current ? "yes" : undefined}
      aria-current={current ? "step" : undefined}
    >
      <div className="row small">
        <b>step {i + 1}</b>
        <span className="mono">chunk #{s.index}</span>
        <span className="muted">position {fmtNum(s.position, 3)}</span>
        <span>Q {fmtNum(s.q, 4)}</span>
        <span className="muted">
          Q1 {fmtNum(s.q1, 4)} · Q2 {fmtNum(s.q2, 4)}
        </span>
        <span className="muted">reward {fmtNum(s.reward, 3)}</span>
        {s.gold ? <span className="gold-mark">gold ✓</span> : <span className="muted">not gold</span>}
        {looQ !== undefined && Number.isFinite(looQ) && (
          <span className="muted" data-testid="loo-q" title="Q of this pick given the question and the other kept picks">
            without it: Q {fmtNum(looQ, 4)}
          </span>
        )}
        {fate === "kept" ? (
          <span className="badge ok">kept at Q &gt; {fmtNum(threshold, 2)}{pruning ? " + prune" : ""}</span>
        ) : fate === "pruned" ? (
          <span className="badge plain">pruned: redundant given the other kept picks</span>
        ) : (
          <span className="badge plain">dropped by the stopping filter</span>
        )}
      </div>
      <p className="chunk">{s.text}</p>
      {s.topk.length > 0 && <TopCandidates s={s} gold={gold} />}
    </div>
  );
}

interface Props {
  record: Pick<EpisodeRecord, "steps" | "sf_idx">;
  current: number;
  threshold: number;
  view: ThresholdView;
  pruned: PruneView | null;
  prune: boolean;
}

export function StepList({ record, current, threshold, view, pruned, prune }: Props) {
  const gold = new Set(record.sf_idx);
  return (
    <section>
      <div className="row">
        <h2 style={{ margin: 0 }}>Steps</h2>
      </div>
      <div className="stack" style={{ gap: 10 }}>
        {record.steps.map((s, i) => (
          <StepCard
            key={i}
            s={s}
            i={i}
            current={i === current}
            fate={pickFate(i, view, pruned, prune)}
            threshold={threshold}
            pruning={prune && pruned !== null}
            looQ={pruned?.looQ[i]}
            gold={gold}
          />
        ))}
        {record.steps.length === 0 && <div className="empty">The agent stopped without retrieving anything.</div>}
      </div>
    </section>
  );
}
