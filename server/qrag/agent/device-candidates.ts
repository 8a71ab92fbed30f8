/**
 * The rollout's candidate embeddings on the device: the E_a embeddings of every episode embedded
 * together stay in one block of rows, which each episode references by its first row. Scoring
 * joins the distinct blocks in use (usually one or two) instead of slicing each episode out and
 * concatenating them again: on webgpu every slice and concat is a tfjs kernel, ~30 per iteration
 * of the reference workload.
 */
import * as tf from "@tensorflow/tfjs";
import type { ScoreLayout } from "../model/webgpu/twin-q.ts";
import { joinRows } from "../model/webgpu/join-rows.ts";

/**
 * The candidates of several episodes embedded together: E_a's embeddings (the policy scores them
 * during the rollout) and the texts, which E_a' embeds after the rollout for the deferred values
 * (targetsJoined): the target encoders do not change during a rollout, so one batch then equals
 * a batch per embedding event (three forwards fewer per iteration of the reference workload).
 */
export interface CandidateBlock {
  online: tf.Tensor2D;
  texts: readonly string[];
  /** Episodes still referencing it: disposed at 0. */
  users: number;
}

/** One episode's candidates: rows [row, row + n) of a block. */
export interface CandidateRef {
  block: CandidateBlock;
  row: number;
  n: number;
}

export function newBlock(online: tf.Tensor2D, texts: readonly string[], users: number): CandidateBlock {
  return { online: tf.keep(online), texts, users };
}

export function releaseRef(ref: CandidateRef): void {
  if (--ref.block.users > 0) return;
  ref.block.online.dispose();
}

/** One scoring entry: a state's episode candidates at the rotary positions and availability of its step. */
export interface ScoreEntry {
  ref: CandidateRef;
  positions: Int32Array;
}

/** The distinct blocks of `refs` joined as one [R, D] tensor, and where each block starts in it. */
export interface JoinedBlocks {
  cands: tf.Tensor2D;
  /** Made for the join (several blocks, or the target batch), which disposeJoined frees; one block's E_a is used as it is. */
  owned: boolean;
  base: Map<CandidateBlock, number>;
  R: number;
}

/** The E_a embeddings of the distinct blocks of `refs` as one tensor (a join by copies when several). */
export function joinBlocks(refs: readonly CandidateRef[]): JoinedBlocks {
  const { blocks, base, R } = bases(refs);
  const owned = blocks.length > 1;
  const cands = owned ? tf.keep(joinRows(blocks.map((b) => b.online))) : blocks[0].online;
  return { cands, owned, base, R };
}

/** The E_a' embeddings of the distinct blocks of `refs`: `embed` of all their texts in one call. */
export function targetsJoined(refs: readonly CandidateRef[], embed: (texts: string[]) => tf.Tensor2D): JoinedBlocks {
  const { blocks, base, R } = bases(refs);
  return { cands: tf.keep(embed(blocks.flatMap((b) => b.texts))), owned: true, base, R };
}

/** The distinct blocks of `refs`, in first use, and where each starts when joined. */
function bases(refs: readonly CandidateRef[]): { blocks: CandidateBlock[]; base: Map<CandidateBlock, number>; R: number } {
  const blocks = [...new Set(refs.map((r) => r.block))];
  const base = new Map<CandidateBlock, number>();
  let R = 0;
  for (const b of blocks) {
    base.set(b, R);
    R += b.texts.length;
  }
  return { blocks, base, R };
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
