/**
 * The reader's flags of `qrag sweep` and `qrag eval-official`, checked when parsed (a bad spec or
 * URL fails before a checkpoint loads). No flag takes the key: QRAG_READER_API_KEY (settings.ts).
 */
import type { Command } from "commander";
import { parseReaderSpec, type ReaderSpec } from "../reader/spec.ts";
import { intFlag, numberFlag } from "./flags.ts";

export interface ReaderFlags {
  reader?: string;
  readerUrl?: string;
  readerConcurrency?: number;
  readerTimeout?: number;
  readerThreads?: number;
  readerJson?: boolean;
  readerStream?: boolean;
}

export function addReaderFlags(c: Command): Command {
  return c
    .option("--reader <spec>", "an LLM reads the kept chunks and answers: gguf:FILE (a GGUF model in the data root; llama:FILE too) or openai:MODEL (with --reader-url; key from QRAG_READER_API_KEY)")
    .option("--reader-url <url>", "base URL of the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    .option("--reader-concurrency <n>", "reader calls in flight (endpoint; default 4)", intFlag("--reader-concurrency", 1, 256))
    .option("--reader-timeout <s>", "seconds per reader call (default 120)", numberFlag("--reader-timeout", 0.001, 86_400))
    .option("--reader-threads <n>", "llama.cpp CPU threads (default half the cores)", intFlag("--reader-threads", 1, 1024))
    .option("--reader-json", "constrain the answer to {\"answer\": string} (grammar / response_format)")
    .option("--reader-stream", "stream the endpoint's answers");
}

/** The spec to open, or undefined without --reader; throws an InputError for a bad one. */
export function readerSpecFrom(o: ReaderFlags): ReaderSpec | undefined {
  if (o.reader === undefined) {
    if (o.readerUrl !== undefined) parseReaderSpec("gguf:-", o.readerUrl); // the same refusal as with a gguf spec
    return undefined;
  }
  parseReaderSpec(o.reader, o.readerUrl);
  return {
    spec: o.reader, url: o.readerUrl, concurrency: o.readerConcurrency, threads: o.readerThreads, json: o.readerJson, stream: o.readerStream,
    ...(o.readerTimeout !== undefined ? { timeoutMs: Math.round(o.readerTimeout * 1000) } : {}),
  };
}
