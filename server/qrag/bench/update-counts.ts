/**
 * `--parts dispatch-update`: dispatches, tfjs kernels and submits of one update (Learner.microStep
 * with its optimizer step) of the reference workload's transformer (B = 64), with the recorded
 * encoder (model/webgpu/recorded-train.ts) off and on: the update phase of `--parts dispatch`
 * without its rollouts, in about a minute on lavapipe instead of twelve.
 */
import { counterSnapshot, kernelNameCounts, resetCounters, withPhaseAsync } from "../backend/device.ts";
import { QNetworks } from "../agent/networks.ts";
import { Learner } from "../agent/learner.ts";
import { withRecorder } from "../model/webgpu/recorded-encoder.ts";
import { chunkAt } from "../types.ts";
import { Rng } from "../util/rng.ts";
import { workloadConfig } from "./workload-bench.ts";
import { workloadSource } from "./workload.ts";

interface UpdateCounts {
  dispatches: number;
  tfjsKernels: number;
  submits: number;
  /** The tfjs kernels by name: what is left to record. */
  tfjsByName: Record<string, number>;
}

/** One warm update's counts per path ("tfjs": the recorder off; "recorded": on). */
export async function benchUpdateCounts(log: (m: string) => void): Promise<Record<"tfjs" | "recorded", UpdateCounts>> {
  const config = workloadConfig("transformer");
  const rng = new Rng(4);
  // a batch shaped like the workload's: states of the question and 1–4 chunks, actions its chunks
  const sample = workloadSource(100, 3).sample(0);
  const chunks = Array.from({ length: sample.chunks.length }, (_, i) => chunkAt(sample.chunks, i));
  const B = config.batch_size;
  const batch = {
    states: Array.from({ length: B }, (_, i) => [sample.question, ...chunks.slice(i % 10, (i % 10) + 1 + (i % 4))]),
    actionTexts: Array.from({ length: B }, (_, i) => chunks[(i * 7) % chunks.length]),
    positions: Int32Array.from({ length: B }, (_, i) => i % 50),
    targets: Float32Array.from({ length: B }, () => rng.next()),
  };
  const lengths = { maxActionLength: config.max_action_length, maxInMemory: config.max_action_length_in_memory };
  const out = {} as Record<"tfjs" | "recorded", UpdateCounts>;
  for (const recorded of [false, true]) {
    await withRecorder(recorded, async () => {
      const nets = new QNetworks(config.algo.encoder, new Rng(1));
      try {
        const learner = new Learner(nets, config.algo, config.steps_count, 1);
        await learner.microStep(batch, lengths); // warm-up: pipelines compiled, plans made
        resetCounters();
        await withPhaseAsync("update", () => learner.microStep(batch, lengths));
        const c = counterSnapshot().update!;
        const name = recorded ? "recorded" : "tfjs";
        const tfjsByName = Object.fromEntries(kernelNameCounts().filter(([k]) => !k.startsWith("fused ")));
        out[name] = { dispatches: c.dispatches, tfjsKernels: c.kernels - c.fused, submits: c.submits, tfjsByName };
        log(`  dispatch-update: ${name}: ${c.dispatches} dispatches, ${c.kernels - c.fused} tfjs kernels, ${c.submits} submits`);
      } finally {
        nets.dispose();
      }
    });
  }
  return out;
}
