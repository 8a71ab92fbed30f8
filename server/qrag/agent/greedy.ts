/**
 * Greedy evaluation episodes (docs/method.md §4.1): candidates embedded once per episode with E_a
 * in eval mode and only re-rotated per step; argmax of ⟨E_s(s), R(p)E_a(a)⟩ over available chunks.
 * The record keeps, for every step, the chosen chunk, its position, Q, Q1, Q2 and the top-k
 * candidates, plus the reference's eval_seed*.jsonl fields and metrics with and without the
 * Q-threshold stopping filter. With `alpha` set, each step also records the state's soft value
 * V(s) (the learner's definition, soft-value.ts) and α, so a replay can show where V sits among
 * the candidates' Q-values.
 */
import type { Sample } from "../types.ts";
import { chunkAt } from "../types.ts";
import { RetrievalEpisode, type EpisodeConfig } from "../env/episode.ts";
import { scoreCandidates } from "../model/rotary.ts";
import { retrievalMetrics, qThresholdFilter } from "../metrics.ts";
import type { EpisodeRecord, EpisodeStep } from "../events.ts";
import { embedStates, embedActions, type QNetworks } from "./networks.ts";
import { rotaryPositions } from "./rotary-positions.ts";
import { topkIndices } from "./topk.ts";
import { softValue } from "./soft-value.ts";

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
}

/** Embeds every chunk of a sample with E_a in eval mode, streaming over the chunk list. */
export function embedSampleChunks(nets: QNetworks, sample: Sample, maxActionLength: number, batch = 4096): Float32Array {
  const n = sample.chunks.length;
  const D = nets.dim;
  const out = new Float32Array(n * D);
  for (let i = 0; i < n; i += batch) {
    const texts: string[] = [];
    for (let j = i; j < Math.min(n, i + batch); j++) texts.push(chunkAt(sample.chunks, j));
    embedActions(nets.action, texts, maxActionLength, false, out, i * D, batch);
  }
  return out;
}

export function greedyEpisode(nets: QNetworks, sample: Sample, opts: GreedyOptions, candidates?: Float32Array): EpisodeRecord {
  const emb = candidates ?? embedSampleChunks(nets, sample, opts.maxActionLength, opts.embedBatch);
  const ep = new RetrievalEpisode(sample, opts.episode);
  const n = ep.numChunks;
  const D = nets.dim;
  const q1 = new Float32Array(n);
  const q2 = new Float32Array(n);
  const q = new Float32Array(n);
  const gold = new Set(sample.supportIdx);
  const steps: EpisodeStep[] = [];
  let ret = 0;
  let oracleStop = false;
  while (!ep.done) {
    const s = embedStates(nets.state, [ep.stateTexts(opts.sortByIndex)], opts.maxInMemory, false);
    scoreCandidates(s.subarray(0, D), emb, rotaryPositions(ep), q1, q2);
    const avail = ep.available;
    let best = -1;
    for (let j = 0; j < n; j++) {
      q[j] = avail[j] ? q1[j] + q2[j] : -Infinity;
      if (avail[j] && (best < 0 || q[j] > q[best])) best = j;
    }
    if (best < 0) break;
    const top = topkIndices(q, Math.min(opts.logTopK, n)).filter((j) => avail[j]);
    // V(s) over the availability at selection time, before the pick is masked
    const soft = opts.alpha === undefined ? undefined : { v: softValue(q1, q2, avail, opts.alpha, opts.softValueTopK ?? 5), alpha: opts.alpha };
    const r = ep.step(best);
    ret += r.reward;
    oracleStop = r.terminated;
    steps.push({
      index: best,
      text: r.item.text,
      position: r.item.position,
      q: q1[best] + q2[best],
      // each head is trained towards G/2, so 2·q_h is that head's Q estimate (docs/method.md §2.2)
      q1: 2 * q1[best],
      q2: 2 * q2[best],
      gold: gold.has(best),
      reward: r.reward,
      topk: top.map((j) => ({ index: j, q: q[j], gold: gold.has(j) })),
      ...(soft && Number.isFinite(soft.v) ? soft : {}),
    });
  }
  const pred = steps.map((s) => s.index);
  const qValues = steps.map((s) => s.q);
  const kept = qThresholdFilter(qValues, opts.threshold);
  return {
    id: sample.id,
    question: sample.question,
    answer: sample.answer,
    sf_idx: [...sample.supportIdx],
    pred_idx: pred,
    q_values: qValues,
    sf_texts: sample.supportIdx.map((i) => chunkAt(sample.chunks, i)),
    pred_texts: steps.map((s) => s.text),
    return: ret,
    num_chunks: n,
    oracle_stop: oracleStop,
    metrics: retrievalMetrics(pred, sample.supportIdx),
    filtered: { ...retrievalMetrics(pred.slice(0, kept), sample.supportIdx), threshold: opts.threshold, kept },
    steps,
  };
}
