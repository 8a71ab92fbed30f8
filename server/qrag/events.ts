/**
 * The typed events `train()`, `evaluate()` and `sweep()` emit. The worker batches and numbers
 * them for the dashboard; the CLI prints progress and writes them as JSONL. Every event is plain
 * JSON (no tensors, no class instances) so it can cross a socket unchanged.
 */

/** Metric keys, as in the reference's TensorBoard scalars where one exists. */
export type MetricKey =
  | "qf_loss"
  | "train_return"
  | "eval_return"
  | "eval_coverage"
  | "eval_f1"
  | "eval_precision"
  | "eval_recall"
  | "eval_steps"
  | "alpha"
  | "lr"
  | "grad_norm"
  | "transitions_per_s"
  | "updates_per_s";

export interface StepCandidate {
  index: number;
  q: number;
  gold: boolean;
}

/** One retrieval step of an episode (a superset of the reference's eval_seed*.jsonl per-step data). */
export interface EpisodeStep {
  index: number;
  text: string;
  /** Relative position value of the chosen chunk at selection time. */
  position: number;
  q: number;
  q1: number;
  q2: number;
  gold: boolean;
  reward: number;
  topk: StepCandidate[];
}

export interface RetrievalScores {
  precision: number;
  recall: number;
  f1: number;
  /** The reference's "em": all supporting facts retrieved. */
  coverage: number;
}

export interface EpisodeRecord {
  id: string;
  question: string;
  answer: string;
  /** Reference field names kept for compatibility with eval_seed*.jsonl consumers. */
  sf_idx: number[];
  pred_idx: number[];
  q_values: number[];
  sf_texts: string[];
  pred_texts: string[];
  return: number;
  num_chunks: number;
  /** Measured or estimated GPT-2 tokens of the whole context. */
  text_len?: number;
  /** true when the episode stopped at the ground-truth completion oracle. */
  oracle_stop: boolean;
  /** Metrics of all picks, and after the Q-threshold stopping filter. */
  metrics: RetrievalScores;
  filtered: RetrievalScores & { threshold: number; kept: number };
  steps: EpisodeStep[];
}

export interface RunMeta {
  name: string;
  backend: string;
  device: string;
  engineVersion: string;
  config: unknown;
  startedAt: string;
  resumedFrom?: string;
}

export type EngineEvent =
  | { type: "run_start"; meta: RunMeta }
  | { type: "metric"; key: MetricKey; step: number; update: number; value: number; wall: number }
  | { type: "episode"; phase: "train" | "eval"; step: number; update: number; record: EpisodeRecord }
  | { type: "checkpoint"; step: number; update: number; path: string; best: boolean; evalReturn?: number }
  | { type: "progress"; phase: string; done: number; total: number; etaSeconds?: number; message?: string }
  | { type: "log"; level: "info" | "warn" | "error"; message: string }
  | { type: "sweep_point"; point: SweepPoint }
  | { type: "run_end"; status: "completed" | "cancelled" | "failed"; step: number; update: number; error?: string };

export interface SweepPoint {
  numChunks: number;
  /** Reference label (1K, 4K, …) and the GPT-2 token count measured on our text. */
  label: string;
  tokens: number;
  samples: number;
  oracle_stop: boolean;
  threshold: number;
  qrag: RetrievalScores;
  qragFiltered: RetrievalScores & { avgKept: number };
  bm25: RetrievalScores;
  dense: RetrievalScores;
  /** Baselines retrieve this many chunks in one step. */
  baselineK: number;
  episodeSeconds: number;
  encodeSeconds: number;
}

export type EventSink = (e: EngineEvent) => void;
