/**
 * The reader: an LLM that answers a question from the chunks the retriever kept. Providers
 * implement `Reader`; `cachedReader` and `withTimeout` wrap any of them. The llama.cpp provider is
 * behind `openGgufReader` (./open.ts), a lazy import, so nothing here loads node-llama-cpp.
 */
import { InputError } from "../errors.ts";
import type { ReaderDataset } from "./prompts.ts";

export interface ReaderInput {
  question: string;
  /** The kept chunks, in document order. */
  chunks: readonly string[];
  dataset: ReaderDataset;
}

export interface ReaderAnswer {
  text: string;
  promptTokens: number;
  completionTokens: number;
  /** Wall time of the call (0 when answered from the cache). */
  ms: number;
  cached?: boolean;
  /** Calls retried after a 429/5xx (OpenAI-compatible provider). */
  retries?: number;
}

export interface Reader {
  /** Names the model (provider and file or model id): part of every cache key. */
  readonly model: string;
  answer(input: ReaderInput, signal?: AbortSignal): Promise<ReaderAnswer>;
  close?(): Promise<void>;
}

/** The prompt and its answer budget do not fit the model's context: a run error, not a retry. */
export class PromptTooLongError extends InputError {
  /** `label`: who is calling ("reader", "agent model"). */
  constructor(readonly promptTokens: number, readonly answerTokens: number, readonly contextTokens: number, label = "reader") {
    super(`${label} prompt too long: ${promptTokens} prompt tokens + ${answerTokens} answer tokens exceed the ` +
      `${label}'s context window of ${contextTokens} tokens (keep fewer chunks or raise the ${label}'s context size)`);
    this.name = "PromptTooLongError";
  }
}

export class ReaderTimeoutError extends Error {
  constructor(readonly ms: number) {
    super(`reader call timed out after ${ms} ms`);
    this.name = "ReaderTimeoutError";
  }
}

/** Why a provider call failed; a sample's failure is counted and scored 0, never a crash. */
export type ReaderFailure = "context" | "timeout" | "rate_limit" | "server" | "unparseable" | "bad_request" | "connection" | "auth";

/**
 * A failed provider call. `fatal`: no later call can succeed (endpoint down, key refused, unknown
 * model), so the run stops with this message instead of failing every sample. Messages name the
 * endpoint's host and status, never the prompt nor the key.
 */
export class ReaderCallError extends Error {
  constructor(readonly kind: ReaderFailure, message: string, readonly fatal = false, readonly retries = 0) {
    super(message);
    this.name = "ReaderCallError";
  }
}

/** At most `limit` calls in flight; the rest wait in arrival order. */
export function limitConcurrency(reader: Reader, limit: number): Reader {
  if (!(Number.isInteger(limit) && limit >= 1)) throw new InputError(`reader concurrency: expected an integer ≥ 1, got ${limit}`);
  let active = 0;
  const waiting: (() => void)[] = [];
  return {
    model: reader.model,
    close: reader.close?.bind(reader),
    async answer(input, signal) {
      if (active < limit) active++;
      else await new Promise<void>((resolve) => waiting.push(resolve)); // a finishing call hands its slot over
      try {
        return await reader.answer(input, signal);
      } finally {
        const next = waiting.shift();
        if (next) next();
        else active--;
      }
    },
  };
}

/**
 * Runs `call` with a signal that aborts after `ms` (or when `outer` aborts); rejects with
 * ReaderTimeoutError at `ms` even if `call` ignores its signal. Shared by the reader and the
 * agent's chat model, whose llama.cpp provider has no timer of its own.
 */
export async function raceTimeout<T>(ms: number, outer: AbortSignal | undefined, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctl = new AbortController();
  const onOuter = (): void => ctl.abort(outer?.reason);
  outer?.addEventListener("abort", onOuter, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => { ctl.abort(new ReaderTimeoutError(ms)); reject(new ReaderTimeoutError(ms)); }, ms);
  });
  try {
    return await Promise.race([call(ctl.signal), timedOut]);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", onOuter);
  }
}

/** Calls `answer` with a signal that aborts after `ms`; rejects with ReaderTimeoutError then. */
export function withTimeout(reader: Reader, ms: number): Reader {
  return {
    model: reader.model,
    close: reader.close?.bind(reader),
    answer: (input, outer) => raceTimeout(ms, outer, (signal) => reader.answer(input, signal)),
  };
}

/**
 * Answers from a bounded LRU keyed by model and the whole input (greedy decoding: the same prompt
 * always gives the same text). `key` is exposed for tests and for callers that dedupe.
 */
export function cachedReader(reader: Reader, maxEntries = 4096): Reader & { readonly size: number; key(i: ReaderInput): string } {
  const cache = new Map<string, Omit<ReaderAnswer, "ms" | "cached">>();
  const key = (i: ReaderInput): string => JSON.stringify([reader.model, i.dataset, i.question, i.chunks]);
  return {
    model: reader.model,
    close: reader.close?.bind(reader),
    key,
    get size() { return cache.size; },
    async answer(input, signal) {
      const k = key(input);
      const hit = cache.get(k);
      if (hit) {
        cache.delete(k); // re-insert: Map order is the LRU order
        cache.set(k, hit);
        return { ...hit, ms: 0, cached: true };
      }
      const a = await reader.answer(input, signal);
      cache.set(k, { text: a.text, promptTokens: a.promptTokens, completionTokens: a.completionTokens });
      while (cache.size > maxEntries) cache.delete(cache.keys().next().value as string);
      return a;
    },
  };
}
