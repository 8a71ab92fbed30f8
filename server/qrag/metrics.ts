/**
 * Retrieval metrics (docs/method.md §5.1, reference `calc_fact_f1_em`) and the Q-value stopping
 * filter (docs/method.md §4.2). Note the reference's "em" is coverage (gold ⊆ pred), not exact set
 * equality; it is named `coverage` here so nobody mistakes it for exact match.
 */
interface RetrievalMetrics {
  precision: number;
  recall: number;
  f1: number;
  /** 1 if every gold index was retrieved (reference "em"). */
  coverage: number;
}

export function retrievalMetrics(pred: readonly number[], gold: readonly number[]): RetrievalMetrics {
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
