/**
 * `--model` of `qrag agent`: `gguf:FILE` (a GGUF model in the data root) or `openai:MODEL` at
 * `--model-url`. Parsed before anything loads; opened with the provider's lazy import (../reader/
 * open.ts), the file checked against the data root when it is opened and handed to llama.cpp by
 * its checked descriptor, as the reader's (../reader/spec.ts). The key comes from
 * QRAG_READER_API_KEY (settings.ts), never from a flag.
 */
import fs from "node:fs";
import os from "node:os";
import { InputError } from "../errors.ts";
import { dataPathOrThrow, openInDataRoot } from "../data-root.ts";
import { readerApiKey } from "../settings.ts";
import { endpointName } from "../reader/endpoint-name.ts";
import { openGgufChat, openOpenAiChat } from "../reader/open.ts";
import type { ChatModel } from "../reader/chat.ts";
import { raceTimeout } from "../reader/reader.ts";

export interface ModelSpec {
  /** `gguf:FILE` or `openai:MODEL`. */
  spec: string;
  url?: string;
  /** Per call (per attempt for an endpoint); default 120 s. */
  timeoutMs?: number;
  /** llama.cpp CPU threads; default half the cores, as the reader's. */
  threads?: number;
  /** llama.cpp context window; default the model's, at most 4096. */
  contextSize?: number;
  stream?: boolean;
}

const LABEL = "agent model";

export function parseModelSpec(spec: string, url?: string): { provider: "gguf"; file: string } | { provider: "openai"; model: string; url: string } {
  const m = /^(gguf|llama|openai):(.+)$/.exec(spec.trim());
  if (!m) throw new InputError("--model: expected gguf:FILE (a GGUF model in the data root) or openai:MODEL with --model-url");
  if (m[1] === "openai") {
    if (!url) throw new InputError("--model openai:MODEL needs --model-url (the endpoint's base URL, e.g. http://127.0.0.1:8000/v1)");
    try {
      endpointName(url);
    } catch (e) {
      throw new InputError((e as Error).message.replace("--reader-url", "--model-url"));
    }
    return { provider: "openai", model: m[2]!, url };
  }
  if (url) throw new InputError("--model-url: only for --model openai:MODEL");
  return { provider: "gguf", file: m[2]! };
}

/** Aborts each call after `ms` (the llama.cpp provider has no timer of its own). */
function withCallTimeout(model: ChatModel, ms: number): ChatModel {
  return {
    model: model.model,
    close: model.close?.bind(model),
    complete: (req, outer) => raceTimeout(ms, outer, (signal) => model.complete(req, signal)),
  };
}

export async function openAgentModel(s: ModelSpec, root: string): Promise<ChatModel> {
  const p = parseModelSpec(s.spec, s.url);
  const timeoutMs = s.timeoutMs ?? 120_000;
  if (p.provider === "openai") return openOpenAiChat({ baseURL: p.url, model: p.model, apiKey: readerApiKey(), timeoutMs, stream: s.stream, label: LABEL });
  const f = dataPathOrThrow(root, "--model", p.file, "file");
  const fd = openInDataRoot(root, f.abs, f.rel);
  try {
    const viaFd = `/proc/self/fd/${fd}`;
    const chat = await openGgufChat(fs.existsSync(viaFd) ? viaFd : f.abs, { threads: s.threads ?? Math.max(1, Math.floor(os.availableParallelism() / 2)), contextSize: s.contextSize, name: f.rel, label: LABEL });
    return withCallTimeout(chat, timeoutMs);
  } finally {
    fs.closeSync(fd);
  }
}
