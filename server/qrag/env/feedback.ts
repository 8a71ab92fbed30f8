/**
 * Ground-truth feedback (docs/method.md §1.6, reference `GroundTruthFeedback`): the completion
 * reward is paid once, at the step the last missing support chunk enters the state; with
 * penalize_extra_steps it is scaled by 0.5 + 0.5·|sf|/(|pred| + 1e-5), so using exactly |sf| steps
 * earns the full reward (0.5 is the reference's floor; `extraStepsFloor` changes it, ours).
 * `never_terminate` keeps the episode running (later steps pay 0).
 */
export interface FeedbackConfig {
  /** Reward per newly found support chunk (reference default 0, never changed). */
  perFactReward: number;
  /** Reward paid once when every support chunk has been retrieved. */
  completionReward: number;
  penalizeExtraSteps: boolean;
  /** floor of the penalty scale: floor + (1 − floor)·|sf|/|pred| (reference 0.5). */
  extraStepsFloor: number;
  /** When true, completion never ends the episode (it runs to max_steps). */
  neverTerminate: boolean;
}

const DEFAULT_FEEDBACK: FeedbackConfig = {
  perFactReward: 0,
  completionReward: 1,
  penalizeExtraSteps: true,
  extraStepsFloor: 0.5,
  neverTerminate: false,
};

interface FeedbackResult {
  reward: number;
  /** All support chunks found (stays true once reached). */
  completed: boolean;
  /** The episode ends because of completion (completed && !neverTerminate). */
  terminated: boolean;
}

export class GroundTruthFeedback {
  readonly config: FeedbackConfig;
  private readonly support: ReadonlySet<number>;
  private readonly found = new Set<number>();
  private done = false;

  constructor(supportIdx: readonly number[], config: Partial<FeedbackConfig> = {}) {
    this.config = { ...DEFAULT_FEEDBACK, ...config };
    this.support = new Set(supportIdx);
  }

  get completed(): boolean {
    return this.done;
  }

  get foundCount(): number {
    return this.found.size;
  }

  /** Support chunks not yet found: completion takes at least this many more steps. */
  get missing(): number {
    return this.support.size - this.found.size;
  }

  /** Feedback for the state after a step; `predAll` = every chunk index retrieved so far. */
  step(predAll: readonly number[]): FeedbackResult {
    const pred = new Set(predAll);
    let newFacts = 0;
    for (const i of pred) {
      if (this.support.has(i) && !this.found.has(i)) {
        this.found.add(i);
        newFacts++;
      }
    }
    const c = this.config;
    let reward = newFacts * c.perFactReward;
    // Checked every step (not only when a fact is new), as in the reference: with an empty
    // support set the first step completes.
    if (!this.done && this.found.size === this.support.size) {
      this.done = true;
      reward += c.penalizeExtraSteps
        ? c.completionReward * (c.extraStepsFloor + ((1 - c.extraStepsFloor) * this.support.size) / (pred.size + 1e-5))
        : c.completionReward;
    }
    return { reward, completed: this.done, terminated: this.done && !c.neverTerminate };
  }
}
