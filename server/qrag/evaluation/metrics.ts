/**
 * Retrieval metrics and the Q-value stopping filter: defined once in the shared contract
 * (lib/contracts/retrieval-metrics.ts, the dashboard recomputes them per threshold); averaged here.
 */
import type { RetrievalScores } from "../../../lib/contracts/engine-events.ts";

export { qThresholdFilter, retrievalMetrics } from "../../../lib/contracts/retrieval-metrics.ts";

type RetrievalMetrics = RetrievalScores;

/** Means over episodes; NaN for an empty list (nothing to average, not a score of 0). */
export function aggregate(list: readonly RetrievalMetrics[]): RetrievalMetrics & { count: number } {
  const sum = { precision: 0, recall: 0, f1: 0, coverage: 0 };
  for (const m of list) {
    sum.precision += m.precision;
    sum.recall += m.recall;
    sum.f1 += m.f1;
    sum.coverage += m.coverage;
  }
  const n = list.length;
  return {
    precision: sum.precision / n,
    recall: sum.recall / n,
    f1: sum.f1 / n,
    coverage: sum.coverage / n,
    count: n,
  };
}
