/**
 * One sample's reason-and-retrieve loop. Each model call yields steps (./step-format.ts); a query
 * goes to the search tool and its documents join the trajectory; an answer ends the sample. The
 * loop is bounded three ways: at most `maxCalls` model calls (then one forced answer call),
 * `maxTokens` per call, `k` documents per query. A reply that does not parse is kept as an
 * `unparsed` reason step and the answer is asked for at once (greedy decoding would repeat the
 * same reply). A failed call (timeout, context, server) ends the sample as a counted failure
 * scored 0; a fatal one (endpoint down, key refused) is thrown and stops the run.
 */
import type { AgentSample, AgentStep } from "../../../lib/contracts/llm-agent.ts";
import { retrievalMetrics } from "../evaluation/metrics.ts";
import type { ChatModel, ChatReply } from "../reader/chat.ts";
import type { ReaderDataset } from "../reader/prompts.ts";
import { PromptTooLongError, ReaderCallError, ReaderTimeoutError, type ReaderFailure } from "../reader/reader.ts";
import { scoreAnswer } from "../reader/score.ts";
import { chunkAt, type Sample } from "../types.ts";
import type { SampleSearch } from "./search.ts";
import {
  agentPrompt, forcedAnswer, parseReply, R3RAG_STOP, stepSchema, type AgentFormat, type TrajectoryItem,
} from "./step-format.ts";

export interface LoopOptions {
  format: AgentFormat;
  /** Model calls before the answer is forced (R3-RAG's search chain length: 10). */
  maxCalls: number;
  /** Completion tokens per call (R3-RAG: 512). */
  maxTokens: number;
  /** Documents per query (R3-RAG: 3). */
  k: number;
  /** Constrain replies with a grammar / response_format (the json format only). */
  constrain: boolean;
  signal?: AbortSignal;
}

function failureOf(e: unknown): { kind: ReaderFailure; message: string } | undefined {
  if (e instanceof ReaderCallError && !e.fatal) return { kind: e.kind, message: e.message };
  if (e instanceof PromptTooLongError) return { kind: "context", message: e.message };
  if (e instanceof ReaderTimeoutError) return { kind: "timeout", message: e.message };
  return undefined;
}

export async function runAgentSample(
  model: ChatModel, search: SampleSearch, sample: Sample, dataset: ReaderDataset, retriever: string, o: LoopOptions,
): Promise<AgentSample> {
  const t0 = performance.now();
  const steps: AgentStep[] = [], items: TrajectoryItem[] = [], retrieved: number[] = [];
  const gold = new Set(sample.supportIdx);
  let calls = 0, prompt = 0, completion = 0, modelMs = 0, retries = 0;
  let prediction: string | undefined, forced: AgentSample["forced"], failure: AgentSample["failure"];

  const call = async (force: boolean): Promise<ChatReply> => {
    const { system, user } = agentPrompt(o.format, sample.question, items, force);
    const json = o.format === "json" && o.constrain;
    const r = await model.complete({ system, user, maxTokens: o.maxTokens, ...(json ? { schema: stepSchema(force) } : {}), ...(o.format === "r3rag" ? { stop: R3RAG_STOP } : {}) }, o.signal);
    calls++;
    prompt += r.promptTokens;
    completion += r.completionTokens;
    modelMs += r.ms;
    retries += r.retries;
    return r;
  };
  const meta = (r: ChatReply, first: boolean) => (first ? { call: calls - 1, tokens: { prompt: r.promptTokens, completion: r.completionTokens }, ms: r.ms } : { call: calls - 1, ms: 0 });

  try {
    while (prediction === undefined && calls < o.maxCalls) {
      const r = await call(false);
      const parsed = parseReply(o.format, r.text);
      if (!parsed) {
        steps.push({ kind: "reason", text: r.text.slice(0, 2000), unparsed: true, ...meta(r, true) });
        forced = "unparseable";
        break;
      }
      for (const [i, s] of parsed.entries()) {
        steps.push({ kind: s.kind, text: s.text, ...meta(r, i === 0) });
        items.push(s);
        if (s.kind === "answer") prediction = s.text;
        if (s.kind !== "query") continue;
        const t = performance.now();
        const ids = await search.search(s.text, retrieved, o.k);
        retrieved.push(...ids);
        const docs = ids.map((j) => chunkAt(sample.chunks, j));
        steps.push({ kind: "retrieve", text: docs.join("\n"), ids, gold: ids.map((j) => gold.has(j)), ms: performance.now() - t });
        items.push({ kind: "retrieve", docs });
      }
    }
    if (prediction === undefined) {
      forced ??= "step_limit";
      const r = await call(true);
      prediction = forcedAnswer(o.format, r.text);
      steps.push({ kind: "answer", text: prediction, forced: true, ...meta(r, true) });
    }
  } catch (e) {
    const f = failureOf(e);
    if (!f || o.signal?.aborted) throw e;
    failure = f;
    prediction = "";
  }

  const s = failure ? { accuracy: 0, ...(dataset.name === "hotpotqa" || dataset.name === "musique" ? { f1: 0 } : {}) } : scoreAnswer(dataset, prediction, sample.answer);
  return {
    type: "sample", id: sample.id, question: sample.question, answer: sample.answer,
    sf_idx: [...sample.supportIdx], sf_texts: sample.supportIdx.map((i) => chunkAt(sample.chunks, i)), pred_idx: retrieved, num_chunks: sample.chunks.length,
    model: model.model, retriever, steps, prediction, correct: s.accuracy, ...(s.f1 !== undefined ? { f1: s.f1 } : {}),
    metrics: retrievalMetrics(retrieved, sample.supportIdx),
    calls, tokens: { prompt, completion }, ms: performance.now() - t0, modelMs, retries,
    ...(forced && !failure ? { forced } : {}), ...(failure ? { failure } : {}),
  };
}
