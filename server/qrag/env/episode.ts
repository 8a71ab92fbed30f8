/**
 * One retrieval episode over a Sample (docs/method.md §1.2–§1.5): each action takes one
 * still-available chunk; positions are recomputed from the selected set after every step; the
 * episode ends on completion (unless never_terminate) or is truncated when every chunk is taken or
 * max_steps is reached. Truncation is treated like termination by the learner (no bootstrap).
 */
import { chunkAt, type Sample } from "../types.ts";
import { GroundTruthFeedback, type FeedbackConfig } from "./feedback.ts";
import { positionsFor, type PositionsMode } from "./positions.ts";

export interface EpisodeConfig {
  maxSteps: number;
  positions: PositionsMode;
  /** Relative-position step size (the reference's 20, docs/method.md §1.4). */
  stepSize?: number;
  feedback?: Partial<FeedbackConfig>;
}

/** What a transition records about the chosen chunk (reference `TextMemoryItem`). */
interface MemoryItem {
  index: number;
  /** Position value of the chunk at selection time, i.e. before positions are updated. */
  position: number;
  text: string;
}

interface StepResult {
  reward: number;
  done: boolean;
  terminated: boolean;
  truncated: boolean;
  /** All support chunks are in the state (independent of never_terminate). */
  completed: boolean;
  item: MemoryItem;
}

export class RetrievalEpisode {
  readonly sample: Sample;
  readonly maxSteps: number;
  readonly mode: PositionsMode;
  readonly stepSize: number;
  /** 1 = still selectable. Shared, updated in place: callers may read it but must not write it. */
  readonly available: Uint8Array;
  private readonly order: number[] = [];
  private pos: Int32Array;
  private readonly feedback: GroundTruthFeedback;
  private finished = false;

  constructor(sample: Sample, config: EpisodeConfig) {
    if (!(config.maxSteps >= 1)) throw new RangeError(`maxSteps must be ≥ 1, got ${config.maxSteps}`);
    this.sample = sample;
    this.maxSteps = config.maxSteps;
    this.mode = config.positions;
    this.stepSize = config.stepSize ?? 20;
    const n = sample.chunks.length;
    this.available = new Uint8Array(n).fill(1);
    this.pos = positionsFor(this.mode, n, [], this.stepSize);
    this.feedback = new GroundTruthFeedback(sample.supportIdx, config.feedback);
  }

  get numChunks(): number {
    return this.available.length;
  }

  get numSteps(): number {
    return this.order.length;
  }

  /** Selected chunk indices in retrieval order. */
  get selected(): readonly number[] {
    return this.order;
  }

  /** Current position value of every candidate (recomputed after each step). */
  get positions(): Int32Array {
    return this.pos;
  }

  get done(): boolean {
    return this.finished;
  }

  /** Steps until truncation (max_steps, or every chunk taken) ends this episode, whatever it picks. */
  get stepsToTruncation(): number {
    return Math.min(this.maxSteps, this.available.length) - this.order.length;
  }

  /**
   * Steps this episode takes before it can end: the next `stepsBeforeEnd − 1` steps surely do not
   * end it (truncation is that far off, and completion needs every missing support chunk, one a
   * step), the one after may. What the rollout's device lock-steps run without the host.
   */
  get stepsBeforeEnd(): number {
    const left = this.stepsToTruncation;
    const fb = this.feedback;
    const completes = fb.config.neverTerminate || fb.completed ? Infinity : Math.max(1, fb.missing);
    return Math.max(0, Math.min(left, completes));
  }

  step(action: number): StepResult {
    if (this.finished) throw new Error("RetrievalEpisode.step called after the episode ended");
    if (!Number.isInteger(action) || action < 0 || action >= this.available.length || this.available[action] === 0) {
      throw new RangeError(`action ${action} is not an available chunk`);
    }
    const item: MemoryItem = { index: action, position: this.pos[action], text: chunkAt(this.sample.chunks, action) };
    this.available[action] = 0;
    this.order.push(action);
    if (this.mode === "relative") this.pos = positionsFor(this.mode, this.available.length, this.order, this.stepSize);
    const truncated = this.order.length >= this.available.length || this.order.length >= this.maxSteps;
    const fb = this.feedback.step(this.order);
    const done = fb.terminated || truncated;
    this.finished = done;
    return { reward: fb.reward, done, terminated: fb.terminated, truncated, completed: fb.completed, item };
  }

  /**
   * The state as its pieces: [question, ...chosen chunk texts], chunks in document order when
   * `sortByIndex` (BabiLong) else in retrieval order. Pieces are tokenised separately
   * (docs/method.md §1.2).
   */
  stateTexts(sortByIndex: boolean): string[] {
    const idx = sortByIndex ? [...this.order].sort((a, b) => a - b) : this.order;
    return [this.sample.question, ...idx.map((i) => chunkAt(this.sample.chunks, i))];
  }

  /** The reference's single-string state: pieces joined with " [SEP] ". */
  stateText(sortByIndex: boolean, sep = " [SEP] "): string {
    return this.stateTexts(sortByIndex).join(sep);
  }
}
