/**
 * RULER's NIAH score applied to retrieval (docs/benchmarks/niah.md). RULER scores a reader's
 * prediction with `string_match_all`: per sample, the share of reference outputs that occur
 * (lower-cased substring) in the prediction, averaged over samples, × 100. We have no reader, so
 * the "prediction" is the text of the retrieved chunks: the score a reader that copies what it is
 * given would get, i.e. an upper bound on the paper's reader-based figure for the same retrieval.
 */
import { wilsonInterval, type Interval } from "../../../lib/contracts/intervals.ts";

/** Per sample: how many of `refs` occur in the prediction (RULER `string_match_all` numerator). */
export function needlesFound(predTexts: readonly string[], refs: readonly string[]): number {
  // RULER's post-processing (strip, control characters → "\n") cannot change a substring match of a
  // ref without control characters, so it is left out
  const pred = predTexts.join(" ").toLowerCase();
  return refs.filter((r) => pred.includes(r.toLowerCase())).length;
}

export interface NiahScore {
  samples: number;
  /** RULER `string_match_all` × 100 (mean over samples of found / refs). */
  score: number;
  /**
   * 95 % Wilson interval of the score (× 100) over the pooled needles (found / total). Needles of one
   * sample are not independent, so for 4-needle variants this is somewhat narrow; for one-needle
   * variants it is exactly the interval over samples.
   */
  score95: Interval | null;
  needles: number;
  needlesFound: number;
  /** Share of samples with every needle retrieved (the reference's "em" = coverage), with its Wilson interval. */
  allFound: number;
  allFound95: Interval | null;
}

/** Aggregates per-sample (found, total) counts into the NIAH score with intervals. */
export function niahScore(perSample: readonly { found: number; total: number }[]): NiahScore {
  const n = perSample.length;
  const needles = perSample.reduce((a, s) => a + s.total, 0);
  const found = perSample.reduce((a, s) => a + s.found, 0);
  const all = perSample.filter((s) => s.found === s.total).length;
  const mean = n ? perSample.reduce((a, s) => a + s.found / s.total, 0) / n : 0;
  const pct = (i: Interval | null) => (i ? { low: 100 * i.low, high: 100 * i.high } : null);
  return {
    samples: n,
    score: 100 * mean,
    score95: pct(wilsonInterval(found, needles)),
    needles,
    needlesFound: found,
    allFound: n ? all / n : 0,
    allFound95: wilsonInterval(all, n),
  };
}
