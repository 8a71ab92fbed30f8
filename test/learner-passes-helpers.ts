/** Shared by learner-passes.test.ts (cpu) and engine-device-cases.ts (webgpu): the update in passes against one pass. */
import * as tf from "@tensorflow/tfjs";
import { Learner } from "../server/qrag/agent/learner.ts";
import { QNetworks } from "../server/qrag/agent/networks.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { Rng } from "../server/qrag/util/rng.ts";

// Seven transitions of different state lengths: passes of 3 pad each pass to its own longest state.
export const batch = {
  states: [
    ["where is mary?", "mary went to the kitchen.", "mary picked up the milk there."],
    ["where is john?"],
    ["what is sandra carrying?", "sandra took the football.", "sandra went to the office.", "sandra dropped the football."],
    ["where is daniel?", "daniel moved to the hallway."],
    ["where was the apple before the garden?"],
    ["where is mary?", "mary travelled to the bedroom."],
    ["who gave the milk?", "fred gave the milk to bill.", "bill went back to the garden."],
  ],
  actionTexts: ["mary went to the kitchen.", "john moved to the garden.", "sandra went to the office.", "daniel journeyed to the bathroom.", "the apple is in the garden.", "mary went back to the hallway.", "bill took the milk."],
  positions: Int32Array.from([0, 20, 3, 7, 11, 2, 40]),
  targets: Float32Array.from([1, 0, 0.5, -0.3, 1.2, 0.1, 0.8]),
};
export const lengths = { maxActionLength: 16, maxInMemory: 16 };

/** Fresh, identically seeded networks (a 1-layer transformer) and a learner with this pass size. */
export function learnerWith(passSize: number, dropout = 0): { nets: QNetworks; learner: Learner } {
  const config = resolveConfig({
    preset: "tiny",
    overrides: ["algo.encoder.type=transformer", "algo.encoder.layers=1", "algo.encoder.heads=2", "algo.encoder.max_len=64", `algo.encoder.dropout=${dropout}`],
  });
  const nets = new QNetworks(config.algo.encoder, new Rng(5));
  return { nets, learner: new Learner(nets, { ...config.algo, optimizer: { ...config.algo.optimizer, lr: 1e-2 } }, 10, 1, passSize) };
}

/**
 * Three updates with the given pass size (the first at the warm-up’s lr 0) on fresh, identically
 * seeded networks: losses and final weights. `tensorTargets`: the targets as a tensor, as the
 * device path's iteration hands them over (its values never read).
 */
export async function threeUpdates(passSize: number, dropout = 0, tensorTargets = false): Promise<{ losses: number[]; weights: number[]; init: number[] }> {
  const { nets, learner } = learnerWith(passSize, dropout);
  const flat = async () => (await nets.state.exportWeightsAsync()).flatMap((w) => Array.from(w.data));
  try {
    const init = await flat();
    const losses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const targets = tensorTargets ? tf.tensor1d(batch.targets) : batch.targets;
      try {
        await learner.microStep({ ...batch, targets }, lengths);
      } finally {
        if (targets instanceof tf.Tensor) targets.dispose();
      }
      losses.push((await learner.lastStats()).loss); // the device path keeps the loss on the device
    }
    return { losses, weights: await flat(), init };
  } finally {
    learner.dispose();
    nets.dispose();
  }
}

/** How far the passes' update is from the one-pass update, and how far that one moved the weights. */
export async function passesAgainstOnePass(passSize: number): Promise<{ lossDiff: number; weightDiff: number; moved: number; losses: number[] }> {
  const one = await threeUpdates(0);
  const passes = await threeUpdates(passSize);
  const lossDiff = Math.max(...one.losses.map((l, i) => Math.abs(l - passes.losses[i]) / Math.max(1, Math.abs(l))));
  let weightDiff = one.weights.length === passes.weights.length ? 0 : Infinity;
  let moved = 0;
  for (let i = 0; i < one.weights.length; i++) {
    weightDiff = Math.max(weightDiff, Math.abs(one.weights[i] - passes.weights[i]));
    moved = Math.max(moved, Math.abs(one.weights[i] - one.init[i]));
  }
  return { lossDiff, weightDiff, moved, losses: one.losses };
}

/**
 * The largest weight difference between updates given host targets and the same targets as a
 * tensor (the device path's: the caller's tensor in one pass, its rows gathered by state length in
 * passes): the same numbers, so the same weights.
 */
export async function tensorTargetsAgainstHost(passSize: number): Promise<number> {
  const host = await threeUpdates(passSize);
  const tensor = await threeUpdates(passSize, 0, true);
  let diff = host.weights.length === tensor.weights.length ? 0 : Infinity;
  for (let i = 0; i < host.weights.length; i++) diff = Math.max(diff, Math.abs(host.weights[i] - tensor.weights[i]));
  return diff;
}
