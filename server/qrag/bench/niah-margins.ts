/**
 * Why multi-key NIAH misses at long contexts: the first-step Q of the gold needle against every
 * distractor needle, grouped by how many key words the distractor shares with the question.
 *   npx tsx server/qrag/bench/niah-margins.ts CHECKPOINT [--variant niah_multikey_2]
 *     [--length 131072] [--samples 10] [--out bench-results/niah-margins-….json]
 * A needle haystack of n distractors misses when the largest of n draws from the "shares 0" group
 * beats the gold needle, so the gold's margin in that group's standard deviations (`goldZ`) says
 * how long a haystack the model can take: the largest of 7,300 normal draws (128K tokens) lies
 * ≈ 3.7 sd above their mean, of 58,000 (1M tokens) ≈ 4.2 sd (medians; docs/benchmarks/niah.md uses the same).
 */
import fs from "node:fs";
import path from "node:path";
import { Command } from "commander";
import { intFlag } from "../cli/flags.ts";
import { loadAgent } from "../evaluation/evaluate.ts";
import { evalOptions } from "../training/train.ts";
import { embedSampleChunks, disposeCandidates } from "../agent/greedy.ts";
import { RetrievalEpisode } from "../env/episode.ts";
import { embedStates } from "../agent/networks.ts";
import { scoreCandidates } from "../model/rotary.ts";
import { rotaryPositions } from "../agent/rotary-positions.ts";
import { NIAH_TASK_CONFIGS, NIAH_TASKS, niahSource } from "../data/niah/generate.ts";
import { chunkAt } from "../types.ts";
import { InputError } from "../errors.ts";
import { MAX_SEQ_LENGTH_BOUNDS } from "../data/registry.ts";
import { SWEEP_SEED_OFFSET } from "./niah.ts";
import { isMainModule } from "../util/main-module.ts";

/** The key words of a RULER needle ("… for {key} is: …") or question ("… for {key} mentioned …"); undefined for other text. */
export function keyWordsOf(text: string): string[] | undefined {
  const m = /\bfor (\S+?)(?: is: | mentioned in the provided text\?)/.exec(text);
  return m ? m[1].toLowerCase().split("-") : undefined;
}

/** "gold" for a support chunk, "not a needle", else "shares K" (key words in common with the question's key). */
export function marginClass(question: readonly string[], chunk: string, gold: boolean): string {
  if (gold) return "gold";
  const words = keyWordsOf(chunk);
  if (!words) return "not a needle";
  return `shares ${words.filter((w) => question.includes(w)).length}`;
}

export interface Spread { n: number; mean: number; sd: number; max: number }

export function spread(values: readonly number[]): Spread {
  const n = values.length;
  if (n === 0) return { n, mean: NaN, sd: NaN, max: NaN };
  let s = 0, max = -Infinity;
  for (const v of values) { s += v; if (v > max) max = v; }
  const mean = s / n;
  let ss = 0;
  for (const v of values) ss += (v - mean) ** 2;
  return { n, mean, sd: Math.sqrt(ss / n), max };
}

export interface MarginOptions { variant: string; maxSeqLength: number; samples: number }

export async function niahMargins(checkpoint: string, o: MarginOptions) {
  if (!(NIAH_TASKS as readonly string[]).includes(o.variant)) throw new InputError(`--variant: unknown NIAH variant ${o.variant} (known: ${NIAH_TASKS.join(", ")})`);
  const task = o.variant as (typeof NIAH_TASKS)[number];
  if (NIAH_TASK_CONFIGS[task].numNeedleQ !== 1) throw new InputError(`--variant: ${o.variant} asks for several keys; margins need one queried key`);
  const { nets, config } = await loadAgent(checkpoint);
  const g = evalOptions(config, { neverTerminate: true });
  const source = niahSource({ task, maxSeqLength: o.maxSeqLength, seed: config.seed + SWEEP_SEED_OFFSET, split: "sweep", numSamples: Infinity });
  const byClass = new Map<string, number[]>();
  const perSample: { chunks: number; gold: number; goldRank: number; goldZ: number }[] = [];
  try {
    for (let i = 0; i < o.samples; i++) {
      const s = source.sample(i);
      const question = keyWordsOf(s.question);
      if (!question) throw new InputError(`sample ${s.id}: the question names no key`);
      const cand = await embedSampleChunks(nets, s, g.maxActionLength);
      const emb = cand instanceof Float32Array ? cand : ((await cand.data()) as Float32Array);
      disposeCandidates(cand);
      const ep = new RetrievalEpisode(s, g.episode);
      const state = embedStates(nets.state, [ep.stateTexts(g.sortByIndex)], g.maxInMemory, false);
      const n = s.chunks.length;
      const q1 = new Float32Array(n), q2 = new Float32Array(n);
      scoreCandidates(state.subarray(0, nets.dim), emb, rotaryPositions(ep), q1, q2);
      const local = new Map<string, number[]>();
      let gold = -Infinity;
      for (let j = 0; j < n; j++) {
        const q = q1[j] + q2[j];
        const isGold = s.supportIdx.includes(j);
        if (isGold) gold = Math.max(gold, q);
        const c = marginClass(question, chunkAt(s.chunks, j), isGold);
        for (const m of [local, byClass]) (m.get(c) ?? m.set(c, []).get(c)!).push(q);
      }
      let rank = 0;
      for (let j = 0; j < n; j++) if (!s.supportIdx.includes(j) && q1[j] + q2[j] > gold) rank++;
      const none = spread(local.get("shares 0") ?? []);
      perSample.push({ chunks: n, gold, goldRank: rank, goldZ: (gold - none.mean) / none.sd });
    }
  } finally {
    nets.dispose();
  }
  const classes = Object.fromEntries([...byClass.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, spread(v)]));
  return {
    checkpoint, ...o, updates: config.steps_count, trainLength: "max_seq_length" in config.envs ? config.envs.max_seq_length : undefined,
    classes,
    goldZ: spread(perSample.map((p) => p.goldZ)),
    firstPickMisses: perSample.filter((p) => p.goldRank > 0).length,
    perSample,
  };
}

if (isMainModule(import.meta.url)) {
  const cmd = new Command("niah-margins")
    .argument("<checkpoint>")
    .option("--variant <name>", "a single-query NIAH variant", "niah_multikey_2")
    .option("--length <tokens>", "max_seq_length in GPT-2 tokens", intFlag("--length", ...MAX_SEQ_LENGTH_BOUNDS), 131072)
    .option("--samples <n>", "samples (sweep split)", intFlag("--samples", 1, 10_000), 10)
    .option("--out <file>", "JSON output (default: stdout)")
    .parse();
  const opts = cmd.opts<{ variant: string; length: number; samples: number; out?: string }>();
  niahMargins(cmd.args[0], { variant: opts.variant, maxSeqLength: opts.length, samples: opts.samples })
    .then((r) => {
      const json = JSON.stringify(r, null, 2);
      if (opts.out) {
        fs.mkdirSync(path.dirname(opts.out), { recursive: true });
        fs.writeFileSync(opts.out, json);
      } else process.stdout.write(json + "\n");
    })
    .catch((e: unknown) => {
      process.stderr.write(`niah-margins: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    });
}
