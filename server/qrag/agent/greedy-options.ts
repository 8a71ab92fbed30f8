/**
 * What a greedy evaluation episode (greedy.ts) is run with: its options and the candidate
 * embeddings it scores. The leave-one-out pass (leave-one-out.ts) takes the same two, so both
 * import them from here rather than from each other.
 */
import * as tf from "@tensorflow/tfjs";
import type { EpisodeConfig } from "../env/episode.ts";
import type { SoftValueHeads } from "./soft-value.ts";

export interface GreedyOptions {
  episode: EpisodeConfig;
  maxActionLength: number;
  maxInMemory: number;
  sortByIndex: boolean;
  /** Q-threshold of the stopping filter (docs/method.md §4.2; default 0.5). */
  threshold: number;
  /** Candidates logged per step. */
  logTopK: number;
  /** Batch size for embedding candidates. */
  embedBatch?: number;
  /** Soft-value temperature α at evaluation time; when set, steps record V(s) and α. */
  alpha?: number;
  /** Top-k of the soft value (the learner's `algo.hyperparams.topk`; default 5). */
  softValueTopK?: number;
  /** The learner's `algo.hyperparams.soft_value_heads` (default "per_head"). */
  softValueHeads?: SoftValueHeads;
  /** Also record each prefix's leave-one-out Q (`loo`, leave-one-out.ts) for the prune rule. */
  leaveOneOut?: boolean;
}

/**
 * A sample's candidate embeddings: a host array on the CPU path, a device-resident [n, D] tensor
 * on the device path (dispose with `disposeCandidates`).
 */
export type CandidateEmbeddings = Float32Array | tf.Tensor2D;

export function disposeCandidates(c: CandidateEmbeddings | undefined): void {
  if (c instanceof tf.Tensor) c.dispose();
}
