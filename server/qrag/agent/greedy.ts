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
import { RetrievalEpisode } from "../env/episode.ts";
import { scoreCandidates } from "../model/rotary.ts";
import { retrievalMetrics, qThresholdFilter } from "../evaluation/metrics.ts";
import type { EpisodeRecord, EpisodeStep } from "../events.ts";
import * as tf from "@tensorflow/tfjs";
import { embedStates, embedActions, embedActionsDevice, embedStatesDevice, type QNetworks } from "./networks.ts";
import { availTensor, greedyPick, scoreRows } from "./device-scoring.ts";
import { blocksLayout } from "../model/webgpu/twin-q.ts";
import type { PickSpec } from "../model/webgpu/greedy-pick.ts";
import { onDevice, withPhase, withPhaseAsync } from "../backend/device.ts";
import { trimWebgpuPool } from "../backend/webgpu-pool.ts";
import { deviceErrorsFirst } from "../backend/webgpu-errors.ts";
import { rotaryPositions } from "./rotary-positions.ts";
import { topkIndices } from "./topk.ts";
import { softValue } from "./soft-value.ts";
import { leaveOneOutQ } from "./leave-one-out.ts";
import { disposeCandidates, type CandidateEmbeddings, type GreedyOptions } from "./greedy-options.ts";

export { disposeCandidates, type CandidateEmbeddings, type GreedyOptions } from "./greedy-options.ts";

/**
 * Embeds every chunk of a sample with E_a in eval mode, streaming over the chunk list (host path),
 * or in large device-resident batches (device path).
 */
export async function embedSampleChunks(nets: QNetworks, sample: Sample, maxActionLength: number, batch = 4096): Promise<CandidateEmbeddings> {
  const n = sample.chunks.length;
  if (onDevice()) {
    const texts: string[] = new Array(n);
    for (let j = 0; j < n; j++) texts[j] = chunkAt(sample.chunks, j);
    const emb = withPhase("encode", () => embedActionsDevice(nets.action, texts, maxActionLength, false));
    trimWebgpuPool(); // the encoder's intermediates, sized by this sample's chunk count (webgpu-pool.ts)
    return emb;
  }
  return withPhase("encode", () => embedSampleChunksHost(nets, sample, maxActionLength, batch));
}

function embedSampleChunksHost(nets: QNetworks, sample: Sample, maxActionLength: number, batch: number): Float32Array {
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

interface StepPick {
  best: number;
  q1: number;
  q2: number;
  /** Logged candidates (available, best first) and their Q. */
  top: { index: number; q: number }[];
  v?: number;
}

export async function greedyEpisode(nets: QNetworks, sample: Sample, opts: GreedyOptions, candidates?: CandidateEmbeddings): Promise<EpisodeRecord> {
  return withPhaseAsync("eval", () => deviceErrorsFirst(async () => {
    const emb = candidates ?? (await embedSampleChunks(nets, sample, opts.maxActionLength, opts.embedBatch));
    try {
      const rec = emb instanceof tf.Tensor ? (await greedyDeviceEpisodes(nets, [sample], opts, emb))[0] : greedyHost(nets, sample, opts, emb);
      if (opts.leaveOneOut && rec.steps.length > 0) rec.loo = await leaveOneOutQ(nets, sample, opts, rec.pred_idx, rec.steps[0].q, emb);
      return rec;
    } finally {
      if (!candidates) disposeCandidates(emb);
      trimWebgpuPool(); // what the episode freed (webgpu-pool.ts)
    }
  }));
}

/**
 * Greedy episodes of `samples` side by side on the device, their candidates `emb` one sample's
 * rows after another's: per step one state forward for the episodes still running, each scored
 * against its own block of rows (twin-q.ts blocksLayout), picked (greedyPick: a row each of
 * [index(K), q(K), q1(K), q2(K), V]) and ONE read for them all. One episode is a group of one.
 * Rows do not see each other (padding is masked), so an episode's record does not depend on its
 * group.
 */
export async function greedyDeviceEpisodes(nets: QNetworks, samples: readonly Sample[], opts: GreedyOptions, emb: tf.Tensor2D): Promise<EpisodeRecord[]> {
  let R = 0;
  const runs = samples.map((sample) => {
    const start = R;
    R += sample.chunks.length;
    return { ep: new RetrievalEpisode(sample, opts.episode), start, steps: [] as EpisodeStep[], gold: new Set(sample.supportIdx), ret: 0, oracleStop: false, over: false };
  });
  if (emb.shape[0] !== R) throw new Error(`greedy episodes: ${emb.shape[0]} candidate rows for samples of ${R} chunks`);
  for (;;) {
    const active = runs.filter((r) => !r.over && !r.ep.done);
    if (active.length === 0) break;
    const spec = pickSpec(opts, Math.max(...active.map((r) => r.ep.numChunks)));
    const joined = tf.tidy(() => {
      const s = embedStatesDevice(nets.state, active.map((r) => r.ep.stateTexts(opts.sortByIndex)), opts.maxInMemory, false);
      const layout = blocksLayout(active.map((r) => ({ start: r.start, positions: rotaryPositions(r.ep) })), R);
      const { q1, q2 } = scoreRows(s, emb, layout);
      return greedyPick(q1, q2, availTensor(active.map((r) => r.ep.available), layout.nMax), spec);
    });
    const rows = (await joined.data()) as Float32Array;
    joined.dispose();
    const width = rows.length / active.length;
    active.forEach((r, i) => {
      const p = pickOfRow(rows, i * width, spec.K, r.ep, opts.logTopK, spec.value !== null);
      if (!p) {
        r.over = true;
        return;
      }
      const step = r.ep.step(p.best);
      r.ret += step.reward;
      r.oracleStop = step.terminated;
      r.steps.push(stepRecord(p, step, r.gold, opts.alpha));
    });
  }
  return runs.map((r, i) => episodeRecord(samples[i], r.ep.numChunks, r.steps, r.ret, r.oracleStop, opts.threshold));
}

/** greedyPick's spec for rows of `n` candidates: the logged top-K, and V where `opts.alpha` is set. */
function pickSpec(opts: GreedyOptions, n: number): PickSpec {
  const value = opts.alpha === undefined ? null : { k: opts.softValueTopK ?? 5, alpha: opts.alpha, heads: opts.softValueHeads ?? "per_head" };
  return { K: Math.max(1, Math.min(opts.logTopK, n)), value };
}

/**
 * The step's pick from greedyPick's row at `o` of `r` ([index(K), q(K), q1(K), q2(K), V], K ≥
 * min(logTopK, n)); null when no candidate is available.
 */
function pickOfRow(r: Float32Array, o: number, K: number, ep: RetrievalEpisode, logTopK: number, withV: boolean): StepPick | null {
  const avail = ep.available;
  const best = r[o];
  if (!(r[o + K] > -Infinity) || !avail[best]) return null;
  const top: { index: number; q: number }[] = [];
  for (let i = 0; i < Math.min(logTopK, ep.numChunks); i++) if (avail[r[o + i]] && r[o + K + i] > -Infinity) top.push({ index: r[o + i], q: r[o + K + i] });
  return { best, q1: r[o + 2 * K], q2: r[o + 3 * K], top, ...(withV ? { v: r[o + 4 * K] } : {}) };
}

function greedyHost(nets: QNetworks, sample: Sample, opts: GreedyOptions, emb: Float32Array): EpisodeRecord {
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
    const soft = opts.alpha === undefined ? undefined : { v: softValue(q1, q2, avail, opts.alpha, opts.softValueTopK ?? 5, opts.softValueHeads), alpha: opts.alpha };
    const r = ep.step(best);
    ret += r.reward;
    oracleStop = r.terminated;
    const pick: StepPick = { best, q1: q1[best], q2: q2[best], top: top.map((j) => ({ index: j, q: q[j] })), ...(soft ? { v: soft.v } : {}) };
    steps.push(stepRecord(pick, r, gold, opts.alpha));
  }
  return episodeRecord(sample, n, steps, ret, oracleStop, opts.threshold);
}

function stepRecord(p: StepPick, r: ReturnType<RetrievalEpisode["step"]>, gold: Set<number>, alpha: number | undefined): EpisodeStep {
  return {
    index: p.best,
    text: r.item.text,
    position: r.item.position,
    q: p.q1 + p.q2,
    // each head is trained towards G/2, so 2·q_h is that head's Q estimate (docs/method.md §2.2)
    q1: 2 * p.q1,
    q2: 2 * p.q2,
    gold: gold.has(p.best),
    reward: r.reward,
    topk: p.top.map((c) => ({ index: c.index, q: c.q, gold: gold.has(c.index) })),
    ...(alpha !== undefined && p.v !== undefined && Number.isFinite(p.v) ? { v: p.v, alpha } : {}),
  };
}

function episodeRecord(sample: Sample, n: number, steps: EpisodeStep[], ret: number, oracleStop: boolean, threshold: number): EpisodeRecord {
  const pred = steps.map((s) => s.index);
  const qValues = steps.map((s) => s.q);
  const kept = qThresholdFilter(qValues, threshold);
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
    filtered: { ...retrievalMetrics(pred.slice(0, kept), sample.supportIdx), threshold, kept },
    steps,
  };
}
