/**
 * Greedy chat completions from a local GGUF model through node-llama-cpp (llama.cpp's prebuilt CPU
 * binary from npm; never built or downloaded: `build: "never"`). Loaded only through ./open.ts. One
 * context sequence, calls one at a time, each from an empty history: the same prompt gives the
 * same text. The prompt is rendered by the model's chat wrapper (its own template, or a general
 * one) and counted before any evaluation, so an over-long prompt is a PromptTooLongError, never a
 * silent context shift. A schema becomes llama.cpp's JSON-schema grammar (built once per schema).
 */
import path from "node:path";
import {
  getLlama, LlamaChatSession, LlamaLogLevel, resolveChatWrapper,
  type ChatHistoryItem, type LlamaGrammar, type Token,
} from "node-llama-cpp";
import { PromptTooLongError } from "./reader.ts";
import type { ChatModel, ChatReply, ChatRequest } from "./chat.ts";

export interface LlamaChatOptions {
  /** Context window; default the model's training context, at most 4096. */
  contextSize?: number;
  /** CPU threads. On a loaded 2-core machine llama.cpp's default (all cores, spin-waiting) was
   * ~1000× slower than 1 thread for the tiny model (13 s against 10 ms for 16 tokens). */
  threads?: number;
  /** What `model` names (default the file's name): the path in the data root. */
  name?: string;
  /** Who is calling, for error texts ("reader", "agent model"). */
  label?: string;
}

export async function openLlamaChat(file: string, o: LlamaChatOptions = {}): Promise<ChatModel> {
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: file });
  const contextSize = o.contextSize ?? Math.min(model.trainContextSize, 4096);
  const context = await model.createContext({ contextSize, ...(o.threads ? { threads: o.threads } : {}) });
  const sequence = context.getSequence();
  const chatWrapper = resolveChatWrapper(model);
  const grammars = new Map<string, Promise<LlamaGrammar>>();
  let queue: Promise<unknown> = Promise.resolve();

  const grammarFor = (schema: Record<string, unknown>): Promise<LlamaGrammar> => {
    const key = JSON.stringify(schema);
    let g = grammars.get(key);
    if (!g) grammars.set(key, (g = llama.createGrammarForJsonSchema(schema as never)));
    return g;
  };

  const countPrompt = (system: string, user: string): number => {
    const history: ChatHistoryItem[] = [{ type: "system", text: system }, { type: "user", text: user }, { type: "model", response: [] }];
    const tokens: Token[] = chatWrapper.generateContextState({ chatHistory: history }).contextText.tokenize(model.tokenizer);
    return tokens.length;
  };

  const run = async (req: ChatRequest, signal?: AbortSignal): Promise<ChatReply> => {
    const t0 = performance.now();
    const promptTokens = countPrompt(req.system, req.user);
    if (promptTokens + req.maxTokens > context.contextSize) throw new PromptTooLongError(promptTokens, req.maxTokens, context.contextSize, o.label);
    const grammar = req.schema ? await grammarFor(req.schema.schema) : undefined;
    await sequence.clearHistory(); // each call from an empty KV cache: bit-identical whatever came before
    const out0 = sequence.tokenMeter.usedOutputTokens;
    const session = new LlamaChatSession({ contextSequence: sequence, systemPrompt: req.system, chatWrapper, autoDisposeSequence: false });
    try {
      const text = await session.prompt(req.user, {
        maxTokens: req.maxTokens, temperature: 0,
        ...(grammar ? { grammar } : {}),
        ...(req.stop?.length && !grammar ? { customStopTriggers: [...req.stop] } : {}),
        ...(signal ? { signal, stopOnAbortSignal: false } : {}),
      });
      return { text, promptTokens, completionTokens: sequence.tokenMeter.usedOutputTokens - out0, ms: performance.now() - t0, retries: 0, constrained: grammar !== undefined };
    } finally {
      session.dispose({ disposeSequence: false });
    }
  };

  return {
    model: `gguf:${o.name ?? path.basename(file)}`,
    complete(req, signal) {
      const next = queue.then(() => run(req, signal));
      queue = next.catch(() => undefined);
      return next;
    },
    async close() { await llama.dispose(); },
  };
}
