/** One answer scored with its dataset's metric (./scoring.ts); `accuracy` is the headline figure. */
import type { ReaderDataset } from "./prompts.ts";
import { babilongExactMatch, openQaScores, stringMatchAll } from "./scoring.ts";

export interface AnswerScore {
  /** BabiLong: target-word match; RULER: string_match_all; open QA: exact match. */
  accuracy: number;
  /** Open QA only: SQuAD token F1. */
  f1?: number;
}

/** `gold`: BabiLong's target, RULER's needle values, or open QA's answer aliases. */
export function scoreAnswer(d: ReaderDataset, text: string, gold: string | readonly string[]): AnswerScore {
  const golds = typeof gold === "string" ? [gold] : gold;
  if (d.name === "babilong") return { accuracy: babilongExactMatch(text, golds.join(",")) };
  if (d.name === "niah") return { accuracy: stringMatchAll(text, golds) };
  const { em, f1 } = openQaScores(text, golds);
  return { accuracy: em, f1 };
}
