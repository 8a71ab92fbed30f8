/**
 * Greedy evaluation episodes run side by side on the device: the group's candidates embedded in
 * one encode, then per step one state forward for every episode still running, their scores and
 * picks (one row each, device-scoring.ts greedyPick) and ONE read for them all. The records equal
 * greedy.ts's one-at-a-time episodes (rows do not see each other: padding is masked); the device
 * does per step what it did per episode-step. Why: a run's evaluation (babilong-gpu: 1,000
 * episodes every 500 updates) ran each episode's steps as forwards of one state, each with its
 * read, ahead of the first update too.
 *
 * The host path keeps greedy.ts's episodes one at a time; with leave-one-out, each episode's
 * prefixes are scored after the group's steps (leave-one-out.ts, one batch an episode).
 */
import * as tf from "@tensorflow/tfjs";
import type { Sample } from "../types.ts";
import { chunkAt } from "../types.ts";
import { RetrievalEpisode } from "../env/episode.ts";
import type { EpisodeRecord, EpisodeStep } from "../events.ts";
import { onDevice, withPhase, withPhaseAsync } from "../backend/device.ts";
import { trimWebgpuPool } from "../backend/webgpu-pool.ts";
import { deviceErrorsFirst } from "../backend/webgpu-errors.ts";
import { blocksLayout } from "../model/webgpu/twin-q.ts";
import { embedActionsDevice, embedStatesDevice, type QNetworks } from "./networks.ts";
import { availTensor, greedyPick, scoreRows } from "./device-scoring.ts";
import { rotaryPositions } from "./rotary-positions.ts";
import { disposeCandidates, embedSampleChunks, episodeRecord, greedyEpisode, pickOfRow, pickSpec, stepRecord, type CandidateEmbeddings, type GreedyOptions } from "./greedy.ts";
import { leaveOneOutQ } from "./leave-one-out.ts";

/** Episodes of one group at most: a step's forward takes this many states. */
export const GROUP_EPISODES = 32;
/** Candidate rows of one group at most (a sample with more runs alone). */
export const GROUP_CANDIDATES = 16_384;

/**
 * Episodes a group takes: GROUP_EPISODES on the device; one elsewhere, where episodes run one at a
 * time anyway, so a caller checks for a cancel between episodes.
 */
export function groupEpisodes(): number {
  return onDevice() ? GROUP_EPISODES : 1;
}

/**
 * Consecutive samples cut into groups of at most `episodes` episodes and `candidates` candidate
 * rows, drawn as the groups are taken (a long-context evaluation set is not held at once).
 */
export function* episodeGroups<T extends { chunks: { length: number } }>(samples: Iterable<T>, episodes: number, candidates = GROUP_CANDIDATES): Generator<T[]> {
  let group: T[] = [];
  let rows = 0;
  for (const s of samples) {
    if (group.length > 0 && (group.length >= episodes || rows + s.chunks.length > candidates)) {
      yield group;
      group = [];
      rows = 0;
    }
    group.push(s);
    rows += s.chunks.length;
  }
  if (group.length > 0) yield group;
}

/**
 * The candidates of a group's samples, one sample's rows after another's (greedyEpisodes's
 * `candidates`): one encode on the device, each sample's as embedSampleChunks gives it elsewhere.
 */
export async function embedGroupChunks(nets: QNetworks, samples: readonly Sample[], maxActionLength: number): Promise<CandidateEmbeddings> {
  if (samples.length === 1) return embedSampleChunks(nets, samples[0], maxActionLength);
  if (onDevice()) {
    const emb = withPhase("encode", () => embedActionsDevice(nets.action, groupTexts(samples), maxActionLength, false));
    trimWebgpuPool(); // the encoder's intermediates (webgpu-pool.ts)
    return emb;
  }
  const parts = [];
  for (const s of samples) parts.push((await embedSampleChunks(nets, s, maxActionLength)) as Float32Array);
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Every chunk text of the samples, one sample's after another's. */
function groupTexts(samples: readonly Sample[]): string[] {
  const texts: string[] = [];
  for (const s of samples) for (let j = 0; j < s.chunks.length; j++) texts.push(chunkAt(s.chunks, j));
  return texts;
}

/** Rows start … start + n − 1 of a group's candidates (a view on the host, a slice to dispose on the device). */
function rowsOf(c: CandidateEmbeddings, start: number, n: number, D: number): CandidateEmbeddings {
  return c instanceof tf.Tensor ? tf.slice(c, [start, 0], [n, D]) : c.subarray(start * D, (start + n) * D);
}

/**
 * The greedy episodes of `samples`, in their order: side by side on the device, one at a time
 * elsewhere. `candidates`: the group's, from embedGroupChunks (the caller's to dispose); without
 * them the group's are embedded here.
 */
export async function greedyEpisodes(nets: QNetworks, samples: readonly Sample[], opts: GreedyOptions, candidates?: CandidateEmbeddings): Promise<EpisodeRecord[]> {
  if (!onDevice() || samples.length < 2 || !(candidates === undefined || candidates instanceof tf.Tensor)) {
    const out: EpisodeRecord[] = [];
    let start = 0;
    for (const s of samples) {
      const n = s.chunks.length;
      const own = candidates && (samples.length === 1 ? candidates : rowsOf(candidates, start, n, nets.dim));
      try {
        out.push(await greedyEpisode(nets, s, opts, own));
      } finally {
        if (own !== candidates) disposeCandidates(own);
      }
      start += n;
    }
    return out;
  }
  return withPhaseAsync("eval", () => deviceErrorsFirst(() => sideBySide(nets, samples, opts, candidates)));
}

interface Running {
  ep: RetrievalEpisode;
  /** Its first row among the group's candidates. */
  start: number;
  steps: EpisodeStep[];
  gold: Set<number>;
  ret: number;
  oracleStop: boolean;
  over: boolean;
}

async function sideBySide(nets: QNetworks, samples: readonly Sample[], opts: GreedyOptions, candidates?: tf.Tensor2D): Promise<EpisodeRecord[]> {
  let R = 0;
  const runs: Running[] = samples.map((sample) => {
    const start = R;
    R += sample.chunks.length;
    return { ep: new RetrievalEpisode(sample, opts.episode), start, steps: [], gold: new Set(sample.supportIdx), ret: 0, oracleStop: false, over: false };
  });
  const emb = candidates ?? withPhase("encode", () => embedActionsDevice(nets.action, groupTexts(samples), opts.maxActionLength, false));
  if (emb.shape[0] !== R) throw new Error(`greedyEpisodes: ${emb.shape[0]} candidate rows for samples of ${R} chunks`);
  try {
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
    const records = runs.map((r, i) => episodeRecord(samples[i], r.ep.numChunks, r.steps, r.ret, r.oracleStop, opts.threshold));
    if (opts.leaveOneOut) {
      // each episode's prefixes against its own block of the candidates, as greedy.ts does for one
      for (const [i, rec] of records.entries()) {
        if (rec.steps.length === 0) continue;
        const block = rowsOf(emb, runs[i].start, runs[i].ep.numChunks, nets.dim);
        try {
          rec.loo = await leaveOneOutQ(nets, samples[i], opts, rec.pred_idx, rec.steps[0].q, block);
        } finally {
          disposeCandidates(block);
        }
      }
    }
    return records;
  } finally {
    if (emb !== candidates) emb.dispose();
    trimWebgpuPool(); // what the group freed (webgpu-pool.ts)
  }
}
