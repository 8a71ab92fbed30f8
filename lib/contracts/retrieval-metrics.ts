/**
 * The retrieval scores an episode record carries (docs/method.md §5.1, the reference's
 * `calc_fact_f1_em`) and the Q-threshold stopping rule (docs/method.md §4.2). Part of the
 * contract because the engine computes them and the dashboard recomputes them for other
 * thresholds: one definition for both. The reference's "em" is coverage (gold ⊆ pred), named
 * `coverage` so nobody mistakes it for exact match.
 */
import type { RetrievalScores } from "./engine-events.ts";

export function retrievalMetrics(pred: readonly number[], gold: readonly number[]): RetrievalScores {
  const P = new Set(pred);
  const G = new Set(gold);
  if (P.size === 0 && G.size === 0) return { precision: 1, recall: 1, f1: 1, coverage: 1 };
  let tp = 0;
  for (const i of P) if (G.has(i)) tp++;
  const precision = P.size > 0 ? tp / P.size : 0;
  const recall = G.size > 0 ? tp / G.size : 0;
  const f1 = precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0;
  return { precision, recall, f1, coverage: tp === G.size ? 1 : 0 };
}

/**
 * Deployable stopping rule (reference `QValueChunkFilter`): given the per-step Q of the chosen
 * chunk, keep the prefix before the first step with q ≤ threshold. Returns that prefix length.
 */
export function qThresholdFilter(qValues: readonly number[], threshold = 0.5): number {
  for (let i = 0; i < qValues.length; i++) if (qValues[i] <= threshold) return i;
  return qValues.length;
}

/**
 * Leave-one-out pruning of a kept prefix (the `prune` stopping rule, server/qrag/evaluation/stop-rules.ts):
 * of the first `kept` picks, those whose Q given the question and the other kept picks
 * (`loo[kept − 1]`, server/qrag/agent/leave-one-out.ts) is > tau. Without that row (records of
 * oracle-stopped or older evaluations) the whole prefix.
 */
export function leaveOneOutKeep(kept: number, loo: readonly (readonly number[])[] | undefined, tau: number): number[] {
  const prefix = Array.from({ length: kept }, (_, j) => j);
  const row = kept > 0 ? loo?.[kept - 1] : undefined;
  if (!row || row.length !== kept) return prefix;
  return prefix.filter((j) => row[j] > tau);
}
