"use client";
/**
 * One greedy episode: the question, gold facts, each retrieval step, a Q-threshold slider (and, for
 * episodes with leave-one-out Q, a prune toggle: server/qrag/evaluation/stop-rules.ts "prune") that
 * shows which picks the stopping filter keeps at any threshold and the scores that would give
 * (recomputed here with the engine's definitions, lib/analysis/threshold.ts). The replay panel
 * steps through it (← → Home End, space plays) with the state, the top-k Q bars and the haystack
 * strip of the current step. The parts live in components/episode/; this file holds the state
 * they share (threshold, prune, current step, autoplay).
 */
import { useState } from "react";
import type { EpisodeRecord } from "../lib/contracts/index.ts";
import { pruneView, thresholdView } from "../lib/analysis/threshold.ts";
import { useStepCursor } from "../lib/hooks/useStepCursor.ts";
import { useAutoplay } from "../lib/hooks/useAutoplay.ts";
import { GoldFacts } from "./episode/GoldFacts.tsx";
import { HaystackStrip } from "./episode/HaystackStrip.tsx";
import { QuestionPanel } from "./episode/QuestionPanel.tsx";
import { ReaderPanel } from "./episode/ReaderPanel.tsx";
import { RetrievalMetrics } from "./episode/RetrievalMetrics.tsx";
import { StepDetail } from "./episode/StepDetail.tsx";
import { StepList } from "./episode/StepList.tsx";
import { StepPlayer } from "./episode/StepPlayer.tsx";
import { ThresholdControls } from "./episode/ThresholdControls.tsx";

interface EpisodeViewProps {
  record: EpisodeRecord;
  /** Where the haystack's chunk texts are fetched from (unless the record holds them: a playground episode). */
  runId: string;
  episodeId: string;
  /** The run's envs.sort_by_index: the order the state encoder reads the picks in. */
  sortByIndex: boolean;
}

export function EpisodeView({ record, runId, episodeId, sortByIndex }: EpisodeViewProps) {
  const [threshold, setThreshold] = useState(record.filtered.threshold);
  const view = thresholdView(record, threshold);
  // leave-one-out pruning at the same threshold, where the record has the values (runs to max_steps)
  const pruned = pruneView(record, threshold);
  const [prune, setPrune] = useState(false);
  const cursor = useStepCursor(record.steps.length);
  const play = useAutoplay(record.steps.length, cursor.step, cursor.go);
  return (
    <div className="stack" data-testid="episode-view">
      <div className="grid2">
        <QuestionPanel record={record} />
        <section className="panel">
          <GoldFacts record={record} />
          {record.sf_idx.length > 0 ? (
            <RetrievalMetrics record={record} threshold={threshold} view={view} pruned={pruned} />
          ) : (
            // a playground document without gold facts: scores against nothing would read as perfect
            <p className="muted small" data-testid="no-gold">
              No gold facts: precision, recall and coverage need them (load a benchmark sample and keep its facts in the document).
            </p>
          )}
          <ThresholdControls threshold={threshold} onThreshold={setThreshold} canPrune={pruned !== null} prune={prune} onPrune={setPrune} />
        </section>
      </div>
      {record.reader && <ReaderPanel reader={record.reader} target={record.answer} />}
      <section className="panel stack" data-testid="replay">
        <div className="row">
          <h2 style={{ margin: 0 }}>Replay</h2>
          {record.steps.length > 0 && <StepPlayer count={record.steps.length} cursor={cursor} play={play} />}
        </div>
        <HaystackStrip runId={runId} episodeId={episodeId} numChunks={record.num_chunks} gold={record.sf_idx} picks={record.pred_idx} current={cursor.step} texts={record.chunks} />
        <StepDetail record={record} step={cursor.step} sortByIndex={sortByIndex} />
      </section>
      <StepList record={record} current={cursor.step} threshold={threshold} view={view} pruned={pruned} prune={prune} />
    </div>
  );
}
