/**
 * Leave-one-out Q of an episode's picks (ours; issue 11, "Precision"; docs/method.md §11).
 *
 * `loo[k−1][j]` is the Q the agent gives pick j of the first k picks when the state holds the
 * question and the other k−1 of them, with j's position relative to those others: "is this chunk
 * still worth taking once the rest are in?". A greedy first pick can only be judged against the
 * whole haystack (Q cannot see other candidates), so on qa1/qa2 it is often an *earlier* event about
 * the person or object asked about; once the later event is retrieved too, that earlier chunk lies
 * in the gap before it, and an agent trained past completion (BabiLong's training env has
 * `never_terminate`, so every pick after completion earns 0) scores it ≈ 0 there. The `prune`
 * stopping rule (stop-rules.ts) drops such chunks from the kept prefix. The values are only as
 * good as the agent's training on those states: on qa2 the state without the gold first pick is
 * one it never visits, and pruning can drop a gold chunk (docs/method.md §11).
 *
 * Cost per episode of m picks: one batch of m(m+1)/2 − 1 state embeddings and as many single
 * candidate scores; candidates are not re-embedded (their cached embeddings are reused).
 */
import * as tf from "@tensorflow/tfjs";
import { chunkAt, type Sample } from "../types.ts";
import { embedStatesAsync, type QNetworks } from "./networks.ts";
import { scoreCandidates } from "../model/rotary.ts";
import { relativePositionOf } from "../env/positions.ts";
import type { CandidateEmbeddings, GreedyOptions } from "./greedy-options.ts";

/** The rows of the picks' cached embeddings, [m·D] on the host. */
async function pickRows(emb: CandidateEmbeddings, picks: readonly number[], D: number): Promise<Float32Array> {
  if (emb instanceof tf.Tensor) {
    const g = tf.gather(emb, tf.tensor1d(picks as number[], "int32"));
    const v = (await g.data()) as Float32Array;
    g.dispose();
    return v;
  }
  const out = new Float32Array(picks.length * D);
  picks.forEach((c, j) => out.set(emb.subarray(c * D, (c + 1) * D), j * D));
  return out;
}

/**
 * Leave-one-out Q for every prefix of `picks`: row k−1 holds k values; row 0 is the first pick's
 * own Q, `firstQ`, as the episode recorded it.
 */
export async function leaveOneOutQ(nets: QNetworks, sample: Sample, opts: GreedyOptions, picks: readonly number[], firstQ: number, emb: CandidateEmbeddings): Promise<number[][]> {
  const m = picks.length;
  if (m === 0) return [];
  const D = nets.dim;
  const n = sample.chunks.length;
  const mode = opts.episode.positions;
  const states: string[][] = [];
  const where: { row: number; pick: number; position: number }[] = [];
  for (let k = 2; k <= m; k++) {
    for (let j = 0; j < k; j++) {
      const others = picks.slice(0, k).filter((_, o) => o !== j);
      const shown = opts.sortByIndex ? [...others].sort((a, b) => a - b) : others;
      states.push([sample.question, ...shown.map((i) => chunkAt(sample.chunks, i))]);
      // as rotaryPositions(): "none" rotates by 0, "absolute" by the index
      const position = mode === "relative" ? relativePositionOf(n, others, picks[j], opts.episode.stepSize ?? 20) : mode === "none" ? 0 : picks[j];
      where.push({ row: k - 1, pick: j, position });
    }
  }
  const out: number[][] = [[firstQ]];
  for (let k = 2; k <= m; k++) out.push(new Array<number>(k).fill(0));
  if (states.length === 0) return out;
  const s = await embedStatesAsync(nets.state, states, opts.maxInMemory, false);
  const rows = await pickRows(emb, picks, D);
  const q1 = new Float32Array(1);
  const q2 = new Float32Array(1);
  const pos = new Int32Array(1);
  where.forEach((w, b) => {
    pos[0] = w.position;
    scoreCandidates(s.subarray(b * D, (b + 1) * D), rows.subarray(w.pick * D, (w.pick + 1) * D), pos, q1, q2);
    out[w.row][w.pick] = q1[0] + q2[0];
  });
  return out;
}
