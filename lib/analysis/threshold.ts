/**
 * The Q-threshold slider of the episode player: which picks the stopping filter keeps at a given
 * threshold, and the scores that would give, recomputed in the browser with the engine's own
 * definitions (lib/contracts/retrieval-metrics.ts), so at the episode's own threshold it
 * reproduces `record.filtered` exactly.
 */
import type { EpisodeRecord, RetrievalScores } from "../contracts/engine-events.ts";
import { leaveOneOutKeep, qThresholdFilter, retrievalMetrics } from "../contracts/retrieval-metrics.ts";

export interface ThresholdView extends RetrievalScores {
  threshold: number;
  /** Picks kept: the prefix before the first step with Q ≤ threshold. */
  kept: number;
}

export function thresholdView(record: Pick<EpisodeRecord, "pred_idx" | "q_values" | "sf_idx">, threshold: number): ThresholdView {
  const kept = qThresholdFilter(record.q_values, threshold);
  return { ...retrievalMetrics(record.pred_idx.slice(0, kept), record.sf_idx), threshold, kept };
}

export interface PruneView extends RetrievalScores {
  threshold: number;
  /** Positions (in the episode) of the picks kept: the threshold prefix minus the pruned ones. */
  keep: number[];
  /** Each prefix pick's Q given the question and the other prefix picks (NaN after the prefix). */
  looQ: number[];
}

/**
 * The threshold prefix after leave-one-out pruning at the same threshold (the sweep's "+ prune"),
 * or null when the record has no leave-one-out values (oracle-stopped or older evaluations).
 */
export function pruneView(record: Pick<EpisodeRecord, "pred_idx" | "q_values" | "sf_idx" | "loo">, threshold: number): PruneView | null {
  if (!record.loo?.length) return null;
  const kept = qThresholdFilter(record.q_values, threshold);
  const keep = leaveOneOutKeep(kept, record.loo, threshold);
  const row = kept > 0 ? record.loo[kept - 1] : [];
  const looQ = record.pred_idx.map((_, j) => (j < kept && row ? row[j] : NaN));
  return { ...retrievalMetrics(keep.map((j) => record.pred_idx[j]), record.sf_idx), threshold, keep, looQ };
}

/** Mean scores of many episodes at one threshold (a sweep's samples, an evaluation's episodes). */
export function meanThresholdView(records: readonly Pick<EpisodeRecord, "pred_idx" | "q_values" | "sf_idx">[], threshold: number): ThresholdView & { episodes: number } {
  const sum = { precision: 0, recall: 0, f1: 0, coverage: 0, kept: 0 };
  for (const r of records) {
    const v = thresholdView(r, threshold);
    sum.precision += v.precision;
    sum.recall += v.recall;
    sum.f1 += v.f1;
    sum.coverage += v.coverage;
    sum.kept += v.kept;
  }
  const n = records.length;
  const mean = (x: number) => (n ? x / n : NaN);
  return { precision: mean(sum.precision), recall: mean(sum.recall), f1: mean(sum.f1), coverage: mean(sum.coverage), kept: mean(sum.kept), threshold, episodes: n };
}

/** What the episode view shows for one pick at the slider's threshold. */
export type PickFate = "kept" | "pruned" | "dropped";

/**
 * Pick `i`'s fate: kept, pruned (in the threshold prefix but made redundant by the other kept
 * picks; only while pruning is on) or dropped by the stopping filter. `pruned` null, or `prune`
 * off, is the plain threshold filter.
 */
export function pickFate(i: number, view: Pick<ThresholdView, "kept">, pruned: Pick<PruneView, "keep"> | null, prune: boolean): PickFate {
  const pruning = prune && pruned !== null;
  if (pruning ? pruned.keep.includes(i) : i < view.kept) return "kept";
  return pruning && i < view.kept ? "pruned" : "dropped";
}
