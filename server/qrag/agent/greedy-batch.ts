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
import type { EpisodeRecord } from "../events.ts";
import { onDevice, withPhase, withPhaseAsync } from "../backend/device.ts";
import { trimWebgpuPool } from "../backend/webgpu-pool.ts";
import { deviceErrorsFirst } from "../backend/webgpu-errors.ts";
import { embedActionsDevice, type QNetworks } from "./networks.ts";
import { embedSampleChunks, greedyDeviceEpisodes, greedyEpisode, type CandidateEmbeddings, type GreedyOptions } from "./greedy.ts";
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
 * `candidates`): one encode on the device; a group of one sample as embedSampleChunks gives it
 * (several run side by side on the device only: groupEpisodes).
 */
export async function embedGroupChunks(nets: QNetworks, samples: readonly Sample[], maxActionLength: number): Promise<CandidateEmbeddings> {
  if (samples.length === 1) return embedSampleChunks(nets, samples[0], maxActionLength);
  if (!onDevice()) throw new Error(`embedGroupChunks: a group of ${samples.length} samples off the device (groups there are of one: groupEpisodes)`);
  const emb = withPhase("encode", () => embedActionsDevice(nets.action, groupTexts(samples), maxActionLength, false));
  trimWebgpuPool(); // the encoder's intermediates (webgpu-pool.ts)
  return emb;
}

/** Every chunk text of the samples, one sample's after another's. */
function groupTexts(samples: readonly Sample[]): string[] {
  const texts: string[] = [];
  for (const s of samples) for (let j = 0; j < s.chunks.length; j++) texts.push(chunkAt(s.chunks, j));
  return texts;
}

/**
 * The greedy episodes of `samples`, in their order: side by side on the device (greedy.ts
 * greedyDeviceEpisodes), one at a time elsewhere. `candidates`: the group's, from embedGroupChunks
 * (the caller's to dispose); without them the group's are embedded here.
 */
export async function greedyEpisodes(nets: QNetworks, samples: readonly Sample[], opts: GreedyOptions, candidates?: CandidateEmbeddings): Promise<EpisodeRecord[]> {
  if (samples.length < 2) return samples.length ? [await greedyEpisode(nets, samples[0], opts, candidates)] : [];
  if (candidates instanceof Float32Array) throw new Error(`greedyEpisodes: host candidates for a group of ${samples.length} samples (groups off the device are of one: groupEpisodes)`);
  if (onDevice()) return withPhaseAsync("eval", () => deviceErrorsFirst(() => sideBySide(nets, samples, opts, candidates)));
  const out: EpisodeRecord[] = [];
  for (const s of samples) out.push(await greedyEpisode(nets, s, opts));
  return out;
}

async function sideBySide(nets: QNetworks, samples: readonly Sample[], opts: GreedyOptions, candidates?: tf.Tensor2D): Promise<EpisodeRecord[]> {
  const emb = candidates ?? ((await embedGroupChunks(nets, samples, opts.maxActionLength)) as tf.Tensor2D);
  try {
    const records = await greedyDeviceEpisodes(nets, samples, opts, emb);
    if (opts.leaveOneOut) {
      // each episode's prefixes against its own block of the candidates, as greedyEpisode does for one
      let start = 0;
      for (const [i, rec] of records.entries()) {
        const n = samples[i].chunks.length;
        if (rec.steps.length > 0) {
          const block = tf.slice(emb, [start, 0], [n, -1]);
          try {
            rec.loo = await leaveOneOutQ(nets, samples[i], opts, rec.pred_idx, rec.steps[0].q, block);
          } finally {
            block.dispose();
          }
        }
        start += n;
      }
    }
    return records;
  } finally {
    if (emb !== candidates) emb.dispose();
    trimWebgpuPool(); // what the group freed (webgpu-pool.ts)
  }
}
