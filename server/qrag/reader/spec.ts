/**
 * `--reader` as the CLI and the evaluations take it: `gguf:FILE` (or `llama:FILE`), a GGUF model
 * in the data root, or `openai:MODEL` at `--reader-url`. Parsed before anything loads; opened with
 * the provider's lazy import, the model file checked against the data root when it is opened, then
 * wrapped: timeout (GGUF), concurrency bound, cache.
 */
import fs from "node:fs";
import os from "node:os";
import { InputError } from "../errors.ts";
import { dataPathOrThrow, openInDataRoot } from "../data-root.ts";
import { readerApiKey } from "../settings.ts";
import { endpointName } from "./endpoint-name.ts";
import { openGgufReader, openOpenAiReader } from "./open.ts";
import { cachedReader, limitConcurrency, withTimeout, type Reader } from "./reader.ts";

export interface ReaderSpec {
  /** `gguf:FILE`, `llama:FILE` or `openai:MODEL`. */
  spec: string;
  /** The endpoint's base URL (openai), e.g. http://127.0.0.1:8000/v1. */
  url?: string;
  /** Calls in flight (default 4 for an endpoint; a GGUF model answers one at a time). */
  concurrency?: number;
  /** Per call (per attempt for an endpoint); default 120 s. */
  timeoutMs?: number;
  /** Constrain the answer to {"answer": string} (grammar / response_format). */
  json?: boolean;
  stream?: boolean;
  /** llama.cpp CPU threads; default half the cores (all of them spin and starve the engine). */
  threads?: number;
}

export type ParsedReader = { provider: "gguf"; file: string } | { provider: "openai"; model: string; url: string };

export function parseReaderSpec(spec: string, url?: string): ParsedReader {
  const m = /^(gguf|llama|openai):(.+)$/.exec(spec.trim());
  if (!m) throw new InputError("--reader: expected gguf:FILE (a GGUF model in the data root) or openai:MODEL with --reader-url");
  if (m[1] === "openai") {
    if (!url) throw new InputError("--reader openai:MODEL needs --reader-url (the endpoint's base URL, e.g. http://127.0.0.1:8000/v1)");
    endpointName(url); // a malformed URL fails now
    return { provider: "openai", model: m[2]!, url };
  }
  if (url) throw new InputError("--reader-url: only for --reader openai:MODEL");
  return { provider: "gguf", file: m[2]! };
}

export async function openReader(s: ReaderSpec, root: string): Promise<Reader> {
  const p = parseReaderSpec(s.spec, s.url);
  const timeoutMs = s.timeoutMs ?? 120_000;
  let reader: Reader;
  if (p.provider === "openai") {
    reader = await openOpenAiReader({ baseURL: p.url, model: p.model, apiKey: readerApiKey(), timeoutMs, json: s.json, stream: s.stream });
    reader = limitConcurrency(reader, s.concurrency ?? 4);
  } else {
    const f = dataPathOrThrow(root, "--reader", p.file, "file");
    // llama.cpp opens by path: hand it the descriptor checked against the root (/proc/self/fd on
    // Linux), so a file swapped for a link after the check is not what loads
    const fd = openInDataRoot(root, f.abs, f.rel);
    try {
      const viaFd = `/proc/self/fd/${fd}`;
      const threads = s.threads ?? Math.max(1, Math.floor(os.availableParallelism() / 2));
      // one call at a time, queued outside the timeout: waiting for the model is not the call's time
      reader = limitConcurrency(withTimeout(await openGgufReader(fs.existsSync(viaFd) ? viaFd : f.abs, { threads, json: s.json, name: f.rel }), timeoutMs), 1);
    } finally {
      fs.closeSync(fd);
    }
  }
  return cachedReader(reader);
}
