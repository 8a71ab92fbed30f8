"use client";
/**
 * One greedy episode: the question, gold facts, each retrieval step, a Q-threshold slider (and, for
 * episodes with leave-one-out Q, a prune toggle: server/qrag/evaluation/stop-rules.ts "prune") that
 * shows which picks the stopping filter keeps at any threshold and the scores that would give
 * (recomputed here with the engine's definitions, lib/analysis/threshold.ts). The replay panel
 * steps through it (← → Home End, space plays) with the state, the top-k Q bars and the haystack
 * strip of the current step. Chunk text is untrusted and rendered as text only.
 */
import { useState } from "react";
import type { EpisodeRecord } from "../lib/contracts/index.ts";
import { pruneView, thresholdView } from "../lib/analysis/threshold.ts";
import { useStepCursor } from "../lib/hooks/useStepCursor.ts";
import { PLAY_SPEEDS, useAutoplay, type PlaySpeed } from "../lib/hooks/useAutoplay.ts";
import { fmtNum } from "../lib/format.ts";
import { HaystackStrip } from "./episode/HaystackStrip.tsx";
import { StepDetail } from "./episode/StepDetail.tsx";

function Scores({ label, s, testId }: { label: string; s: { precision: number; recall: number; f1: number; coverage: number }; testId?: string }) {
  return (
    <tr data-testid={testId}>
      <td>{label}</td>
      <td className="num">{fmtNum(s.precision, 3)}</td>
      <td className="num">{fmtNum(s.recall, 3)}</td>
      <td className="num">{fmtNum(s.f1, 3)}</td>
      <td className="num">{fmtNum(s.coverage, 3)}</td>
    </tr>
  );
}

interface EpisodeViewProps {
  record: EpisodeRecord;
  /** Where the haystack's chunk texts are fetched from. */
  runId: string;
  episodeId: string;
  /** The run's envs.sort_by_index: the order the state encoder reads the picks in. */
  sortByIndex: boolean;
}

/** Player buttons keep the focus where it was, so space and the arrows stay with the player. */
const noFocus = (e: React.MouseEvent) => e.preventDefault();

export function EpisodeView({ record, runId, episodeId, sortByIndex }: EpisodeViewProps) {
  const gold = new Set(record.sf_idx);
  const found = record.steps.filter((s) => s.gold).length;
  const [threshold, setThreshold] = useState(record.filtered.threshold);
  const view = thresholdView(record, threshold);
  const sameThreshold = Math.abs(threshold - record.filtered.threshold) < 1e-9 && view.kept === record.filtered.kept;
  // leave-one-out pruning at the same threshold, where the record has the values (runs to max_steps)
  const pruned = pruneView(record, threshold);
  const [prune, setPrune] = useState(false);
  const keptAt = (i: number) => (prune && pruned ? pruned.keep.includes(i) : i < view.kept);
  const cursor = useStepCursor(record.steps.length);
  const play = useAutoplay(record.steps.length, cursor.step, cursor.go);
  const goBy = (to: number) => {
    play.pause();
    cursor.go(to);
  };
  return (
    <div className="stack" data-testid="episode-view">
      <div className="grid2">
        <section className="panel">
          <h3>Question</h3>
          <p style={{ fontSize: 16, margin: "0 0 10px" }} data-testid="episode-question">
            {record.question}
          </p>
          <dl className="kv">
            <dt>answer</dt>
            <dd>
              <b>{record.answer}</b>
            </dd>
            <dt>sample</dt>
            <dd className="mono">{record.id}</dd>
            <dt>context</dt>
            <dd>
              {record.num_chunks} chunks{record.text_len ? `, ~${record.text_len.toLocaleString()} GPT-2 tokens` : ""}
            </dd>
            <dt>return</dt>
            <dd>{fmtNum(record.return, 3)}</dd>
            <dt>stopping</dt>
            <dd>
              <span className={`badge ${record.oracle_stop ? "plain" : "ok"} label-oracle`} data-testid="oracle-label">
                {record.oracle_stop ? "oracle stop (ground-truth completion)" : "no oracle stop"}
              </span>
            </dd>
          </dl>
        </section>
        <section className="panel">
          <h3>Gold facts ({found} of {record.sf_idx.length} found)</h3>
          <ol className="facts" data-testid="gold-facts">
            {record.sf_idx.map((idx, i) => (
              <li key={idx}>
                <span className="muted mono">#{idx}</span> {record.sf_texts[i]} {record.pred_idx.includes(idx) ? <span className="gold-mark">✓ retrieved</span> : <span className="muted">not retrieved</span>}
              </li>
            ))}
          </ol>
          <h3 style={{ marginTop: 14 }}>Retrieval metrics</h3>
          <table className="table" data-testid="episode-metrics">
            <thead>
              <tr>
                <th />
                <th className="num">precision</th>
                <th className="num">recall</th>
                <th className="num">F1</th>
                <th className="num">coverage</th>
              </tr>
            </thead>
            <tbody>
              <Scores label={`all picks (${record.pred_idx.length})`} s={record.metrics} />
              {/* at the evaluated threshold the slider's row would repeat the evaluated one */}
              {sameThreshold ? (
                <Scores label={`Q > ${fmtNum(threshold, 2)}, as evaluated (${view.kept} kept)`} s={view} testId="threshold-row" />
              ) : (
                <>
                  <Scores label={`Q > ${fmtNum(record.filtered.threshold, 3)}, as evaluated (${record.filtered.kept} kept)`} s={record.filtered} />
                  <Scores label={`Q > ${fmtNum(threshold, 2)} (${view.kept} kept)`} s={view} testId="threshold-row" />
                </>
              )}
              {pruned && <Scores label={`Q > ${fmtNum(threshold, 2)}, then prune (${pruned.keep.length} kept)`} s={pruned} testId="prune-row" />}
            </tbody>
          </table>
          <label className="row small" style={{ marginTop: 8 }}>
            Q threshold
            <input
              type="range"
              min={0}
              max={1}
              step={0.01}
              value={threshold}
              onChange={(e) => setThreshold(Number(e.target.value))}
              aria-label="Q threshold of the stopping filter"
              data-testid="threshold-slider"
            />
            <span className="mono" data-testid="threshold-value">
              {fmtNum(threshold, 2)}
            </span>
            <span className="muted">keeps the picks before the first step with Q ≤ threshold</span>
          </label>
          {pruned && (
            <label className="row small" title="drop a kept pick whose Q, given the question and the other kept picks, is at or below the threshold: the rest already make it redundant">
              <input type="checkbox" checked={prune} onChange={(e) => setPrune(e.target.checked)} data-testid="prune-toggle" />
              then prune picks the other kept ones make redundant (leave-one-out Q ≤ threshold)
            </label>
          )}
        </section>
      </div>
      <section className="panel stack" data-testid="replay">
        <div className="row">
          <h2 style={{ margin: 0 }}>Replay</h2>
          {record.steps.length > 0 && (
            <div className="row small" data-testid="step-player" data-playing={play.playing ? "yes" : "no"}>
              <button type="button" onMouseDown={noFocus} onClick={() => goBy(0)} aria-label="first step">|◀</button>
              <button type="button" onMouseDown={noFocus} onClick={() => goBy(cursor.step - 1)} aria-label="previous step">◀</button>
              <button type="button" onMouseDown={noFocus} onClick={play.toggle} aria-label={play.playing ? "pause" : "play"} data-testid="play-toggle" disabled={record.steps.length < 2}>
                {play.playing ? "pause" : "play"}
              </button>
              <span className="mono" data-testid="step-position">
                step {cursor.step + 1} of {record.steps.length}
              </span>
              <button type="button" onMouseDown={noFocus} onClick={() => goBy(cursor.step + 1)} aria-label="next step">▶</button>
              <button type="button" onMouseDown={noFocus} onClick={() => goBy(record.steps.length - 1)} aria-label="last step">▶|</button>
              <label className="row small">
                speed
                <select
                  value={play.speed}
                  onChange={(e) => {
                    play.setSpeed(Number(e.target.value) as PlaySpeed);
                    e.currentTarget.blur(); // hand space back to the player
                  }}
                  aria-label="autoplay speed, steps per second"
                  data-testid="play-speed"
                >
                  {PLAY_SPEEDS.map((v) => (
                    <option key={v} value={v}>
                      {v} step/s
                    </option>
                  ))}
                </select>
              </label>
              <span className="muted">← → Home End · space plays</span>
            </div>
          )}
        </div>
        <HaystackStrip runId={runId} episodeId={episodeId} numChunks={record.num_chunks} gold={record.sf_idx} picks={record.pred_idx} current={cursor.step} />
        <StepDetail record={record} step={cursor.step} sortByIndex={sortByIndex} />
      </section>
      <section>
        <div className="row">
          <h2 style={{ margin: 0 }}>Steps</h2>
        </div>
        <div className="stack" style={{ gap: 10 }}>
          {record.steps.map((s, i) => (
            <div
              key={i}
              className={`step-card ${s.gold ? "gold" : "miss"}${i === cursor.step ? " current" : ""}`}
              data-testid="episode-step"
              data-kept={keptAt(i) ? "yes" : "no"}
              data-current={i === cursor.step ? "yes" : undefined}
              aria-current={i === cursor.step ? "step" : undefined}
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
                {pruned && Number.isFinite(pruned.looQ[i]) && (
                  <span className="muted" data-testid="loo-q" title="Q of this pick given the question and the other kept picks">
                    without it: Q {fmtNum(pruned.looQ[i], 4)}
                  </span>
                )}
                {keptAt(i) ? (
                  <span className="badge ok">kept at Q &gt; {fmtNum(threshold, 2)}{prune && pruned ? " + prune" : ""}</span>
                ) : prune && pruned && i < view.kept ? (
                  <span className="badge plain">pruned: redundant given the other kept picks</span>
                ) : (
                  <span className="badge plain">dropped by the stopping filter</span>
                )}
              </div>
              <p className="chunk">{s.text}</p>
              {s.topk.length > 0 && (
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
              )}
            </div>
          ))}
          {record.steps.length === 0 && <div className="empty">The agent stopped without retrieving anything.</div>}
        </div>
      </section>
    </div>
  );
}
