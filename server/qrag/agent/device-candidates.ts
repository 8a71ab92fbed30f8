/**
 * The rollout's candidate embeddings on the device: the E_a and E_a' embeddings of every episode
 * embedded together stay in one block of rows, which each episode references by its first row.
 * Scoring joins the distinct blocks in use (usually one or two) instead of slicing each episode
 * out and concatenating them again: on webgpu every slice and concat is a tfjs kernel, ~30 per
 * iteration of the reference workload.
 */
import * as tf from "@tensorflow/tfjs";
import type { ScoreLayout } from "../model/webgpu/twin-q.ts";

/** Both encoders' embeddings of the candidates of several episodes, one after another. */
export interface CandidateBlock {
  online: tf.Tensor2D;
  target: tf.Tensor2D;
  /** Episodes still referencing it: disposed at 0. */
  users: number;
}

/** One episode's candidates: rows [row, row + n) of a block. */
export interface CandidateRef {
  block: CandidateBlock;
  row: number;
  n: number;
}

export function newBlock(online: tf.Tensor2D, target: tf.Tensor2D, users: number): CandidateBlock {
  return { online: tf.keep(online), target: tf.keep(target), users };
}

export function releaseRef(ref: CandidateRef): void {
  if (--ref.block.users > 0) return;
  ref.block.online.dispose();
  ref.block.target.dispose();
}

/** One scoring entry: a state's episode candidates at the rotary positions and availability of its step. */
export interface ScoreEntry {
  ref: CandidateRef;
  positions: Int32Array;
}

/** The distinct blocks of `refs` joined as one [R, D] tensor, and where each block starts in it. */
export interface JoinedBlocks {
  cands: tf.Tensor2D;
  /** A concat of several blocks, which disposeJoined frees (one block is used as it is). */
  owned: boolean;
  base: Map<CandidateBlock, number>;
  R: number;
}

export function joinBlocks(refs: readonly CandidateRef[], which: "online" | "target"): JoinedBlocks {
  const blocks = [...new Set(refs.map((r) => r.block))];
  const base = new Map<CandidateBlock, number>();
  let R = 0;
  for (const b of blocks) {
    base.set(b, R);
    R += b[which].shape[0];
  }
  const owned = blocks.length > 1;
  const cands = owned ? (tf.keep(tf.concat(blocks.map((b) => b[which]), 0)) as tf.Tensor2D) : blocks[0][which];
  return { cands, owned, base, R };
}

export function disposeJoined(j: JoinedBlocks | null): void {
  if (j?.owned) j.cands.dispose();
}

/** scoreRows's layout: entry i scores its episode's rows of `j` at its positions, padded to the longest episode. */
export function scoreLayout(entries: readonly ScoreEntry[], j: JoinedBlocks): ScoreLayout {
  const nMax = Math.max(1, ...entries.map((e) => e.ref.n));
  const padIdx = new Int32Array(entries.length * nMax).fill(j.R);
  const positions = new Int32Array(entries.length * nMax);
  entries.forEach((e, i) => {
    const first = j.base.get(e.ref.block)! + e.ref.row;
    for (let k = 0; k < e.ref.n; k++) {
      padIdx[i * nMax + k] = first + k;
      positions[i * nMax + k] = e.positions[k];
    }
  });
  return { nMax, padIdx, positions };
}
