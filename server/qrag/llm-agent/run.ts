/**
 * `runAgent()`: the reason-and-retrieve LLM agent (R3-RAG's step format, ./step-format.ts) over a
 * run's test samples at one or more haystack lengths, beside Q-RAG. With a checkpoint (`--retriever
 * RUN_DIR`, `dense --checkpoint RUN_DIR`, or `bm25 --checkpoint RUN_DIR`) the samples are that run's
 * test samples, the ones `qrag sweep RUN_DIR` scores at the same lengths; without one, the
 * babilong-cpu preset's for `task`. One `sample` row per sample (./loop.ts), then a `summary` row
 * per length (./tally.ts), to `outFile` as JSONL. Light to import: the model's package and the
 * encoders (tfjs) load only when a run asks for them.
 */
import fs from "node:fs";
import type { AgentSample, AgentSummary } from "../../../lib/contracts/llm-agent.ts";
import { resolveConfig, type RunConfig } from "../config/config.ts";
import { buildSource } from "../data/sources.ts";
import { toBabiTask } from "../data/babi/vocab.ts";
import { InputError } from "../errors.ts";
import type { EventSink } from "../events.ts";
import { findCheckpoint, loadCheckpoint } from "../training/checkpoint.ts";
import type { ChatModel } from "../reader/chat.ts";
import type { BabiTask, ReaderDataset } from "../reader/prompts.ts";
import { engineSettings } from "../settings.ts";
import { breather } from "../util/breathe.ts";
import { runAgentSample, type LoopOptions } from "./loop.ts";
import { openAgentModel, type ModelSpec } from "./model-spec.ts";
import { bm25Retriever, type AgentRetriever } from "./search.ts";
import type { AgentFormat } from "./step-format.ts";
import { summarizeAgent } from "./tally.ts";
import { AGENT_LIMITS } from "./limits.ts";


export interface AgentRunOptions {
  /** A spec to open (and close), or an open model. */
  model: ModelSpec | ChatModel;
  /** `bm25`, `dense` (needs `checkpoint`), or a run / checkpoint folder (Q-RAG's retriever). */
  retriever: string;
  /** The run whose test samples (and, for dense, encoders) are used. */
  checkpoint?: string;
  /** qa1..qa5 without a checkpoint (default qa1); with one, its task unless given. */
  task?: string;
  /** Haystack sizes in chunks (default 50). */
  lengths?: number[];
  /** Samples per length (default 20). */
  samples?: number;
  format?: AgentFormat;
  /** Model calls before the answer is forced (default 10, R3-RAG's chain length). */
  maxCalls?: number;
  /** Tokens per call (default 256). */
  maxTokens?: number;
  /** Documents per query (default 3, R3-RAG's). */
  k?: number;
  /** Grammar / response_format on the json format's steps (default true). */
  constrain?: boolean;
  outFile?: string;
  dataRoot?: string;
  onEvent?: EventSink;
  signal?: AbortSignal;
}

function bounded(name: string, v: number | undefined, dflt: number, max: number): number {
  const x = v ?? dflt;
  if (!(Number.isInteger(x) && x >= 1 && x <= max)) throw new InputError(`${name}: expected a whole number from 1 to ${max}, got ${x}`);
  return x;
}

/** The run config whose test split is sampled, and the scorer's dataset. */
function dataConfig(base: RunConfig | undefined, task: string | undefined): { config: RunConfig; dataset: ReaderDataset } {
  const t = task === undefined ? undefined : toBabiTask(task);
  const config = base ?? resolveConfig({ preset: "babilong-cpu", overrides: [`envs.task=${t ?? "qa1"}`] });
  const env = config.envs;
  if (env.name !== "babilong") throw new InputError(`the agent runs on BabiLong for now (this run was trained on ${env.name})`);
  const envs = t && base ? { ...env, task: t } : env;
  return { config: { ...config, envs }, dataset: { name: "babilong", task: envs.task.slice(0, 3) as BabiTask } };
}

/** Which checkpoint the retriever needs (none for bm25), checked before anything loads. */
function retrieverCheckpoint(o: AgentRunOptions): string | undefined {
  if (o.retriever === "bm25") return undefined;
  const dense = o.retriever === "dense";
  if (dense && !o.checkpoint) throw new InputError("--retriever dense needs --checkpoint RUN_DIR (the trained encoders it scores with)");
  if (!dense && o.checkpoint) throw new InputError("--checkpoint: only with --retriever bm25 or dense (a run folder as --retriever is its own checkpoint)");
  const ckpt = dense ? o.checkpoint! : o.retriever;
  if (!findCheckpoint(ckpt)) throw new InputError(`--retriever: expected bm25, dense or a run / checkpoint folder (no checkpoint.json under ${ckpt})`);
  return ckpt;
}

/** The retriever and, with a checkpoint, the run's config; encoders load lazily (tfjs). */
async function openRetriever(o: AgentRunOptions, ckpt: string | undefined): Promise<{ retriever: AgentRetriever; config?: RunConfig }> {
  if (!ckpt) {
    const config = o.checkpoint ? loadCheckpoint<{ config: RunConfig }>(o.checkpoint).state.config : undefined;
    return { retriever: bm25Retriever(), config };
  }
  const [{ loadAgent }, { encoderRetriever }] = await Promise.all([import("../evaluation/evaluate.ts"), import("./encoder-search.ts")]);
  const { nets, config } = await loadAgent(ckpt, undefined, o.dataRoot);
  return { retriever: encoderRetriever(o.retriever === "dense" ? "dense" : "qrag", ckpt, nets, config), config };
}

export async function runAgent(o: AgentRunOptions): Promise<{ samples: AgentSample[]; summaries: AgentSummary[] }> {
  const loop: Omit<LoopOptions, "signal"> = {
    format: o.format ?? "json",
    maxCalls: bounded("--max-steps", o.maxCalls, 10, AGENT_LIMITS.maxCalls),
    maxTokens: bounded("--max-tokens", o.maxTokens, 256, AGENT_LIMITS.maxTokens),
    k: bounded("--docs-per-query", o.k, 3, AGENT_LIMITS.k),
    constrain: o.constrain ?? true,
  };
  const samples = bounded("--samples", o.samples, 20, AGENT_LIMITS.samples);
  const lengths = o.lengths ?? [50];
  const ckpt = retrieverCheckpoint(o);
  if (o.task !== undefined) toBabiTask(o.task); // a bad task fails before anything loads
  const given = "complete" in o.model ? o.model : undefined;
  // the model first: a bad path or URL fails before a checkpoint loads
  const model = given ?? (await openAgentModel(o.model as ModelSpec, o.dataRoot ?? engineSettings().dataRoot));
  try {
    const { retriever, config: runConfig } = await openRetriever(o, ckpt);
    try {
      const { config, dataset } = dataConfig(runConfig, o.task);
      return await runLengths(o, model, retriever, config, dataset, lengths, samples, loop);
    } finally {
      retriever.close();
    }
  } finally {
    if (!given) await model.close?.();
  }
}

async function runLengths(
  o: AgentRunOptions, model: ChatModel, retriever: AgentRetriever, config: RunConfig, dataset: ReaderDataset,
  lengths: readonly number[], m: number, loop: Omit<LoopOptions, "signal">,
): Promise<{ samples: AgentSample[]; summaries: AgentSummary[] }> {
  const emit: EventSink = o.onEvent ?? (() => {});
  const out = o.outFile ? fs.openSync(o.outFile, "w") : undefined;
  const all: AgentSample[] = [], summaries: AgentSummary[] = [];
  const breathe = breather();
  const total = lengths.length * m;
  try {
    for (const numChunks of lengths) {
      const source = buildSource(config, "test", numChunks, o.dataRoot);
      const n = Number.isFinite(source.size) ? Math.min(m, source.size) : m;
      const rows: AgentSample[] = [];
      for (let i = 0; i < n; i++) {
        await breathe();
        if (o.signal?.aborted) break;
        const sample = source.sample(i);
        const search = await retriever.forSample(sample);
        try {
          const row = await runAgentSample(model, search, sample, dataset, retriever.name, { ...loop, signal: o.signal });
          rows.push(row);
          if (out !== undefined) fs.writeSync(out, JSON.stringify(row) + "\n");
          emit({ type: "agent_sample", row });
        } finally {
          search.dispose();
        }
        emit({ type: "progress", phase: "agent", done: all.length + rows.length, total, message: `${numChunks} chunks: ${i + 1}/${n}` });
      }
      all.push(...rows);
      if (o.signal?.aborted) break; // a length cut short is no summary
      const s = summarizeAgent(rows, numChunks, model.model, retriever.name);
      summaries.push(s);
      if (out !== undefined) fs.writeSync(out, JSON.stringify(s) + "\n");
      emit({ type: "agent_summary", summary: s });
    }
  } finally {
    if (out !== undefined) fs.closeSync(out);
  }
  return { samples: all, summaries };
}
