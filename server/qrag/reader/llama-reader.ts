/**
 * The local GGUF reader: the reader's prompt (./prompts.ts) through a llama.cpp chat model
 * (./llama-chat.ts: greedy, one call at a time, an over-long prompt a PromptTooLongError before any
 * evaluation). Loaded only by `openGgufReader` (./open.ts).
 */
import { openLlamaChat, type LlamaChatOptions } from "./llama-chat.ts";
import { answerTokenBudget, readerPrompt } from "./prompts.ts";
import type { Reader } from "./reader.ts";

export interface GgufReaderOptions extends Omit<LlamaChatOptions, "label"> {
  /** Answer budget override; default per dataset (`answerTokenBudget`). */
  maxTokens?: number;
  /** Constrain the answer to `{"answer": string}` with llama.cpp's JSON-schema grammar. */
  json?: boolean;
}

export const ANSWER_SCHEMA = { name: "answer", schema: { type: "object", properties: { answer: { type: "string", maxLength: 64 } } } };

export async function openLlamaReader(file: string, o: GgufReaderOptions = {}): Promise<Reader> {
  const chat = await openLlamaChat(file, { ...o, label: "reader" });
  return {
    model: chat.model,
    async answer(input, signal) {
      const { system, user } = readerPrompt(input.dataset, input.question, input.chunks);
      const r = await chat.complete({ system, user, maxTokens: o.maxTokens ?? answerTokenBudget(input.dataset), ...(o.json ? { schema: ANSWER_SCHEMA } : {}) }, signal);
      return { text: r.constrained ? jsonAnswer(r.text) : r.text.trim(), promptTokens: r.promptTokens, completionTokens: r.completionTokens, ms: r.ms };
    },
    close: () => chat.close!(),
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
