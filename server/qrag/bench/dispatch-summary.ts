/**
 * The hot-loop figures of one training iteration, from the per-phase counters of device.ts: what
 * `--parts dispatch` prints and what the workload parts report beside their timings.
 */
import type { PhaseCounters } from "../backend/device.ts";

/** The hot-loop budget per training iteration (issue 27): what a recorded-once loop should cost. */
export const DISPATCH_BUDGET = { dispatches: 150, submits: 10, tfjsKernels: 0 };

export interface DispatchSummary {
  dispatchesPerIteration: number;
  tfjsKernelsPerIteration: number;
  submitsPerIteration: number;
  hostMsPerIteration: number;
  readWaitMsPerIteration: number;
  iterationMs: number;
  budget: typeof DISPATCH_BUDGET;
  withinBudget: boolean;
  perPhase: Record<string, PhaseCounters>;
}

/** Sums per-phase counts of one iteration into the part's figures. */
export function summarizeDispatch(perPhase: Record<string, PhaseCounters>, iterationMs: number): DispatchSummary {
  const round = (x: number) => Math.round(x * 10) / 10;
  const sum = (f: (c: PhaseCounters) => number) => Object.values(perPhase).reduce((a, c) => a + f(c), 0);
  const dispatchesPerIteration = round(sum((c) => c.dispatches));
  const tfjsKernelsPerIteration = round(sum((c) => c.kernels - c.fused));
  const submitsPerIteration = round(sum((c) => c.submits));
  const readWait = sum((c) => c.readWaitMs);
  return {
    dispatchesPerIteration,
    tfjsKernelsPerIteration,
    submitsPerIteration,
    hostMsPerIteration: round(iterationMs - readWait),
    readWaitMsPerIteration: round(readWait),
    iterationMs: round(iterationMs),
    budget: DISPATCH_BUDGET,
    withinBudget: dispatchesPerIteration <= DISPATCH_BUDGET.dispatches && submitsPerIteration <= DISPATCH_BUDGET.submits && tfjsKernelsPerIteration <= DISPATCH_BUDGET.tfjsKernels,
    perPhase,
  };
}
