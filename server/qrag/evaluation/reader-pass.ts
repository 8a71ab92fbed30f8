/**
 * The LLM reader inside an evaluation: after each episode the chunks Q-RAG kept (the Q-threshold
 * filter's picks, in document order) go to the reader, and the episode record gets `reader`
 * (prompt, answer, score, tokens, ms). Calls overlap the next episodes (`ReaderPipeline`), records
 * still leave in episode order. A failed call is one sample's counted failure scored 0; a fatal one
 * (endpoint down after its retries, key refused, no such model) stops the run with its message.
 */
import { wilsonInterval } from "../../../lib/contracts/intervals.ts";
import type { ReaderRecord, ReaderSummary } from "../../../lib/contracts/engine-events.ts";
import { readerPrompt, type ReaderDataset } from "../reader/prompts.ts";
import { PromptTooLongError, ReaderCallError, ReaderTimeoutError, type Reader, type ReaderFailure } from "../reader/reader.ts";
import { scoreAnswer } from "../reader/score.ts";
import { chunkAt, type Sample } from "../types.ts";

/** The kept picks' texts in document order (the reference re-sorts the kept chunks by index). */
export function keptChunks(sample: Sample, predIdx: readonly number[], kept: number): string[] {
  return [...predIdx.slice(0, kept)].sort((a, b) => a - b).map((i) => chunkAt(sample.chunks, i));
}

function failureOf(e: unknown): { kind: ReaderFailure; message: string } | undefined {
  if (e instanceof ReaderCallError && !e.fatal) return { kind: e.kind, message: e.message };
  if (e instanceof PromptTooLongError) return { kind: "context", message: e.message };
  if (e instanceof ReaderTimeoutError) return { kind: "timeout", message: e.message };
  return undefined;
}

/** One answer, scored with the dataset's metric; a counted failure instead of a throw. */
export async function readEpisode(reader: Reader, dataset: ReaderDataset, question: string, chunks: string[], gold: string | readonly string[], signal?: AbortSignal): Promise<ReaderRecord> {
  const { system, user } = readerPrompt(dataset, question, chunks);
  const prompt = `${system}\n\n${user}`;
  try {
    const a = await reader.answer({ question, chunks, dataset }, signal);
    const s = scoreAnswer(dataset, a.text, gold);
    return {
      model: reader.model, prompt, answer: a.text, correct: s.accuracy, ...(s.f1 !== undefined ? { f1: s.f1 } : {}),
      tokens: { prompt: a.promptTokens, completion: a.completionTokens }, ms: a.ms, retries: a.retries ?? 0, ...(a.cached ? { cached: true } : {}),
    };
  } catch (e) {
    const failure = failureOf(e);
    if (!failure || signal?.aborted) throw e;
    return {
      model: reader.model, prompt, answer: "", correct: 0, ...(dataset.name === "hotpotqa" || dataset.name === "musique" ? { f1: 0 } : {}),
      tokens: { prompt: 0, completion: 0 }, ms: 0, retries: e instanceof ReaderCallError ? e.retries : 0, failure,
    };
  }
}

/** Sums one length's reader records into its summary. */
export class ReaderTally {
  private readonly list: ReaderRecord[] = [];
  add(r: ReaderRecord): void { this.list.push(r); }
  get n(): number { return this.list.length; }

  summary(model: string): ReaderSummary {
    const l = this.list, n = l.length;
    const sum = (f: (r: ReaderRecord) => number): number => l.reduce((a, r) => a + f(r), 0);
    const correct = sum((r) => r.correct);
    const called = l.filter((r) => !r.cached && !r.failure);
    const failureKinds: ReaderSummary["failureKinds"] = {};
    for (const r of l) if (r.failure) failureKinds[r.failure.kind] = (failureKinds[r.failure.kind] ?? 0) + 1;
    const hasF1 = l.some((r) => r.f1 !== undefined);
    return {
      model, n, correct, accuracy: n ? correct / n : 0,
      // RULER's per-sample share is rounded to whole successes for the interval, as the sweep chart does for coverage
      ci: wilsonInterval(Math.round(correct), n),
      ...(hasF1 ? { f1: n ? sum((r) => r.f1 ?? 0) / n : 0 } : {}),
      failures: l.filter((r) => r.failure).length, failureKinds,
      promptTokens: n ? sum((r) => r.tokens.prompt) / n : 0,
      completionTokens: n ? sum((r) => r.tokens.completion) / n : 0,
      msPerAnswer: called.length ? called.reduce((a, r) => a + r.ms, 0) / called.length : 0,
      retries: sum((r) => r.retries),
    };
  }
}

/**
 * Reader calls in flight while later episodes run, at most `window`; `flush` gets each episode's
 * record (or undefined without a reader) in submission order. A fatal reader error rejects
 * `submit`/`drain`.
 */
export class ReaderPipeline {
  private readonly queue: { done: Promise<ReaderRecord | undefined>; flush: (r: ReaderRecord | undefined) => void }[] = [];
  /** `signal`: the run's; once it aborts, calls that fail are dropped, not thrown. */
  constructor(private readonly window: number, private readonly signal?: AbortSignal) {}

  async submit(call: (() => Promise<ReaderRecord>) | undefined, flush: (r: ReaderRecord | undefined) => void): Promise<void> {
    const done = call ? call() : Promise.resolve(undefined);
    done.catch(() => undefined); // awaited in order below; not an unhandled rejection meanwhile
    this.queue.push({ done, flush });
    while (this.queue.length > (call ? this.window : 0)) await this.shift();
  }

  async drain(): Promise<void> {
    while (this.queue.length > 0) await this.shift();
  }

  /** Cancelled: the calls still in flight are dropped unrecorded. */
  discard(): void { this.queue.length = 0; }

  private async shift(): Promise<void> {
    const head = this.queue[0]!;
    let r: ReaderRecord | undefined;
    try {
      r = await head.done;
    } catch (e) {
      if (!this.signal?.aborted) throw e;
      return this.discard();
    }
    this.queue.shift();
    head.flush(r);
  }
}
