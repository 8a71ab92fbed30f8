/** One length's agent samples summed into its summary row (accuracy with its 95 % Wilson interval). */
import { wilsonInterval } from "../../../lib/contracts/intervals.ts";
import type { AgentSample, AgentSummary } from "../../../lib/contracts/llm-agent.ts";

export function summarizeAgent(list: readonly AgentSample[], numChunks: number, model: string, retriever: string): AgentSummary {
  const n = list.length;
  const mean = (f: (s: AgentSample) => number): number => (n ? list.reduce((a, s) => a + f(s), 0) / n : 0);
  const correct = list.reduce((a, s) => a + s.correct, 0);
  const failureKinds: AgentSummary["failureKinds"] = {}, forced: AgentSummary["forced"] = {};
  for (const s of list) {
    if (s.failure) failureKinds[s.failure.kind] = (failureKinds[s.failure.kind] ?? 0) + 1;
    if (s.forced) forced[s.forced] = (forced[s.forced] ?? 0) + 1;
  }
  return {
    type: "summary", numChunks, model, retriever, n, correct, accuracy: n ? correct / n : 0,
    // RULER's per-sample share rounded to whole successes for the interval, as the reader's tally
    ci: wilsonInterval(Math.round(correct), n),
    ...(list.some((s) => s.f1 !== undefined) ? { f1: mean((s) => s.f1 ?? 0) } : {}),
    coverage: mean((s) => s.metrics.coverage), recall: mean((s) => s.metrics.recall),
    meanSteps: mean((s) => s.steps.length), meanCalls: mean((s) => s.calls), meanRetrieved: mean((s) => s.pred_idx.length),
    promptTokens: mean((s) => s.tokens.prompt), completionTokens: mean((s) => s.tokens.completion), msPerSample: mean((s) => s.ms),
    failures: list.filter((s) => s.failure).length, failureKinds, forced,
  };
}
