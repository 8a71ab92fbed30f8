/**
 * A training run's logs (train.ts): its run folder's files (config.yaml, metrics.jsonl,
 * episodes.jsonl), the `metric` events at the run's current step and update, and the training
 * window's metrics and progress after each iteration (`TrainMeter`).
 */
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import type { RunConfig } from "../config/config.ts";
import type { EngineEvent, EventSink, MetricKey } from "../events.ts";
import type { Learner } from "../agent/learner.ts";
import type { IterationResult } from "../agent/iteration.ts";
import { gpuMemoryMiB } from "../backend/gpu-memory.ts";

/** A run folder's logs: config.yaml written once, metrics.jsonl and episodes.jsonl appended to. */
export class RunFiles {
  private readonly metricsFile: number;
  private readonly episodesFile: number;

  constructor(runDir: string, config: RunConfig) {
    fs.mkdirSync(path.join(runDir, "checkpoints"), { recursive: true });
    fs.writeFileSync(path.join(runDir, "config.yaml"), YAML.stringify(config));
    this.metricsFile = fs.openSync(path.join(runDir, "metrics.jsonl"), "a");
    this.episodesFile = fs.openSync(path.join(runDir, "episodes.jsonl"), "a");
  }

  /** `emit` that also appends metric events to metrics.jsonl. */
  sender(emit: EventSink): (e: EngineEvent) => void {
    return (e) => {
      if (e.type === "metric") fs.writeSync(this.metricsFile, JSON.stringify(e) + "\n");
      emit(e);
    };
  }

  writeEpisode(ev: EngineEvent): void {
    fs.writeSync(this.episodesFile, JSON.stringify(ev) + "\n");
  }

  close(): void {
    fs.closeSync(this.metricsFile);
    fs.closeSync(this.episodesFile);
  }
}

/** Where a metric sits: env transitions, optimizer updates and wall seconds, read when it is sent. */
export type MetricClock = () => { step: number; update: number; wall: number };

/** `metric(key, value)`: a metric event at the clock's step, update and wall time; non-finite values are left out. */
export function metricSender(send: (e: EngineEvent) => void, at: MetricClock): (key: MetricKey, value: number) => void {
  return (key, value) => {
    if (!Number.isFinite(value)) return;
    const { step, update, wall } = at();
    send({ type: "metric", key, step, update, value, wall });
  };
}

export interface TrainMeterDeps {
  config: RunConfig;
  learner: Learner;
  envs: { takeFinishedReturns(): number[] };
  metric: (key: MetricKey, value: number) => void;
  emit: EventSink;
  wall: () => number;
  /** Wall seconds and updates of earlier attempts (a resumed run's ETA counts only this one's pace). */
  wallBase: number;
  resumedUpdates: number;
}

/**
 * The training window: every `logEvery` updates (and at the last) the loss, lr, α, gradient norm,
 * throughput, GPU memory and train return since the last window; a `progress` event at most every
 * 250 ms (and at the last update).
 */
export class TrainMeter {
  private readonly logEvery: number;
  private windowStart = performance.now();
  private windowTransitions = 0;
  private windowUpdates = 0;
  private windowIterations = 0;
  private windowRolloutS = 0;
  private windowUpdateS = 0;
  private lastProgress = 0;

  constructor(private readonly d: TrainMeterDeps) {
    this.logEvery = Math.max(1, Math.min(10, Math.floor(d.config.eval_interval / 5)));
  }

  /** After one training iteration. */
  async record(res: IterationResult): Promise<void> {
    const { config, learner } = this.d;
    this.windowTransitions += res.transitions;
    this.windowIterations++;
    this.windowRolloutS += res.rolloutSeconds;
    this.windowUpdateS += res.updateSeconds;
    if (!res.applied) return;
    this.windowUpdates++;
    if (learner.updates % this.logEvery === 0 || learner.updates === config.steps_count) await this.logWindow(res.applied);
    const now = performance.now();
    if (now - this.lastProgress > 250 || learner.updates === config.steps_count) {
      this.lastProgress = now;
      const done = learner.updates;
      const rate = done > 0 ? (this.d.wall() - this.d.wallBase) / Math.max(1, done - this.d.resumedUpdates) : 0;
      this.d.emit({ type: "progress", phase: "train", done, total: config.steps_count, etaSeconds: rate * (config.steps_count - done) });
    }
  }

  private async logWindow(applied: { lr: number; alpha: number }): Promise<void> {
    const { learner, metric } = this.d;
    const secs = (performance.now() - this.windowStart) / 1000;
    // one read on the device path, where loss and norm stay on the device between logs
    const last = await learner.lastStats();
    metric("qf_loss", last.loss);
    metric("lr", applied.lr);
    metric("alpha", applied.alpha);
    metric("grad_norm", last.gradNorm);
    metric("transitions_per_s", this.windowTransitions / secs);
    metric("updates_per_s", this.windowUpdates / secs);
    metric("rollout_s", this.windowRolloutS / this.windowIterations);
    metric("update_s", this.windowUpdateS / this.windowIterations);
    const gpuMem = gpuMemoryMiB(); // webgpu only: buffers held (pool and plans included), live tensors', the step's peak, the plans'
    if (gpuMem) {
      metric("gpu_memory_mb", gpuMem.allocatedMiB);
      metric("gpu_memory_live_mb", gpuMem.usedMiB);
      metric("gpu_memory_peak_mb", gpuMem.peakMiB);
      metric("gpu_memory_plans_mb", gpuMem.planMiB);
    }
    const rets = this.d.envs.takeFinishedReturns();
    if (rets.length) metric("train_return", rets.reduce((a, b) => a + b, 0) / rets.length);
    this.windowStart = performance.now();
    this.windowTransitions = 0;
    this.windowUpdates = 0;
    this.windowIterations = 0;
    this.windowRolloutS = 0;
    this.windowUpdateS = 0;
  }
}
