/**
 * A run's evaluation, timed both ways: `episodes` greedy episodes of the test source one at a time
 * (greedy.ts, what the evaluator ran before) and side by side (greedy-batch.ts, as a run's
 * evaluator runs them now, in groups of GROUP_EPISODES): seconds, episodes/s, dispatches and reads
 * of each, and whether they picked alike. Both ways warmed up first (their plans built).
 */
import type { RunConfig } from "../config/config.ts";
import type { QNetworks } from "../agent/networks.ts";
import { greedyEpisode } from "../agent/greedy.ts";
import { episodeGroups, greedyEpisodes, groupEpisodes } from "../agent/greedy-batch.ts";
import { evalOptions } from "../training/train.ts";
import { counterSnapshot, countersOn, resetCounters } from "../backend/device.ts";
import type { EpisodeRecord } from "../events.ts";
import type { Sample, SampleSource } from "../types.ts";
import { materialized } from "./workload.ts";

/** `--eval 0|1` of the bench: whether dispatch and dispatch-bert time their evaluation (the A/B runs of figures.sh need it once). */
let evalBench = true;

export function setEvalBench(on: boolean): void {
  evalBench = on;
}

export function evalBenchOn(): boolean {
  return evalBench;
}

export interface EvalWay {
  seconds: number;
  episodesPerSecond: number;
  dispatches: number;
  reads: number;
}

export interface EvalGroupsFigures {
  episodes: number;
  steps: number;
  oneAtATime: EvalWay;
  sideBySide: EvalWay;
  /** Episodes whose picks differ between the two ways (0 expected: rows do not see each other). */
  differentPicks: number;
}

export async function benchEvalGroups(nets: QNetworks, config: RunConfig, source: SampleSource, log: (m: string) => void, episodes = 32): Promise<EvalGroupsFigures> {
  countersOn();
  const opts = evalOptions(config);
  const samples: Sample[] = Array.from({ length: episodes }, (_, i) => materialized(source.sample(i)));
  const oneAtATime = async () => {
    const out: EpisodeRecord[] = [];
    for (const s of samples) out.push(await greedyEpisode(nets, s, opts));
    return out;
  };
  const sideBySide = async () => {
    const out: EpisodeRecord[] = [];
    for (const g of episodeGroups(samples, groupEpisodes())) out.push(...(await greedyEpisodes(nets, g, opts)));
    return out;
  };
  const timed = async (fn: () => Promise<EpisodeRecord[]>): Promise<{ way: EvalWay; records: EpisodeRecord[] }> => {
    await fn();
    resetCounters();
    const t0 = performance.now();
    const records = await fn();
    const seconds = (performance.now() - t0) / 1000;
    // the candidates' encodes count under "encode", the steps under "eval"
    const phases = Object.values(counterSnapshot());
    const sum = (f: (c: (typeof phases)[number]) => number) => phases.reduce((a, c) => a + f(c), 0);
    return { way: { seconds, episodesPerSecond: episodes / seconds, dispatches: sum((c) => c.dispatches), reads: sum((c) => c.reads) }, records };
  };
  const one = await timed(oneAtATime);
  const side = await timed(sideBySide);
  const differentPicks = one.records.filter((r, i) => r.pred_idx.join() !== side.records[i].pred_idx.join()).length;
  const steps = one.records.reduce((a, r) => a + r.steps.length, 0);
  const line = (w: EvalWay) => `${w.seconds.toFixed(2)} s (${w.episodesPerSecond.toFixed(1)} episodes/s), ${w.dispatches} dispatches, ${w.reads} reads`;
  log(`  eval, ${episodes} episodes (${steps} steps): one at a time ${line(one.way)}; side by side ${line(side.way)}; picks differing: ${differentPicks}`);
  return { episodes, steps, oneAtATime: one.way, sideBySide: side.way, differentPicks };
}
