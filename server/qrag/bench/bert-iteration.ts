/**
 * `--parts dispatch-bert`: one training iteration of the paper's recipe as the `babilong-gpu`
 * preset runs it (one environment, batch 64 in update passes of 16, chunks up to 64 tokens, states
 * up to 512) with a random-weight BERT (`--bert-size base`, the default: 12 layers, D 768; `tiny`:
 * bert-tiny's sizes, for a CPU adapter), split by phase: dispatches, submits, reads and the time
 * awaiting them, GPU time per phase and per program. What the mission's BERT-base phase measures
 * as one rate (0.21 updates/s on the H200: ~4.7 s an iteration), taken apart. Then the preset's
 * evaluation: 32 greedy episodes of its test source one at a time and side by side (eval-groups.ts).
 *
 * The vocabulary is every word and character of the first training samples, so a sentence
 * tokenizes to about as many pieces as under BERT's own vocabulary (whole words, punctuation apart).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { resolveConfig } from "../config/config.ts";
import { buildSources } from "../data/sources.ts";
import { QNetworks } from "../agent/networks.ts";
import { writeRandomBert, type BertSize } from "../model/hf/random-bert.ts";
import type { SampleSource } from "../types.ts";
import { Rng } from "../util/rng.ts";
import { benchTrainingOf } from "./workload-bench.ts";
import { benchEvalGroups, evalBenchOn } from "./eval-groups.ts";
import { compileNote, phaseList } from "./dispatch-summary.ts";

export const BERT_SIZES = {
  base: { hidden: 768, layers: 12, heads: 12, intermediate: 3072 },
  tiny: { hidden: 128, layers: 2, heads: 2, intermediate: 512 },
} satisfies Record<string, BertSize>;
export type BertSizeName = keyof typeof BERT_SIZES;

/** Samples whose words make the vocabulary. */
const VOCAB_SAMPLES = 50;

/** Special tokens, then every character and every lower-cased word of the samples' questions and chunks. */
export function sampleVocab(source: SampleSource, samples = VOCAB_SAMPLES): string[] {
  const words = new Set<string>();
  const chars = new Set<string>();
  for (let i = 0; i < samples; i++) {
    const s = source.sample(i);
    const texts = [s.question, ...Array.from({ length: s.chunks.length }, (_, j) => s.chunks.at(j) ?? "")];
    for (const t of texts) {
      const lower = t.toLowerCase();
      for (const ch of lower) if (!/\s/.test(ch)) chars.add(ch);
      for (const w of lower.split(/[^a-z0-9]+/)) if (w) words.add(w);
    }
  }
  return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ...[...chars].sort(), ...[...words].filter((w) => !chars.has(w)).sort()];
}

export async function benchBertIteration(log: (m: string) => void, size: BertSizeName = "base", iterations = 2): Promise<Record<string, unknown>> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-dispatch-bert-"));
  try {
    const config = resolveConfig({
      preset: "babilong-gpu",
      // one random iteration (learning_start 1: the first 2 transitions), the rest Boltzmann
      overrides: ["algo.encoder.path=models/bert", "learning_start=1"],
    });
    const { train, test } = buildSources(config, root);
    const vocab = sampleVocab(train);
    writeRandomBert(path.join(root, "models", "bert"), BERT_SIZES[size], { words: vocab, positions: 512, seed: 7 });
    const nets = new QNetworks(config.algo.encoder, new Rng(1), { dataRoot: root });
    try {
      const t = await benchTrainingOf(`bert-${size}`, config, train, nets, log, iterations);
      const s = t.hotLoop;
      const evaluation = evalBenchOn() ? await benchEvalGroups(nets, config, test, log) : null;
      log(`  dispatch-bert (${size}): ${t.iterationSeconds.median.toFixed(2)} s an iteration (rollout ${t.rolloutSeconds.median.toFixed(2)}, update ${t.updateSeconds.median.toFixed(2)}); ${s.dispatchesPerIteration} dispatches, ${s.submitsPerIteration} submits, ${s.readsPerIteration} reads, host ${s.hostMsPerIteration} ms (${phaseList(s.hostMsByPhase)}), GPU ${s.gpuMsPerIteration ?? "(untimed)"} ms${compileNote(s)}; plans built ${s.plansPerIteration} (${s.planMiBPerIteration} MiB of buffers)`);
      return {
        size, bert: BERT_SIZES[size], vocab: vocab.length,
        preset: { envs: config.envs_parallel, batch: config.batch_size, passBatch: config.pass_batch_size, maxActionLength: config.max_action_length, maxLength: config.algo.encoder.max_length },
        iterationSeconds: t.iterationSeconds, rolloutSeconds: t.rolloutSeconds, updateSeconds: t.updateSeconds,
        transitionsPerSecond: t.transitionsPerSecond,
        ...s, countsPerIteration: t.countsPerIteration,
        kernelsByName: t.kernelsByName,
        gpuByProgram: t.gpuByProgram, hostByFunction: t.hostByFunction,
        evaluation,
      };
    } finally {
      nets.dispose();
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}
