/**
 * Greedy chat completions from an OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp's server,
 * hosted APIs) through the official `openai` package; loaded only through ./open.ts. Temperature 0,
 * streamed or not. The SDK's own retries are off: ours (./retry-delay.ts) honour the server's
 * Retry-After and are counted per call. The key lives in this closure only, never on the returned
 * object nor in a message: server texts are redacted (./endpoint-errors.ts).
 */
import OpenAI, { APIUserAbortError } from "openai";
import type { ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import { InputError } from "../errors.ts";
import { ReaderCallError } from "./reader.ts";
import { classifyEndpointError, type Classified } from "./endpoint-errors.ts";
import { endpointName } from "./endpoint-name.ts";
import { retryDelayMs, sleep } from "./retry-delay.ts";
import type { ChatModel, ChatReply, ChatRequest } from "./chat.ts";

export interface OpenAiChatOptions {
  baseURL: string;
  model: string;
  /** The secret; a local server without one gets a placeholder. */
  apiKey?: string;
  stream?: boolean;
  /** Per attempt, the whole response included (a stream that stalls too). Default 120 s. */
  timeoutMs?: number;
  /** Retries after a 429, a 5xx or a refused connection. Default 4. */
  maxRetries?: number;
  /** Backoff when the server names no delay: base · 2^retry. Default 500 ms. */
  retryBaseMs?: number;
  /** A Retry-After longer than this is not waited for: a rate_limit failure. Default 60 s. */
  maxRetryDelayMs?: number;
  /** Who is calling, for error texts ("reader", "agent model"). */
  label?: string;
}

/** The timer's abort reason, told apart from the caller's. */
const TIMED_OUT = Symbol("chat-timeout");

export function openOpenAiChatNow(o: OpenAiChatOptions): ChatModel {
  const host = endpointName(o.baseURL);
  const label = o.label ?? "reader";
  if (!o.model.trim()) throw new InputError(`${label}: name the model (openai:MODEL)`);
  const secret = o.apiKey ?? "";
  const client = new OpenAI({
    apiKey: secret || "unused", baseURL: o.baseURL, maxRetries: 0, logLevel: "off", organization: null, project: null,
  });
  const timeoutMs = o.timeoutMs ?? 120_000, maxRetries = o.maxRetries ?? 4;
  let formats = true; // cleared for good when the server refuses response_format

  const call = async (params: ChatCompletionCreateParamsNonStreaming, signal: AbortSignal): Promise<{ content: unknown; prompt?: number; completion?: number }> => {
    if (!o.stream) {
      const r = await client.chat.completions.create(params, { signal });
      return { content: r.choices?.[0]?.message?.content, prompt: r.usage?.prompt_tokens, completion: r.usage?.completion_tokens };
    }
    const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } }, { signal });
    let text = "", prompt: number | undefined, completion: number | undefined, chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices?.[0]?.delta?.content ?? "";
      if (chunk.usage) ({ prompt_tokens: prompt, completion_tokens: completion } = chunk.usage);
    }
    // the SDK ends an aborted stream quietly: a cut-off text is no answer
    if (signal.aborted) throw new APIUserAbortError();
    if (chunks === 0) return { content: undefined }; // a 200 that was no event stream (a proxy's page)
    return { content: text, prompt, completion };
  };

  const complete = async (req: ChatRequest, outer?: AbortSignal): Promise<ChatReply> => {
    const t0 = performance.now();
    for (let retries = 0; ;) {
      const constrained = req.schema !== undefined && formats;
      const ctl = new AbortController();
      const onOuter = (): void => ctl.abort(outer?.reason);
      outer?.addEventListener("abort", onOuter, { once: true });
      const timer = setTimeout(() => ctl.abort(TIMED_OUT), timeoutMs);
      let c: Classified;
      try {
        const r = await call({
          model: o.model, temperature: 0, max_tokens: req.maxTokens,
          messages: [{ role: "system", content: req.system }, { role: "user", content: req.user }],
          ...(constrained ? { response_format: { type: "json_schema", json_schema: { name: req.schema!.name, strict: true, schema: req.schema!.schema } } } : {}),
          ...(req.stop?.length && !constrained ? { stop: req.stop.slice(0, 4) } : {}), // OpenAI takes at most 4
        }, ctl.signal);
        if (typeof r.content !== "string") throw new ReaderCallError("unparseable", `${label} endpoint ${host}: the response holds no message text`);
        return { text: r.content, promptTokens: r.prompt ?? 0, completionTokens: r.completion ?? 0, ms: performance.now() - t0, retries, constrained };
      } catch (e) {
        if (outer?.aborted) throw outer.reason ?? e;
        if (ctl.signal.reason === TIMED_OUT && (e instanceof APIUserAbortError || (e as Error).name === "AbortError")) {
          throw new ReaderCallError("timeout", `${label} endpoint ${host}: no complete answer within ${timeoutMs} ms`, false, retries);
        }
        if (e instanceof ReaderCallError) throw e;
        c = classifyEndpointError(e, host, secret, label);
      } finally {
        clearTimeout(timer);
        outer?.removeEventListener("abort", onOuter);
      }
      if (c.kind === "format_unsupported" && constrained) {
        formats = false; // the server has no response_format: plain text from now on
        continue;
      }
      const kind = c.kind === "format_unsupported" ? "bad_request" : c.kind;
      if (!c.retry || retries >= maxRetries) {
        const after = retries > 0 ? ` (after ${retries} retries)` : "";
        throw new ReaderCallError(kind, `${c.message}${after}`, c.fatal, retries);
      }
      const wait = retryDelayMs(c.headers, retries, o.retryBaseMs ?? 500);
      if (wait > (o.maxRetryDelayMs ?? 60_000)) {
        throw new ReaderCallError(kind, `${c.message}; the server asks to wait ${Math.round(wait / 1000)} s, over the ${label}'s limit`, false, retries);
      }
      await sleep(wait, outer);
      retries++;
    }
  };

  return { model: `openai:${o.model}@${host}`, complete };
}
