/**
 * A training run's checkpoints (train.ts): what one holds besides the tensors, the counters a run
 * carries between them, resuming from one, and writing one (never ahead of the stored events).
 */
import path from "node:path";
import type { RunConfig } from "../config/config.ts";
import type { EngineEvent, EventSink } from "../events.ts";
import type { Rng, RngState } from "../util/rng.ts";
import type { QNetworks, NetworkWeights } from "../agent/networks.ts";
import type { Learner, LearnerState } from "../agent/learner.ts";
import { saveCheckpoint, loadCheckpoint } from "./checkpoint.ts";
import { ENGINE_VERSION } from "../version.ts";

/** What a checkpoint of a training run holds, besides the tensors. */
export interface TrainCheckpoint {
  kind: "qrag-train";
  engineVersion: string;
  config: RunConfig;
  backend: string;
  savedAt: string;
  counters: { step: number; sampleCursor: number; lastEvalUpdate: number; wallSeconds: number };
  learner: LearnerState;
  rng: RngState;
  /** Dropout generators of the five encoders. */
  dropoutRng: RngState[];
  bestEvalReturn: number;
  weights: NetworkWeights;
}

/** A checkpoint being resumed from: its folder and its state. */
export type TrainResume = { dir: string; state: TrainCheckpoint };

/**
 * The counters a run carries through the loop, its evaluations and its checkpoints: env
 * transitions (`step`), the update of the last evaluation, the best evaluation return so far,
 * the wall seconds of earlier attempts and the training split's sample cursor.
 */
export interface RunCounters {
  step: number;
  lastEvalUpdate: number;
  bestEvalReturn: number;
  wallBase: number;
  sampleCursor: number;
}

/** The training checkpoint at `resumeFrom` (a checkpoint folder, or a run folder's checkpoints/last), if one is asked for. */
export function loadTrainCheckpoint(resumeFrom: string | undefined): TrainResume | undefined {
  const resume = resumeFrom ? loadCheckpoint<TrainCheckpoint>(resumeFrom) : undefined;
  if (resume && resume.state.kind !== "qrag-train") throw new Error(`${resume.dir}: not a training checkpoint`);
  return resume;
}

/** A fresh run's counters, or a resumed one's: its weights, optimizer, generators and counters restored. */
export function restoreRun(resume: TrainResume | undefined, nets: QNetworks, learner: Learner, rolloutRng: Rng): RunCounters {
  if (!resume) return { step: 0, lastEvalUpdate: -1, bestEvalReturn: -Infinity, wallBase: 0, sampleCursor: 0 };
  const s = resume.state;
  nets.importWeights(s.weights);
  learner.setState(s.learner);
  rolloutRng.setState(s.rng);
  nets.importRngStates(s.dropoutRng ?? []);
  return {
    step: s.counters.step,
    lastEvalUpdate: s.counters.lastEvalUpdate,
    bestEvalReturn: s.bestEvalReturn,
    wallBase: s.counters.wallSeconds,
    sampleCursor: s.counters.sampleCursor,
  };
}

export interface CheckpointerDeps {
  config: RunConfig;
  backend: string;
  runDir: string;
  nets: QNetworks;
  learner: Learner;
  rolloutRng: Rng;
  envs: { readonly sampleCursor: number };
  counters: RunCounters;
  wall: () => number;
  emit: EventSink;
  /** `emit` that also appends metric events to metrics.jsonl. */
  send: (e: EngineEvent) => void;
  /** TrainOptions.beforeCheckpoint: false skips this checkpoint. */
  beforeCheckpoint?: () => Promise<boolean>;
  shardBytes?: number;
}

/**
 * `checkpoint(name, best, evalReturn?)`: writes <runDir>/checkpoints/<name> and emits its
 * `checkpoint` event, once `beforeCheckpoint` says every earlier event is stored (else a warning).
 */
export function checkpointer(d: CheckpointerDeps): (name: string, best: boolean, evalReturn?: number) => Promise<void> {
  const { counters, learner, nets } = d;
  return async (name, best, evalReturn) => {
    if (d.beforeCheckpoint && !(await d.beforeCheckpoint())) {
      d.emit({ type: "log", level: "warn", message: `checkpoint "${name}" at update ${learner.updates} skipped: earlier events are not yet stored` });
      return;
    }
    const dir = path.join(d.runDir, "checkpoints", name);
    const state: TrainCheckpoint = {
      kind: "qrag-train", engineVersion: ENGINE_VERSION, config: d.config, backend: d.backend, savedAt: new Date().toISOString(),
      counters: { step: counters.step, sampleCursor: d.envs.sampleCursor, lastEvalUpdate: counters.lastEvalUpdate, wallSeconds: d.wall() },
      learner: await learner.getStateAsync(), rng: d.rolloutRng.getState(), dropoutRng: nets.exportRngStates(), bestEvalReturn: counters.bestEvalReturn, weights: await nets.exportWeightsAsync(),
    };
    saveCheckpoint(dir, state as unknown as Record<string, unknown>, { shardBytes: d.shardBytes });
    d.send({ type: "checkpoint", step: counters.step, update: learner.updates, path: dir, best, ...(evalReturn !== undefined ? { evalReturn } : {}) });
  };
}
