/**
 * The hot-loop figures of one training iteration, from the per-phase counters of device.ts: what
 * `--parts dispatch` prints and what the workload parts report beside their timings.
 */
import type { PhaseCounters } from "../backend/device.ts";

/** The hot-loop budget per training iteration (issue 27): what a recorded-once loop should cost. */
export const DISPATCH_BUDGET: Limits = { dispatches: 150, submits: 10, tfjsKernels: 0 };

/**
 * What an iteration may cost today, until it meets the budget: the figures the recorded loop has
 * reached, so CI (test/hot-loop-ceiling.test.ts, on lavapipe) fails when a change adds dispatches,
 * submits, reads or tfjs kernels to the hot loop. Lower it whenever the loop gets cheaper.
 * Reads: 1, the rollout's runs of lock-steps queued back to back and read at once (agent/rollout.ts
 * deviceRuns: the workload's episodes all end at max_steps); the values stay on the device for the
 * λ-returns (model/webgpu/lambda-returns.ts). Dispatches: 366, plus the 16 programs that add up
 * the weight gradients split along K (model/webgpu/split-k.ts: dispatches traded for workgroups,
 * ~12 → ~200 a product on a GPU), plus the λ-returns' program in place of a read: 383, with 5
 * submits, as the counts shape saw them while it cut states at 64 tokens. There every forward's
 * pooling rode on its last program; at the reference's state lengths of 128 and 256 it runs apart
 * (recorded-encoder.ts poolFuses), and since 2026-11-29 the counts shape packs as the reference
 * does. An iteration's count then follows the episodes' phase at its start, in a cycle of six
 * iterations: 393, 393, 394, 394, 394, 383 dispatches and 8, 7, 7, 7, 7, 5 submits (seen on
 * lavapipe, 24 iterations). The ceiling is the cycle's most. The loop did not change; its count did.
 * Since 2026-11-29's seventh session a rollout step's forward (4 states, up to 1,024 rows) runs
 * each layer after its attention as one program (model/webgpu/layer-tail.ts): 7 programs a step
 * instead of 11–12, and the cycle became 317, 317, 317, 317, 317, 307 dispatches with the same
 * submits (lavapipe, 30 iterations). Since the eighth session a layer's split weight gradients
 * are summed by one program, not four (model/webgpu/split-k.ts weightGradients): 12 fewer an update;
 * and a rollout's lock-step pools its state from the forward's rows after a run's first step
 * (model/webgpu/lock-step.ts StateRows): 13 fewer a rollout; and the layer tail took each
 * layer's attention in (a rollout step's forward 3 programs, not 5): 34 fewer a rollout; and the
 * final LayerNorm's backward reads the pooling's gradient itself (gelu-layernorm.ts pooledDy): 2
 * fewer an update; and a run's first step packs its states on the host as the lock-step packs
 * the others, so its lock-step pools too: 4 fewer a rollout. The ninth session's update came to 83
 * programs (214 an iteration). Since the tenth, a rollout draws the episodes it will renew at its
 * start and embeds their candidates with the current ones in one forward (agent/rollout.ts
 * drawAhead): one encoder forward a rollout, not four, so 30 fewer, and every phase of the cycle
 * counts 184. And the two encoders' forwards (the update's, the targets') and backwards are
 * recorded together, a program of each as one dispatch where they may be (model/webgpu/
 * fused-steps.ts, recorded-encoder.ts recordJointly): 34 fewer, 150, the budget.
 */
export const DISPATCH_CEILING: Limits = { dispatches: 150, submits: 8, tfjsKernels: 0, reads: 1 };

interface Limits {
  dispatches: number;
  submits: number;
  tfjsKernels: number;
  /** Reads awaited per iteration (the budget has none: each one waits for the GPU to drain). */
  reads?: number;
}

export interface DispatchSummary {
  dispatchesPerIteration: number;
  tfjsKernelsPerIteration: number;
  submitsPerIteration: number;
  /** Reads the host awaited (each one waits for the GPU to finish what was queued). */
  readsPerIteration: number;
  hostMsPerIteration: number;
  /** Host ms per phase (its wall time less its read waits): where the host's share of an iteration goes. */
  hostMsByPhase: Record<string, number>;
  readWaitMsPerIteration: number;
  /** Programs of ours compiled per iteration, and the host ms that took: 0 once every shape's programs are made (shape-free code). */
  compilesPerIteration: number;
  compileMsPerIteration: number;
  /** GPU time inside compute passes (timestamp queries; null where the adapter has none or timing was off). */
  gpuMsPerIteration: number | null;
  iterationMs: number;
  budget: Limits;
  withinBudget: boolean;
  ceiling: Limits;
  withinCeiling: boolean;
  perPhase: Record<string, PhaseCounters>;
  /**
   * Bind groups the recorded plans made per iteration (workload-bench.ts; absent elsewhere): 0 once
   * the variables keep their buffers across updates (model/webgpu/in-place.ts).
   */
  bindGroupsPerIteration?: number;
  /** Recorded plans built per iteration (workload-bench.ts): a plan evicted from the LRU and built again makes all its bind groups anew. */
  plansPerIteration?: number;
  /** MiB of buffers those plans made per iteration: a plan on a cached one's buffers (recorded-encoder.ts roomyPlan) makes its uniform buffer alone. */
  planMiBPerIteration?: number;
}

/** "encode 1.2, rollout 20.5, …": a figure per phase, one decimal (the logs' and gpu-table's host ms by phase). */
export function phaseList(ms: Record<string, number>): string {
  return Object.entries(ms).map(([p, x]) => `${p} ${x.toFixed(1)}`).join(", ");
}

/** "; 3 programs compiled (2,400 ms)" where an iteration compiled any, else "". */
export function compileNote(s: Pick<DispatchSummary, "compilesPerIteration" | "compileMsPerIteration">): string {
  return s.compilesPerIteration > 0 ? `; ${s.compilesPerIteration} programs compiled (${Math.round(s.compileMsPerIteration).toLocaleString("en-US")} ms)` : "";
}

/** Sums per-phase counts of one iteration into the part's figures. */
export function summarizeDispatch(perPhase: Record<string, PhaseCounters>, iterationMs: number, gpuTimed = false): DispatchSummary {
  const round = (x: number) => Math.round(x * 10) / 10;
  const sum = (f: (c: PhaseCounters) => number) => Object.values(perPhase).reduce((a, c) => a + f(c), 0);
  const dispatchesPerIteration = round(sum((c) => c.dispatches));
  const tfjsKernelsPerIteration = round(sum((c) => c.kernels - c.fused));
  const submitsPerIteration = round(sum((c) => c.submits));
  const readsPerIteration = round(sum((c) => c.reads));
  const readWait = sum((c) => c.readWaitMs);
  const within = (l: Limits) =>
    dispatchesPerIteration <= l.dispatches && submitsPerIteration <= l.submits && tfjsKernelsPerIteration <= l.tfjsKernels && readsPerIteration <= (l.reads ?? Infinity);
  return {
    dispatchesPerIteration,
    tfjsKernelsPerIteration,
    submitsPerIteration,
    readsPerIteration,
    hostMsPerIteration: round(iterationMs - readWait),
    hostMsByPhase: Object.fromEntries(Object.entries(perPhase).map(([p, c]) => [p, round(c.wallMs - c.readWaitMs)])),
    readWaitMsPerIteration: round(readWait),
    compilesPerIteration: round(sum((c) => c.compiles)),
    compileMsPerIteration: round(sum((c) => c.compileMs)),
    gpuMsPerIteration: gpuTimed ? round(sum((c) => c.gpuMs)) : null,
    iterationMs: round(iterationMs),
    budget: DISPATCH_BUDGET,
    withinBudget: within(DISPATCH_BUDGET),
    ceiling: DISPATCH_CEILING,
    withinCeiling: within(DISPATCH_CEILING),
    perPhase,
  };
}
