/**
 * Opening a reader by spec, loading its provider lazily: `gguf:FILE` → node-llama-cpp (a native
 * addon of ~50 MB) only when a run asks for it, so the engine's face stays light.
 */
import type { GgufReaderOptions } from "./llama-reader.ts";
import type { OpenAiReaderOptions } from "./openai-reader.ts";
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
