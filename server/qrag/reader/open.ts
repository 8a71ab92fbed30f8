/**
 * Opening a provider, loading its package lazily: node-llama-cpp (a native addon of ~50 MB) for a
 * GGUF file, `openai` for an endpoint, only when a run asks for one, so the engine's face stays
 * light. `spec.ts` opens by `--reader` spec; the agent (../llm-agent/) opens chat models.
 */
import type { GgufReaderOptions } from "./llama-reader.ts";
import type { OpenAiReaderOptions } from "./openai-reader.ts";
import type { LlamaChatOptions } from "./llama-chat.ts";
import type { OpenAiChatOptions } from "./openai-chat.ts";
import type { ChatModel } from "./chat.ts";
import type { Reader } from "./reader.ts";

export async function openGgufReader(file: string, o: GgufReaderOptions = {}): Promise<Reader> {
  const { openLlamaReader } = await import("./llama-reader.ts");
  return openLlamaReader(file, o);
}

/** `openai:MODEL` against an OpenAI-compatible endpoint; the `openai` package loads only here. */
export async function openOpenAiReader(o: OpenAiReaderOptions): Promise<Reader> {
  const { openOpenAiReaderNow } = await import("./openai-reader.ts");
  return openOpenAiReaderNow(o);
}

/** Plain chat completions from a GGUF file (the agent's steps). */
export async function openGgufChat(file: string, o: LlamaChatOptions = {}): Promise<ChatModel> {
  const { openLlamaChat } = await import("./llama-chat.ts");
  return openLlamaChat(file, o);
}

/** Plain chat completions from an OpenAI-compatible endpoint. */
export async function openOpenAiChat(o: OpenAiChatOptions): Promise<ChatModel> {
  const { openOpenAiChatNow } = await import("./openai-chat.ts");
  return openOpenAiChatNow(o);
}
