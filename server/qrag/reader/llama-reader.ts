/**
 * The local GGUF reader through node-llama-cpp (llama.cpp's prebuilt CPU binary from npm; never
 * built or downloaded: `build: "never"`). Loaded only by `openGgufReader` (./open.ts). One context
 * sequence, calls one at a time, each from an empty history, greedy: the same prompt gives the
 * same text. The prompt is rendered by the model's chat wrapper (its own template, or a general
 * one) and counted before any evaluation, so an over-long prompt is a PromptTooLongError, never a
 * silent context shift.
 */
import path from "node:path";
import {
  getLlama, LlamaChatSession, LlamaLogLevel, resolveChatWrapper,
  type ChatHistoryItem, type LlamaGrammar, type Token,
} from "node-llama-cpp";
import { answerTokenBudget, readerPrompt } from "./prompts.ts";
import { PromptTooLongError, type Reader, type ReaderAnswer, type ReaderInput } from "./reader.ts";

export interface GgufReaderOptions {
  /** Context window; default the model's training context, at most 4096. */
  contextSize?: number;
  /** CPU threads. On a loaded 2-core machine llama.cpp's default (all cores, spin-waiting) was
   * ~1000× slower than 1 thread for the tiny model (13 s against 10 ms for 16 tokens). */
  threads?: number;
  /** Answer budget override; default per dataset (`answerTokenBudget`). */
  maxTokens?: number;
  /** Constrain the answer to `{"answer": string}` with llama.cpp's JSON-schema grammar. */
  json?: boolean;
  /** What the reader's `model` names (default the file's name): the path in the data root. */
  name?: string;
}

const ANSWER_SCHEMA = { type: "object", properties: { answer: { type: "string", maxLength: 64 } } } as const;

export async function openLlamaReader(file: string, o: GgufReaderOptions = {}): Promise<Reader> {
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: file });
  const contextSize = o.contextSize ?? Math.min(model.trainContextSize, 4096);
  const context = await model.createContext({ contextSize, ...(o.threads ? { threads: o.threads } : {}) });
  const sequence = context.getSequence();
  const chatWrapper = resolveChatWrapper(model);
  const grammar: LlamaGrammar | undefined = o.json ? await llama.createGrammarForJsonSchema(ANSWER_SCHEMA) : undefined;
  let queue: Promise<unknown> = Promise.resolve();

  const countPrompt = (system: string, user: string): number => {
    const history: ChatHistoryItem[] = [{ type: "system", text: system }, { type: "user", text: user }, { type: "model", response: [] }];
    const tokens: Token[] = chatWrapper.generateContextState({ chatHistory: history }).contextText.tokenize(model.tokenizer);
    return tokens.length;
  };

  const run = async (input: ReaderInput, signal?: AbortSignal): Promise<ReaderAnswer> => {
    const t0 = performance.now();
    const { system, user } = readerPrompt(input.dataset, input.question, input.chunks);
    const budget = o.maxTokens ?? answerTokenBudget(input.dataset);
    const promptTokens = countPrompt(system, user);
    if (promptTokens + budget > context.contextSize) throw new PromptTooLongError(promptTokens, budget, context.contextSize);
    await sequence.clearHistory(); // each answer from an empty KV cache: bit-identical whatever came before
    const out0 = sequence.tokenMeter.usedOutputTokens;
    const session = new LlamaChatSession({ contextSequence: sequence, systemPrompt: system, chatWrapper, autoDisposeSequence: false });
    try {
      const raw = await session.prompt(user, {
        maxTokens: budget, temperature: 0, ...(grammar ? { grammar } : {}), ...(signal ? { signal, stopOnAbortSignal: false } : {}),
      });
      return { text: grammar ? jsonAnswer(raw) : raw.trim(), promptTokens, completionTokens: sequence.tokenMeter.usedOutputTokens - out0, ms: performance.now() - t0 };
    } finally {
      session.dispose({ disposeSequence: false });
    }
  };

  return {
    model: `gguf:${o.name ?? path.basename(file)}`,
    answer(input, signal) {
      const next = queue.then(() => run(input, signal));
      queue = next.catch(() => undefined);
      return next;
    },
    async close() { await llama.dispose(); },
  };
}

/** The grammar's answer field; a cut-off JSON (answer budget spent) yields the raw text. */
function jsonAnswer(raw: string): string {
  try {
    const v: unknown = JSON.parse(raw);
    if (v && typeof v === "object" && "answer" in v && typeof v.answer === "string") return v.answer;
  } catch { /* cut off: fall through */ }
  return raw.trim();
}
