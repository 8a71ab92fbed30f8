/**
 * An agent evaluation's summary rows (`qrag agent`, lib/contracts/llm-agent.ts) as sweep-chart
 * figures, so the R3-style agent is drawn beside Q-RAG: answer accuracy with the Wilson interval
 * the engine stored, and the coverage of everything it retrieved (Wilson over n samples).
 * The agent does not measure its haystack's tokens, so its x is Q-RAG's measured tokens at the
 * same length where a shown sweep ran it, else that length × the shown sweeps' median tokens per
 * chunk, else × the paper's nominal 20 tokens per BabiLong sentence (1K at 50 sentences).
 */
import type { AgentSummary, SweepPoint } from "../contracts/index.ts";
import { wilsonInterval } from "../contracts/intervals.ts";
import type { SweepFigure } from "./sweep-series.ts";

const NOMINAL_TOKENS_PER_CHUNK = 20;

/** The chart's x (tokens) of an agent length, aligned with the shown Q-RAG points. */
export function agentTokens(numChunks: number, points: readonly SweepPoint[]): number {
  const same = points.find((p) => p.numChunks === numChunks && p.tokens > 0);
  if (same) return same.tokens;
  const perChunk = points.map((p) => p.tokens / p.numChunks).filter((r) => Number.isFinite(r) && r > 0).sort((a, b) => a - b);
  return numChunks * (perChunk.length ? perChunk[Math.floor(perChunk.length / 2)] : NOMINAL_TOKENS_PER_CHUNK);
}

export type AgentMetric = "accuracy" | "coverage";

/** One metric of the agent over its lengths, in length order. */
export function agentCurve(summaries: readonly AgentSummary[], metric: AgentMetric, points: readonly SweepPoint[]): SweepFigure[] {
  return [...summaries]
    .sort((a, b) => a.numChunks - b.numChunks)
    .map((s) => ({
      numChunks: s.numChunks,
      tokens: agentTokens(s.numChunks, points),
      samples: s.n,
      value: s[metric],
      interval: metric === "accuracy" ? s.ci : s.n > 0 ? wilsonInterval(Math.round(s.coverage * s.n), s.n) : null,
    }));
}
