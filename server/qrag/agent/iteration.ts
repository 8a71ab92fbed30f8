/**
 * One training iteration (docs/method.md §3.7): rollout → λ-return targets → one PQN micro-step.
 * Shared by `train()` and the benchmarks, so the benchmark times exactly the code users train with.
 */
import type { RunConfig } from "../config/config.ts";
import { withPhase, withPhaseAsync } from "../backend/device.ts";
import { episodeConfig } from "../data/sources.ts";
import { trimWebgpuPool } from "../backend/webgpu-pool.ts";
import { lambdaTargets, withBootstrapColumn } from "./lambda-returns.ts";
import { lambdaTargetsFused } from "../model/webgpu/lambda-returns.ts";
import type { Learner, MicroStepResult, Targets } from "./learner.ts";
import type { QNetworks } from "./networks.ts";
import { deferredReads, type ParallelEnvs, type RolloutBatch, type RolloutSettings } from "./rollout.ts";
import { deviceErrorsFirst } from "../backend/webgpu-errors.ts";

export function rolloutSettings(config: RunConfig): RolloutSettings {
  const perEnv = config.batch_size / config.envs_parallel;
  const ps = config.envs.partial_starts;
  return {
    envs: config.envs_parallel,
    // the reference runs B/E + 1 steps per env and trains on the first B/E (docs/method.md §3.2)
    stepsPerEnv: config.algo.hyperparams.drop_last_transition ? perEnv + 1 : perEnv,
    maxActionLength: config.max_action_length,
    maxInMemory: config.max_action_length_in_memory,
    sortByIndex: config.envs.sort_by_index,
    topk: config.algo.hyperparams.topk,
    softValueHeads: config.algo.hyperparams.soft_value_heads,
    absorbCompletion: config.algo.hyperparams.absorb_completion,
    episode: episodeConfig(config, "train"),
    partialStarts: ps && { prob: ps.prob, extraProb: ps.extra_prob, extraFrom: ps.extra_from },
  };
}

/**
 * ε of the rollouts at `update`: explore_eps, or with explore_eps_updates > 0 a linear fall to 0 by
 * then. Why annealed: a constant ε lets the agent visit states its greedy policy avoids (qa2's
 * drop-first episodes), but it also keeps Q after completion high, which spoils stopping rules.
 */
export function exploreEpsAt(config: RunConfig, update: number): number {
  const { explore_eps: eps, explore_eps_updates: until } = config.algo.hyperparams;
  if (until <= 0) return eps;
  return eps * Math.max(0, 1 - update / until);
}

export interface IterationResult extends MicroStepResult {
  /** Env transitions executed (incl. a dropped last one per env). */
  transitions: number;
  rolloutSeconds: number;
  updateSeconds: number;
}

/**
 * `signal`: an abort during the rollout, or between the update's passes (pass_batch_size), throws
 * its reason before any step, so a cancelled iteration leaves the learner and weights as the
 * previous one did (the checkpoint is consistent); a pass runs to its end.
 */
export function trainIteration(envs: ParallelEnvs, learner: Learner, nets: QNetworks, config: RunConfig, random: boolean, signal?: AbortSignal): Promise<IterationResult> {
  return deviceErrorsFirst(() => iterate(envs, learner, nets, config, random, signal));
}

async function iterate(envs: ParallelEnvs, learner: Learner, nets: QNetworks, config: RunConfig, random: boolean, signal?: AbortSignal): Promise<IterationResult> {
  const t0 = performance.now();
  const bootstrap = !config.algo.hyperparams.drop_last_transition;
  // on the device the values stay there and the λ-returns are taken there: no read before the update
  const batch = await withPhaseAsync("rollout", () =>
    envs.collect(nets, { random, alpha: learner.alpha, exploreEps: exploreEpsAt(config, learner.updates), bootstrap, valuesOnDevice: deferredReads(), signal }),
  );
  let targets: Targets | null = null;
  try {
    await new Promise((r) => setImmediate(r)); // a cancel that came during the rollout's last step
    signal?.throwIfAborted();
    const built = withPhase("target", () => buildTargets(batch, bootstrap, config));
    targets = built.targets;
    const keep = built.keep;
    const t1 = performance.now();
    const res = await withPhaseAsync("update", () =>
      learner.microStep(
        { states: keep.map((k) => batch.states[k]), actionTexts: keep.map((k) => batch.actionTexts[k]), positions: Int32Array.from(keep, (k) => batch.actionPositions[k]), targets: targets! },
        { maxActionLength: config.max_action_length, maxInMemory: config.max_action_length_in_memory },
        signal,
      ),
    );
    trimWebgpuPool(); // the pooled buffers this iteration freed (webgpu-pool.ts); timed with the update
    const t2 = performance.now();
    return { ...res, transitions: batch.E * batch.L, rolloutSeconds: (t1 - t0) / 1000, updateSeconds: (t2 - t1) / 1000 };
  } finally {
    batch.deviceValues?.dispose();
    if (targets && !(targets instanceof Float32Array)) targets.dispose();
  }
}

/**
 * λ-return targets and which rollout cells are trained on. With drop_last_transition (the
 * reference) the last column only bootstraps; otherwise every collected transition is trained and
 * bootstrapped from V_target of the state after the rollout (the qrag_update_fix intent).
 */
function buildTargets(batch: RolloutBatch, bootstrap: boolean, config: RunConfig): { targets: Targets; keep: number[] } {
  const { E, L, bootstrap: boot } = batch;
  const h = config.algo.hyperparams;
  if (batch.deviceValues) {
    const targets = lambdaTargetsFused({ values: batch.deviceValues, reward: batch.reward, notDone: batch.notDone, E, L, bootstrap }, h.gamma, h.lambda, h.lambda_mode);
    return { targets, keep: keptCells(E, L, bootstrap) };
  }
  const rows = { reward: batch.reward, notDone: batch.notDone, value: batch.value };
  if (!boot) return { targets: lambdaTargets(rows, E, L, h.gamma, h.lambda, h.lambda_mode), keep: keptCells(E, L, false) };
  return { targets: lambdaTargets(withBootstrapColumn(rows, boot, E, L), E, L + 1, h.gamma, h.lambda, h.lambda_mode), keep: keptCells(E, L, true) };
}

/** The rollout cells trained on, env-major (the targets' order): all of them with a bootstrap, else all but each row's last. */
function keptCells(E: number, L: number, bootstrap: boolean): number[] {
  if (bootstrap) return Array.from({ length: E * L }, (_, k) => k);
  const keep: number[] = [];
  for (let e = 0; e < E; e++) for (let t = 0; t < L - 1; t++) keep.push(e * L + t);
  return keep;
}
