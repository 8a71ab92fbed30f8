/**
 * One greedy chat completion (a system and a user message → text), the layer both LLM users stand
 * on: the reader (reader.ts, one answer per sample) and the reason-and-retrieve agent
 * (../llm-agent/, one call per step). Providers: llama-chat.ts (a GGUF file through node-llama-cpp)
 * and openai-chat.ts (an OpenAI-compatible endpoint), both loaded lazily by ./open.ts.
 */

/** A JSON schema the output must follow: a llama.cpp grammar, or OpenAI's `response_format`. */
export interface OutputSchema {
  name: string;
  schema: Record<string, unknown>;
}

export interface ChatRequest {
  system: string;
  user: string;
  maxTokens: number;
  /** Constrain the output where the provider can; a server that refuses it gets plain requests from then on. */
  schema?: OutputSchema;
  /** Generation stops before any of these (the text is cut there). */
  stop?: readonly string[];
}

export interface ChatReply {
  text: string;
  promptTokens: number;
  completionTokens: number;
  /** Wall time of the call, retries and their waits included. */
  ms: number;
  /** Calls retried after a 429/5xx (endpoint). */
  retries: number;
  /** The schema was applied (false when none was asked or the server refused it). */
  constrained: boolean;
}

export interface ChatModel {
  /** Provider and file or model id (`gguf:FILE`, `openai:MODEL@HOST`), never a key. */
  readonly model: string;
  complete(req: ChatRequest, signal?: AbortSignal): Promise<ChatReply>;
  close?(): Promise<void>;
}
