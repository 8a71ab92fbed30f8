/**
 * Greedy evaluation episodes run side by side on the device: the group's candidates embedded in
 * one encode, then per step one state forward for every episode still running, their scores and
 * picks (one row each, device-scoring.ts greedyPick) and ONE read for them all. The records equal
 * greedy.ts's one-at-a-time episodes (rows do not see each other: padding is masked); the device
 * does per step what it did per episode-step. Why: a run's evaluation (babilong-gpu: 1,000
 * episodes every 500 updates) ran each episode's steps as forwards of one state, each with its
 * read, ahead of the first update too.
 *
 * The host path and the leave-one-out pass keep greedy.ts's episodes one at a time.
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
import { episodeRecord, greedyEpisode, pickOfRow, pickSpec, stepRecord, type GreedyOptions } from "./greedy.ts";

/** Episodes of one group at most: a step's forward takes this many states. */
export const GROUP_EPISODES = 32;
/** Candidate rows of one group at most (a sample with more runs alone). */
export const GROUP_CANDIDATES = 16_384;

/**
 * Episodes a group takes with these options: GROUP_EPISODES on the device; one elsewhere and with
 * leave-one-out, which run one at a time anyway, so a caller checks for a cancel between episodes.
 */
export function groupEpisodes(opts: { leaveOneOut?: boolean }): number {
  return onDevice() && !opts.leaveOneOut ? GROUP_EPISODES : 1;
}

/**
 * Consecutive samples cut into groups of at most `episodes` episodes and `candidates` candidate
 * rows, drawn as the groups are taken (a long-context evaluation set is not held at once).
 */
export function* evalGroups<T extends { chunks: { length: number } }>(samples: Iterable<T>, episodes: number, candidates = GROUP_CANDIDATES): Generator<T[]> {
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

/** The greedy episodes of `samples`, in their order: side by side on the device, one at a time elsewhere or with leave-one-out. */
export async function greedyEpisodes(nets: QNetworks, samples: readonly Sample[], opts: GreedyOptions): Promise<EpisodeRecord[]> {
  if (!onDevice() || opts.leaveOneOut || samples.length < 2) {
    const out: EpisodeRecord[] = [];
    for (const s of samples) out.push(await greedyEpisode(nets, s, opts));
    return out;
  }
  return withPhaseAsync("eval", () => deviceErrorsFirst(() => sideBySide(nets, samples, opts)));
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

async function sideBySide(nets: QNetworks, samples: readonly Sample[], opts: GreedyOptions): Promise<EpisodeRecord[]> {
  const texts: string[] = [];
  const runs: Running[] = samples.map((sample) => {
    const start = texts.length;
    for (let j = 0; j < sample.chunks.length; j++) texts.push(chunkAt(sample.chunks, j));
    return { ep: new RetrievalEpisode(sample, opts.episode), start, steps: [], gold: new Set(sample.supportIdx), ret: 0, oracleStop: false, over: false };
  });
  const emb = withPhase("encode", () => embedActionsDevice(nets.action, texts, opts.maxActionLength, false));
  try {
    for (;;) {
      const active = runs.filter((r) => !r.over && !r.ep.done);
      if (active.length === 0) break;
      const spec = pickSpec(opts, Math.max(...active.map((r) => r.ep.numChunks)));
      const joined = tf.tidy(() => {
        const s = embedStatesDevice(nets.state, active.map((r) => r.ep.stateTexts(opts.sortByIndex)), opts.maxInMemory, false);
        const layout = blocksLayout(active.map((r) => ({ start: r.start, positions: rotaryPositions(r.ep) })), texts.length);
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
  } finally {
    emb.dispose();
    trimWebgpuPool(); // what the group freed (webgpu-pool.ts)
  }
}
