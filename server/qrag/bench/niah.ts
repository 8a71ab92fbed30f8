/**
 * RULER NIAH results (bench part "niah"): the `niah-cpu` preset trained once per variant group,
 * then each variant of the group swept at 4K, 128K and 1M GPT-2 tokens and scored with RULER's
 * `string_match_all` on the retrieved chunks (niah-metric.ts), beside the paper's Table 1.
 *
 * Groups are RULER's task families (spec benchmark-data §3.1): single needle (S1–S3), multi-key
 * (MK1–MK3), multi-value (MV), multi-query (MQ). Each group trains on one member; the others test
 * transfer within the family (the paper does not say whether it trained one model per subtask or
 * one MV model for all; the reference config trains MV only). Single trains on S2 (essay haystack,
 * numbers), multi-key on MK2 (needle haystack: every distractor is a needle with another key, the
 * hardest of the three for a retriever).
 *
 * Lengths are RULER's `max_seq_length` in GPT-2 tokens (input + 128 generated ≤ length), fitted by
 * the generator itself, so no tokens→chunks conversion is needed; each point reports the chunks it
 * got. Sweep samples come from their own split ("sweep"), never seen in training or its eval.
 * Episodes run all max_steps picks with no oracle stop; the score is reported over all picks (what
 * a reader given every pick would see) and after the paper's Q > 0.5 filter.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { resolveConfig } from "../config/config.ts";
import { train, evalOptions } from "../training/train.ts";
import { loadAgent } from "../evaluation/evaluate.ts";
import { embedSampleChunks, greedyEpisode } from "../agent/greedy.ts";
import { niahSource, NIAH_TASKS } from "../data/niah/generate.ts";
import { InputError } from "../errors.ts";
import { learningSamples, evalCurve } from "./learning.ts";
import { niahScore, needlesFound, type NiahScore } from "./niah-metric.ts";

type NiahVariant = (typeof NIAH_TASKS)[number];

export interface NiahGroup {
  group: "single" | "multikey" | "multivalue" | "multiquery";
  /** The variant the group's model is trained on. */
  trainOn: NiahVariant;
  variants: NiahVariant[];
}

export const NIAH_GROUPS: NiahGroup[] = [
  { group: "single", trainOn: "niah_single_2", variants: ["niah_single_1", "niah_single_2", "niah_single_3"] },
  { group: "multikey", trainOn: "niah_multikey_2", variants: ["niah_multikey_1", "niah_multikey_2", "niah_multikey_3"] },
  { group: "multivalue", trainOn: "niah_multivalue", variants: ["niah_multivalue"] },
  { group: "multiquery", trainOn: "niah_multiquery", variants: ["niah_multiquery"] },
];

/** 4K, 128K (RULER's powers of two) and 1M = 2^20 tokens. */
export const NIAH_LENGTHS = [4096, 131072, 1048576];

/** Paper Table 1 (spec qrag-method §8.1), Q-RAG rows, by length label. */
export const PAPER_NIAH: Record<string, Record<NiahVariant, number> & { avg: number }> = {
  "4K": { niah_single_1: 100, niah_single_2: 100, niah_single_3: 100, niah_multikey_1: 100, niah_multikey_2: 100, niah_multikey_3: 100, niah_multivalue: 100, niah_multiquery: 100, avg: 100 },
  "128K": { niah_single_1: 100, niah_single_2: 100, niah_single_3: 100, niah_multikey_1: 100, niah_multikey_2: 100, niah_multikey_3: 100, niah_multivalue: 100, niah_multiquery: 100, avg: 100 },
  "1M": { niah_single_1: 100, niah_single_2: 100, niah_single_3: 100, niah_multikey_1: 100, niah_multikey_2: 98.5, niah_multikey_3: 99.0, niah_multivalue: 100, niah_multiquery: 100, avg: 99.7 },
};

/**
 * Updates per group: held-out coverage (4K) is 0.90–0.99 already at update 0 (the bag-of-words
 * encoder matches the question's key words in the needle) and 0.98–1.00 at update 100, so the
 * preset's 2,000 updates would only cost time; on the shared 2-core machine an update took 2.5–6 s.
 */
export const NIAH_STEPS = 100;

/** Seed offset of the sweep split, apart from train (+0), test (+1,000,003) and validation (+2,000,003). */
export const SWEEP_SEED_OFFSET = 3_000_017;

export const lengthLabel = (tokens: number): string =>
  tokens >= 1 << 20 && tokens % (1 << 20) === 0 ? `${tokens / (1 << 20)}M` : tokens % 1024 === 0 ? `${tokens / 1024}K` : `${tokens} tokens`;

export interface NiahOptions {
  groups?: NiahGroup[];
  /** Only these variants are swept (their groups trained); default all 8. */
  variants?: string[];
  seeds?: number[];
  /** Sweep lengths in GPT-2 tokens (default 4K, 128K, 1M). */
  lengths?: number[];
  /** Samples per length, aligned with `lengths`; default learningSamples(chunks of the first sample). */
  samples?: number[];
  steps?: number;
  /** Wall-clock training budget per group (seconds; default 15 min). */
  budgetSeconds?: number;
  /** More config overrides (tests shrink the preset with these). */
  overrides?: string[];
  runsDir?: string;
  /** Reuse a group's existing runs/bench-niah-<group>/checkpoints/best instead of training again. */
  reuse?: boolean;
  /** Written after every point (so a cut-short run keeps what it measured), and at the end. */
  outFile?: string;
}

/** Validates --variants against the 8 RULER variants; returns the groups to train, each cut to those variants. */
export function selectGroups(variants?: string[], groups: NiahGroup[] = NIAH_GROUPS): NiahGroup[] {
  if (!variants?.length) return groups;
  const unknown = variants.filter((v) => !(NIAH_TASKS as readonly string[]).includes(v));
  if (unknown.length) throw new InputError(`unknown NIAH variant(s) ${unknown.join(", ")} (known: ${NIAH_TASKS.join(", ")})`);
  return groups.map((g) => ({ ...g, variants: g.variants.filter((v) => variants.includes(v)) })).filter((g) => g.variants.length > 0);
}

interface NiahPoint extends NiahScore {
  variant: NiahVariant;
  maxSeqLength: number;
  label: string;
  /** Mean GPT-2 tokens of the inputs, and mean chunks (sentences) per haystack. */
  tokens: number;
  chunks: number;
  /** The same score after the paper's Q > 0.5 filter (what its reader is given). */
  filtered: NiahScore;
  /** Mean seconds per sample: generating (fit amortised) and the episode (embedding + steps). */
  generateSeconds: number;
  episodeSeconds: number;
}

type PrevRun = { group: string; seed: number; status: string; updates: number | null; trainSeconds: number; points: NiahPoint[] };

export async function benchNiah(log: (m: string) => void, o: NiahOptions = {}): Promise<Record<string, unknown>> {
  const groups = selectGroups(o.variants, o.groups);
  const lengths = o.lengths ?? NIAH_LENGTHS;
  if (o.samples && o.samples.length !== lengths.length) throw new InputError(`--samples needs one count per length (${lengths.length}), got ${o.samples.length}`);
  const seeds = o.seeds?.length ? o.seeds : [undefined];
  const runs: Record<string, unknown>[] = [];
  const started = new Date().toISOString();
  const machine = { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, wasmThreads: process.env.QRAG_WASM_THREADS ?? "default" };
  const result = (complete: boolean) => ({
    metric: "RULER string_match_all × 100 on the retrieved chunks' text", complete, started, machine, lengths,
    ...(o.overrides?.length ? { overrides: o.overrides } : {}),
    runs, average: averages(runs), paper: PAPER_NIAH,
  });
  const save = (complete: boolean) => {
    if (!o.outFile) return;
    fs.mkdirSync(path.dirname(o.outFile), { recursive: true });
    fs.writeFileSync(o.outFile, JSON.stringify(result(complete), null, 2));
  };
  // with reuse, a previous result file's training figures and the points not measured again are kept,
  // so lengths can be measured in separate invocations into one file
  const previous = o.reuse && o.outFile && fs.existsSync(o.outFile) ? (JSON.parse(fs.readFileSync(o.outFile, "utf8")) as { niah?: { runs: PrevRun[] }; runs?: PrevRun[] }) : undefined;
  const prevRuns: PrevRun[] = previous?.runs ?? previous?.niah?.runs ?? [];
  // all groups trained first, then swept length by length: a run cut short still has whole rows
  const trained: { run: Record<string, unknown> & { points: NiahPoint[] }; checkpoint: string; variants: NiahVariant[]; tag: string }[] = [];
  for (const g of groups) {
    for (const seed of seeds) {
      const tag = `${g.group}${seed === undefined ? "" : `-seed${seed}`}`;
      const overrides = [`envs.task=${g.trainOn}`, `steps_count=${o.steps ?? NIAH_STEPS}`, "eval_interval=100", `name=bench-niah-${tag}`, ...(seed !== undefined ? [`seed=${seed}`] : []), ...(o.overrides ?? [])];
      const config = resolveConfig({ preset: "niah-cpu", overrides });
      const runDir = path.resolve(o.runsDir ?? "runs", `bench-niah-${tag}`);
      const checkpoint = path.join(runDir, "checkpoints", "best");
      const reused = !!o.reuse && fs.existsSync(checkpoint);
      let status = "reused", updates: number | null = null, trainSeconds: number;
      if (reused) {
        log(`  niah ${tag}: reusing ${checkpoint}`);
        trainSeconds = evalCurve(runDir).at(-1)?.wall ?? NaN;
      } else {
        const t0 = performance.now();
        const ac = new AbortController();
        const timer = setTimeout(() => ac.abort(), (o.budgetSeconds ?? 15 * 60) * 1000);
        const res = await train(config, { runDir, signal: ac.signal, onEvent: (e) => e.type === "log" && log(`  niah ${tag}: ${e.message}`) });
        clearTimeout(timer);
        trainSeconds = (performance.now() - t0) / 1000;
        status = res.status;
        updates = res.updates;
      }
      const curve = evalCurve(runDir);
      const prev = reused ? prevRuns.find((r) => r.group === g.group && r.seed === config.seed) : undefined;
      const run = {
        group: g.group, trainOn: g.trainOn, seed: config.seed, status: prev?.status ?? status, updates: prev?.updates ?? updates, trainSeconds: prev?.trainSeconds ?? trainSeconds,
        heldOutCoverage: { first: curve[0] ?? null, last: curve.at(-1) ?? null },
        points: (prev?.points ?? []).filter((p) => !lengths.includes(p.maxSeqLength) || !g.variants.includes(p.variant)),
      };
      runs.push(run);
      trained.push({ run, checkpoint, variants: g.variants, tag });
      save(false);
    }
  }
  for (const [li, length] of lengths.entries()) {
    for (const t of trained) {
      await sweepGroup(t.checkpoint, t.variants, length, o.samples?.[li], log, t.tag, (p) => {
        t.run.points.push(p);
        save(false);
      });
    }
  }
  save(true);
  return result(true);
}

async function sweepGroup(
  checkpoint: string, variants: NiahVariant[], maxSeqLength: number, samples: number | undefined,
  log: (m: string) => void, tag: string, onPoint: (p: NiahPoint) => void,
): Promise<void> {
  const { nets, config } = await loadAgent(checkpoint);
  const gOpts = evalOptions(config, { neverTerminate: true });
  try {
    for (const variant of variants) {
      const source = niahSource({ task: variant, maxSeqLength, seed: config.seed + SWEEP_SEED_OFFSET, split: "sweep", numSamples: Infinity });
      const all: { found: number; total: number }[] = [];
      const kept: { found: number; total: number }[] = [];
      let tokens = 0, chunks = 0, genSecs = 0, epSecs = 0, m = samples ?? 0;
      for (let i = 0; i === 0 || i < m; i++) {
        const t0 = performance.now();
        const sample = source.sample(i);
        const t1 = performance.now();
        if (i === 0 && samples === undefined) m = learningSamples(sample.chunks.length);
        const rec = await greedyEpisode(nets, sample, gOpts, await embedSampleChunks(nets, sample, config.max_action_length));
        epSecs += (performance.now() - t1) / 1000;
        genSecs += (t1 - t0) / 1000;
        const refs = sample.answer.split(",");
        all.push({ found: needlesFound(rec.pred_texts, refs), total: refs.length });
        kept.push({ found: needlesFound(rec.pred_texts.slice(0, rec.filtered.kept), refs), total: refs.length });
        tokens += Number(sample.meta?.tokens ?? 0);
        chunks += sample.chunks.length;
      }
      const n = all.length;
      const point: NiahPoint = {
        variant, maxSeqLength, label: lengthLabel(maxSeqLength), tokens: tokens / n, chunks: chunks / n,
        ...niahScore(all), filtered: niahScore(kept), generateSeconds: genSecs / n, episodeSeconds: epSecs / n,
      };
      log(`  niah ${tag} ${variant} ${point.label}: ${point.score.toFixed(1)} (Q>0.5: ${point.filtered.score.toFixed(1)}), ${n} samples, ${Math.round(point.chunks)} chunks, ${(point.generateSeconds + point.episodeSeconds).toFixed(2)} s/sample`);
      onPoint(point);
    }
  } finally {
    nets.dispose();
  }
}

/** RULER's "NIAH Avg": the mean of the variant scores per length (first run of each group). */
export function averages(runs: Record<string, unknown>[]) {
  const seen = new Set<string>();
  const byLength = new Map<string, number[]>();
  for (const r of runs) {
    if (seen.has(r.group as string)) continue;
    seen.add(r.group as string);
    for (const p of r.points as NiahPoint[]) byLength.set(p.label, [...(byLength.get(p.label) ?? []), p.score]);
  }
  return [...byLength].map(([label, scores]) => ({ label, variants: scores.length, score: scores.reduce((a, b) => a + b, 0) / scores.length }));
}
