/**
 * `sweep()`: the context-length sweep (docs/method.md §5.3). A checkpoint is evaluated at growing
 * haystack sizes (default 50 / 160 / 1200 / 4600 / 40000 / 400000 chunks ≈ 1K … 10M tokens) with
 * episodes run to max_steps (never_terminate, as the reference sweep) and the Q-threshold filter,
 * beside BM25 and single-step dense baselines on the same samples. Haystacks are lazy views over
 * the noise pool and candidates are embedded in batches, so the text is never held twice.
 */
import fs from "node:fs";
import type { EpisodeRecord, EventSink, SweepPoint } from "../events.ts";
import { loadAgent } from "./evaluate.ts";
import { evalOptions } from "../training/train.ts";
import { buildSource } from "../data/sources.ts";
import { disposeCandidates } from "../agent/greedy.ts";
import { embedGroupChunks, episodeGroups, greedyEpisodes, groupEpisodes } from "../agent/greedy-batch.ts";
import { samplesOf } from "../training/eval.ts";
import { Bm25Index } from "../baselines/bm25.ts";
import { denseSingleStep } from "../baselines/dense.ts";
import { aggregate, retrievalMetrics } from "./metrics.ts";
import { SWEEP_LENGTHS, measureTokensPerChunk, estimateContextTokens } from "../data/context-length.ts";
import { noisePoolFor } from "../data/noise/pool.ts";
import { corpusSpecFrom } from "../data/noise/corpus.ts";
import { InputError } from "../errors.ts";
import { ENGINE_VERSION } from "../version.ts";
import { breather } from "../util/breathe.ts";
import { applyStop } from "./stop-rules.ts";
import { engineSettings } from "../settings.ts";
import type { Reader } from "../reader/reader.ts";
import type { BabiTask } from "../reader/prompts.ts";
import { openReader, type ReaderSpec } from "../reader/spec.ts";
import { keptChunks, readEpisode, ReaderPipeline, ReaderTally } from "./reader-pass.ts";

interface SweepOptions {
  /** The only folder the config's data files are read from (default QRAG_DATA_ROOT). */
  dataRoot?: string;
  checkpoint: string;
  /** Haystack sizes in chunks. */
  lengths?: number[];
  /** Samples per length; a function lets long haystacks use fewer. */
  samples?: number | ((numChunks: number) => number);
  threshold?: number;
  /** Default true, as the reference sweep (every episode runs max_steps; no oracle stop). */
  neverTerminate?: boolean;
  /** BM25 and single-step dense on the same samples (default true). */
  baselines?: boolean;
  /** Lengths already done (a resumed sweep job): not run again. */
  skipLengths?: readonly number[];
  /** Emit an "episode" event (phase "sweep") per episode, for the dashboard to store. */
  emitEpisodes?: boolean;
  onEvent?: EventSink;
  signal?: AbortSignal;
  /** Write sweep points (JSONL) and per-episode records here. */
  outFile?: string;
  episodesFile?: string;
  /** An LLM reader on each episode's kept chunks: a spec to open (and close), or an open reader. */
  reader?: ReaderSpec | Reader;
}

/** Default samples per length: plenty for short haystacks, a handful at 1M–10M tokens. */
function defaultSweepSamples(numChunks: number): number {
  if (numChunks <= 5_000) return 100;
  if (numChunks <= 50_000) return 20;
  return 3;
}

/** Sample standard deviation of per-episode F1 (0 for fewer than 2 episodes). */
function f1Sd(list: readonly { f1: number }[]): number {
  if (list.length < 2) return 0;
  const mean = list.reduce((a, m) => a + m.f1, 0) / list.length;
  return Math.sqrt(list.reduce((a, m) => a + (m.f1 - mean) ** 2, 0) / (list.length - 1));
}

export async function sweep(opts: SweepOptions): Promise<SweepPoint[]> {
  const given = opts.reader && "answer" in opts.reader ? opts.reader : undefined;
  // a bad model path or URL fails before the checkpoint loads
  const reader = given ?? (opts.reader ? await openReader(opts.reader as ReaderSpec, opts.dataRoot ?? engineSettings().dataRoot) : undefined);
  try {
    return await sweepWith(opts, reader);
  } finally {
    if (!given) await reader?.close?.();
  }
}

async function sweepWith(opts: SweepOptions, reader: Reader | undefined): Promise<SweepPoint[]> {
  const emit: EventSink = opts.onEvent ?? (() => {});
  const { nets, config, alpha, backend, device } = await loadAgent(opts.checkpoint, undefined, opts.dataRoot);
  if (config.envs.name !== "babilong") throw new InputError(`sweep: needs a BabiLong run (this checkpoint was trained on ${config.envs.name})`);
  const dataset = { name: "babilong" as const, task: config.envs.task.slice(0, 3) as BabiTask };
  const window = reader && opts.reader && !("answer" in opts.reader) ? 2 * (opts.reader.concurrency ?? 4) : 8;
  const env = config.envs;
  const skip = new Set(opts.skipLengths ?? []);
  const lengths = (opts.lengths ?? SWEEP_LENGTHS.map((l) => l.chunks)).filter((n) => !skip.has(n));
  const baselines = opts.baselines ?? true;
  const samplesFor = (n: number) => (typeof opts.samples === "function" ? opts.samples(n) : opts.samples ?? defaultSweepSamples(n));
  const gOpts = evalOptions(config, { neverTerminate: opts.neverTerminate ?? true, threshold: opts.threshold, alpha, leaveOneOut: opts.neverTerminate ?? true });
  const tpc = measureTokensPerChunk({ pool: noisePoolFor(corpusSpecFrom(env.noise)), seed: config.seed });
  const out = opts.outFile ? fs.openSync(opts.outFile, "w") : undefined;
  const epOut = opts.episodesFile ? fs.openSync(opts.episodesFile, "w") : undefined;
  const points: SweepPoint[] = [];
  const totalEpisodes = lengths.reduce((a, n) => a + samplesFor(n), 0);
  let done = 0;
  const k = env.max_steps;
  emit({ type: "run_start", meta: { name: `sweep of ${opts.checkpoint}`, backend, device, engineVersion: ENGINE_VERSION, config: { checkpoint: opts.checkpoint, lengths, baselines, threshold: gOpts.threshold, ...(reader ? { reader: reader.model } : {}) }, startedAt: new Date().toISOString() } });
  const breathe = breather();
  try {
    for (const numChunks of lengths) {
      const source = buildSource(config, "test", numChunks, opts.dataRoot);
      const tokens = Math.round(estimateContextTokens(numChunks, tpc.noise.mean));
      const m = samplesFor(numChunks);
      const q = [], qf = [], qp = [], bm = [], de = [];
      let kept = 0, keptPruned = 0, episodeSecs = 0, encodeSecs = 0;
      const pipeline = new ReaderPipeline(window, opts.signal), tally = new ReaderTally();
      // side by side on the device (greedy-batch.ts: the short haystacks' samples in groups, a long one alone)
      let i = 0;
      for (const group of episodeGroups(samplesOf(source, Array.from({ length: m }, (_, j) => j)), groupEpisodes())) {
        await breathe();
        if (opts.signal?.aborted) break;
        const t0 = performance.now();
        const groupEmb = await embedGroupChunks(nets, group, config.max_action_length);
        const t1 = performance.now();
        let records: EpisodeRecord[];
        try {
          records = await greedyEpisodes(nets, group, gOpts, groupEmb);
        } catch (e) {
          disposeCandidates(groupEmb);
          throw e;
        }
        const t2 = performance.now();
        encodeSecs += (t1 - t0) / 1000;
        episodeSecs += (t2 - t0) / 1000;
        // the dense baseline scores on the host: one read of the group's candidates on the device path
        const hostEmb = !baselines ? null : groupEmb instanceof Float32Array ? groupEmb : ((await groupEmb.data()) as Float32Array);
        disposeCandidates(groupEmb);
        let row = 0;
        for (const [g, sample] of group.entries()) {
          const n = sample.chunks.length;
          const emb = hostEmb?.subarray(row * nets.dim, (row + n) * nets.dim);
          row += n;
          i++;
          const rec = { ...records[g], text_len: tokens };
          q.push(rec.metrics);
          qf.push(rec.filtered);
          kept += rec.filtered.kept;
          if (rec.loo) {
            // the same threshold, then leave-one-out pruning at it (stop-rules.ts "prune")
            const pr = applyStop(rec, { kind: "prune", threshold: gOpts.threshold, tau: gOpts.threshold });
            qp.push(pr);
            keptPruned += pr.kept;
          }
          if (emb) {
            bm.push(retrievalMetrics(Bm25Index.build(sample.chunks).topK(sample.question, k).map((h) => h.index), sample.supportIdx));
            de.push(retrievalMetrics(await denseSingleStep(nets, sample.question, emb, n, k, { maxInMemory: config.max_action_length_in_memory, positions: env.positions_processor, stepSize: env.step_size }), sample.supportIdx));
          }
          const call = reader && (() => readEpisode(reader, dataset, sample.question, keptChunks(sample, rec.pred_idx, rec.filtered.kept), sample.answer, opts.signal));
          await pipeline.submit(call, (r) => {
            const full = r ? { ...rec, reader: r } : rec;
            if (r) tally.add(r);
            if (epOut !== undefined) fs.writeSync(epOut, JSON.stringify({ numChunks, ...full }) + "\n");
            if (opts.emitEpisodes) emit({ type: "episode", phase: "sweep", step: 0, update: 0, record: full });
          });
          done++;
          emit({ type: "progress", phase: "sweep", done, total: totalEpisodes, message: `${numChunks} chunks: ${i}/${m}` });
        }
      }
      // a length cut short by cancel is not a point: a resumed sweep measures it again
      if (opts.signal?.aborted) {
        pipeline.discard();
        break;
      }
      await pipeline.drain();
      const pick = (x: ReturnType<typeof aggregate>) => ({ precision: x.precision, recall: x.recall, f1: x.f1, coverage: x.coverage });
      // every episode of the length recorded leave-one-out Q (runs to max_steps)
      const pruned = qp.length > 0 && qp.length === q.length;
      const label = SWEEP_LENGTHS.find((l) => l.chunks === numChunks)?.label ?? `${numChunks} chunks`;
      const point: SweepPoint = {
        numChunks, label, tokens, samples: q.length,
        oracle_stop: !(opts.neverTerminate ?? true),
        threshold: gOpts.threshold,
        qrag: pick(aggregate(q)),
        qragFiltered: { ...pick(aggregate(qf)), avgKept: kept / Math.max(1, q.length) },
        ...(pruned ? { qragPruned: { ...pick(aggregate(qp)), avgKept: keptPruned / qp.length } } : {}),
        ...(baselines ? { bm25: pick(aggregate(bm)), dense: pick(aggregate(de)) } : {}),
        f1Sd: { qrag: f1Sd(q), qragFiltered: f1Sd(qf), ...(pruned ? { qragPruned: f1Sd(qp) } : {}), ...(baselines ? { bm25: f1Sd(bm), dense: f1Sd(de) } : {}) },
        baselineK: k,
        episodeSeconds: episodeSecs / Math.max(1, q.length),
        encodeSeconds: encodeSecs / Math.max(1, q.length),
        ...(reader && tally.n > 0 ? { reader: tally.summary(reader.model) } : {}),
      };
      points.push(point);
      if (out !== undefined) fs.writeSync(out, JSON.stringify(point) + "\n");
      emit({ type: "sweep_point", point });
      if (opts.signal?.aborted) break;
    }
  } finally {
    if (out !== undefined) fs.closeSync(out);
    if (epOut !== undefined) fs.closeSync(epOut);
    nets.dispose();
  }
  return points;
}
