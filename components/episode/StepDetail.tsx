"use client";
/**
 * One step of an episode, as the model met it: the state (question + the chunks picked so far,
 * in the order the state encoder reads them), the chunk it chose with Q, Q1, Q2 and the reward,
 * and the top-k candidates' Q-values against the soft value. Chunk text is untrusted: text only.
 */
import type { EpisodeRecord } from "../../lib/contracts/index.ts";
import { stateChunks } from "../../lib/analysis/replay.ts";
import { fmtNum } from "../../lib/format.ts";
import { QBars } from "./QBars.tsx";

export function StepDetail({ record, step, sortByIndex }: { record: EpisodeRecord; step: number; sortByIndex: boolean }) {
  const s = record.steps[step];
  if (!s) return null;
  const gold = new Set(record.sf_idx);
  const state = stateChunks(record, step, sortByIndex);
  return (
    <div className="grid2" data-testid="step-detail" data-step={step}>
      <div>
        <h3>State before step {step + 1}</h3>
        <p className="small muted" style={{ margin: "0 0 6px" }}>
          question + {state.length} picked chunk{state.length === 1 ? "" : "s"}, {sortByIndex ? "in document order" : "in pick order"} (as the state encoder reads them)
        </p>
        <ol className="facts" data-testid="step-state" start={0} style={{ listStyle: "none", paddingLeft: 0 }}>
          <li>
            <span className="muted small">question</span> <span data-testid="state-question">{record.question}</span>
          </li>
          {state.map((c) => (
            <li key={c.index} data-testid="state-chunk" data-index={c.index}>
              <span className="muted mono">#{c.index}</span> {c.text} {c.gold && <span className="gold-mark">✓</span>}
            </li>
          ))}
        </ol>
        <h3 style={{ marginTop: 12 }}>Chosen</h3>
        <div className="row small" data-testid="step-chosen" data-index={s.index}>
          <span className="mono">chunk #{s.index}</span>
          <span>Q {fmtNum(s.q, 4)}</span>
          <span className="muted">
            Q1 {fmtNum(s.q1, 4)} · Q2 {fmtNum(s.q2, 4)}
          </span>
          <span>reward {fmtNum(s.reward, 3)}</span>
          {s.v !== undefined && (
            <span className="muted">
              V(s) {fmtNum(s.v, 4)} · α {fmtNum(s.alpha, 3)}
            </span>
          )}
          {s.gold ? <span className="gold-mark">gold ✓</span> : <span className="muted">not gold</span>}
        </div>
        <p className="chunk" data-testid="step-chosen-text">{s.text}</p>
      </div>
      <div>
        <h3>Candidates at step {step + 1}</h3>
        {s.topk.length > 0 ? <QBars step={s} gold={gold} /> : <div className="empty">No candidates were logged for this step.</div>}
      </div>
    </div>
  );
}
