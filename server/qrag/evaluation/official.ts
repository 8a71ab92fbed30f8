/**
 * `evalOfficial()` (`qrag eval-official`): a checkpoint's greedy episodes on the published BabiLong
 * test files (data/babilong-official.ts), grouped by length. Per length: retrieval metrics of all
 * picks and after the Q-threshold filter, coverage with a 95 % Wilson interval, and the
 * rule-based reader accuracy (retrieved facts only): the bAbI rules applied to just the chunks
 * Q-RAG kept, compared with `target`. Episodes run to max_steps (no ground-truth oracle stop), as
 * in the sweep. Skipped rows are counted and listed per length with file and row.
 */
import fs from "node:fs";
import { engineSettings } from "../settings.ts";
import { dataPathOrThrow } from "../data-root.ts";
import { loadAgent } from "./evaluate.ts";
import { evalOptions } from "../training/train.ts";
import { episodeGroups, greedyEpisodes, groupEpisodes } from "../agent/greedy-batch.ts";
import { aggregate } from "./metrics.ts";
import { chunkAt } from "../types.ts";
import { InputError } from "../errors.ts";
import type { EventSink } from "../events.ts";
import { breather } from "../util/breathe.ts";
import { wilsonInterval, type Interval } from "../../../lib/contracts/intervals.ts";
import type { ReaderSummary } from "../../../lib/contracts/engine-events.ts";
import type { Reader } from "../reader/reader.ts";
import { openReader, type ReaderSpec } from "../reader/spec.ts";
import { keptChunks, readEpisode, ReaderPipeline, ReaderTally } from "./reader-pass.ts";
import { lengthTokens, loadOfficialFile, READER_NAME, readerCorrect, ruleBasedReader, type OfficialSample, type SkippedRow } from "../data/babilong-official.ts";

interface EvalOfficialOptions {
  checkpoint: string;
  /** Files, relative to the data root (or absolute inside it). */
  files: string[];
  /** The only folder the files are read from (default QRAG_DATA_ROOT). */
  dataRoot?: string;
  /** At most this many samples per length (default: all). */
  samples?: number;
  threshold?: number;
  /** Default true: every episode runs max_steps. */
  neverTerminate?: boolean;
  /** One JSON line per length. */
  outFile?: string;
  onEvent?: EventSink;
  signal?: AbortSignal;
  /** An LLM reader on each episode's kept chunks (`--reader`): a spec to open (and close), or an open reader. */
  reader?: ReaderSpec | Reader;
}

interface Scores {
  precision: number;
  recall: number;
  f1: number;
  coverage: number;
  /** 95 % Wilson interval of coverage (a 0/1 outcome per sample); null without samples. */
  coverageCI: Interval | null;
}

export interface OfficialLengthResult {
  length: string;
  /** Context tokens the label stands for (4k → 4000), null for an unnamed length. */
  tokens: number | null;
  files: string[];
  tasks: string[];
  rows: number;
  samples: number;
  avgChunks: number;
  threshold: number;
  oracle_stop: boolean;
  qrag: Scores;
  qragFiltered: Scores & { avgKept: number };
  reader: { name: string; correct: number; n: number; accuracy: number; ci: Interval | null; allPicks: { correct: number; accuracy: number } };
  skipped: { count: number; rows: SkippedRow[] };
  /** The LLM reader's answer accuracy on the kept chunks (`--reader`); `reader` above is the rule-based one. */
  llmReader?: ReaderSummary;
}

function scores(list: { precision: number; recall: number; f1: number; coverage: number }[]): Scores {
  const a = aggregate(list);
  const hits = list.reduce((s, m) => s + m.coverage, 0);
  return { precision: a.precision, recall: a.recall, f1: a.f1, coverage: a.coverage, coverageCI: wilsonInterval(hits, list.length) };
}

export async function evalOfficial(opts: EvalOfficialOptions): Promise<OfficialLengthResult[]> {
  if (opts.files.length === 0) throw new InputError("--files: name at least one file");
  if (opts.samples !== undefined && !(Number.isInteger(opts.samples) && opts.samples > 0)) throw new InputError("--samples: expected a positive integer");
  const root = opts.dataRoot ?? engineSettings().dataRoot;

  // read every file first: a bad file stops the run before any episode
  const groups: Groups = new Map();
  for (const value of opts.files) {
    const f = dataPathOrThrow(root, "--files", value, "file");
    const load = await loadOfficialFile(f.abs, f.rel, root);
    const group = (length: string) => {
      let g = groups.get(length);
      if (!g) groups.set(length, (g = { files: [], rows: 0, samples: [], skipped: [] }));
      if (!g.files.includes(f.rel)) g.files.push(f.rel);
      g.rows++;
      return g;
    };
    for (const s of load.samples) group(s.length).samples.push(s);
    for (const k of load.skipped) group(k.length).skipped.push(k);
  }

  const given = opts.reader && "answer" in opts.reader ? opts.reader : undefined;
  const reader = given ?? (opts.reader ? await openReader(opts.reader as ReaderSpec, root) : undefined);
  try {
    return await evalGroups(opts, groups, reader);
  } finally {
    if (!given) await reader?.close?.();
  }
}

type Groups = Map<string, { files: string[]; rows: number; samples: OfficialSample[]; skipped: SkippedRow[] }>;

async function evalGroups(opts: EvalOfficialOptions, groups: Groups, reader: Reader | undefined): Promise<OfficialLengthResult[]> {
  const emit: EventSink = opts.onEvent ?? (() => {});
  const window = reader && opts.reader && !("answer" in opts.reader) ? 2 * (opts.reader.concurrency ?? 4) : 8;
  const { nets, config, alpha } = await loadAgent(opts.checkpoint);
  const gOpts = evalOptions(config, { neverTerminate: opts.neverTerminate ?? true, threshold: opts.threshold, alpha, leaveOneOut: opts.neverTerminate ?? true });
  const order = [...groups.keys()].sort((a, b) => (lengthTokens(a) ?? Infinity) - (lengthTokens(b) ?? Infinity) || a.localeCompare(b));
  const total = order.reduce((n, l) => n + Math.min(groups.get(l)!.samples.length, opts.samples ?? Infinity), 0);
  const out = opts.outFile ? fs.openSync(opts.outFile, "w") : undefined;
  const results: OfficialLengthResult[] = [];
  const breathe = breather();
  let done = 0;
  try {
    for (const length of order) {
      const g = groups.get(length)!;
      const todo = g.samples.slice(0, opts.samples ?? g.samples.length);
      const all = [], kept = [];
      let keptCount = 0, chunks = 0, readerOk = 0, readerAllOk = 0;
      const pipeline = new ReaderPipeline(window, opts.signal), tally = new ReaderTally();
      // side by side on the device (greedy-batch.ts), one at a time on the host
      for (const group of episodeGroups(todo, groupEpisodes())) {
        await breathe();
        if (opts.signal?.aborted) break;
        const records = await greedyEpisodes(nets, group, gOpts);
        for (const [i, s] of group.entries()) {
          const rec = records[i];
          all.push(rec.metrics);
          kept.push(rec.filtered);
          keptCount += rec.filtered.kept;
          chunks += s.chunks.length;
          const retrieved = (idx: number[]) => idx.map((index) => ({ index, text: chunkAt(s.chunks, index) }));
          if (readerCorrect(ruleBasedReader(s.task, s.question, retrieved(rec.pred_idx.slice(0, rec.filtered.kept))), s.answer)) readerOk++;
          if (readerCorrect(ruleBasedReader(s.task, s.question, retrieved(rec.pred_idx)), s.answer)) readerAllOk++;
          const call = reader && (() => readEpisode(reader, { name: "babilong", task: s.task }, s.question, keptChunks(s, rec.pred_idx, rec.filtered.kept), s.answer, opts.signal));
          await pipeline.submit(call, (r) => r && tally.add(r));
          done++;
          emit({ type: "progress", phase: "eval", done, total, message: `${length}: ${all.length}/${todo.length}` });
        }
      }
      if (opts.signal?.aborted) break;
      await pipeline.drain();
      const n = all.length;
      const res: OfficialLengthResult = {
        length,
        tokens: lengthTokens(length) ?? null,
        files: g.files,
        tasks: [...new Set(todo.map((s) => s.task))].sort(),
        rows: g.rows,
        samples: n,
        avgChunks: chunks / Math.max(1, n),
        threshold: gOpts.threshold,
        oracle_stop: !(opts.neverTerminate ?? true),
        qrag: scores(all),
        qragFiltered: { ...scores(kept), avgKept: keptCount / Math.max(1, n) },
        reader: { name: READER_NAME, correct: readerOk, n, accuracy: readerOk / n, ci: wilsonInterval(readerOk, n), allPicks: { correct: readerAllOk, accuracy: readerAllOk / n } },
        skipped: { count: g.skipped.length, rows: g.skipped },
        ...(reader && tally.n > 0 ? { llmReader: tally.summary(reader.model) } : {}),
      };
      results.push(res);
      if (out !== undefined) fs.writeSync(out, JSON.stringify(res) + "\n");
    }
  } finally {
    if (out !== undefined) fs.closeSync(out);
    nets.dispose();
  }
  return results;
}

/** One line per length for the terminal. */
export function formatOfficialResult(r: OfficialLengthResult): string {
  const pct = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : "–");
  const ci = (c: Interval | null) => (c ? `[${c.low.toFixed(3)}, ${c.high.toFixed(3)}]` : "[–]");
  return [
    `${r.length.padEnd(5)} ${String(r.samples).padStart(4)} samples (${r.skipped.count} rows skipped)`,
    `cov ${pct(r.qrag.coverage)} ${ci(r.qrag.coverageCI)}`,
    `cov@${r.threshold} ${pct(r.qragFiltered.coverage)} ${ci(r.qragFiltered.coverageCI)} f1@${r.threshold} ${pct(r.qragFiltered.f1)} kept ${r.qragFiltered.avgKept.toFixed(1)}`,
    `${r.reader.name} ${pct(r.reader.accuracy)} ${ci(r.reader.ci)}`,
    ...(r.llmReader ? [`${r.llmReader.model} ${pct(r.llmReader.accuracy)} ${ci(r.llmReader.ci)} (${r.llmReader.failures} failed)`] : []),
  ].join(" | ");
}
