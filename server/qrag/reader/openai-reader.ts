/**
 * The OpenAI-compatible reader (vLLM, Ollama, llama.cpp's server, hosted APIs) through the official
 * `openai` package; loaded only by `openOpenAiReader` (./open.ts). One greedy chat completion per
 * sample (temperature 0), streamed or not. The SDK's own retries are off: ours (./retry-delay.ts)
 * honour the server's Retry-After and are counted per sample. The key lives in this closure only,
 * never on the returned object nor in a message: server texts are redacted (./endpoint-errors.ts).
 */
import OpenAI, { APIUserAbortError } from "openai";
import type { ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import { InputError } from "../errors.ts";
import { answerTokenBudget, readerPrompt } from "./prompts.ts";
import { ReaderCallError, type Reader, type ReaderAnswer, type ReaderInput } from "./reader.ts";
import { classifyEndpointError, type Classified } from "./endpoint-errors.ts";
import { endpointName } from "./endpoint-name.ts";
import { retryDelayMs, sleep } from "./retry-delay.ts";

export interface OpenAiReaderOptions {
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
  /** `response_format` with the answer's JSON schema; dropped for good when the server refuses it. */
  json?: boolean;
  maxTokens?: number;
}

/** As llama-reader.ts's grammar: a bounded answer, so the JSON closes within the token budget. */
const ANSWER_FORMAT = {
  type: "json_schema",
  json_schema: {
    name: "answer", strict: true,
    schema: { type: "object", properties: { answer: { type: "string", maxLength: 64 } }, required: ["answer"], additionalProperties: false },
  },
} as const;

/** The timer's abort reason, told apart from the caller's. */
const TIMED_OUT = Symbol("reader-timeout");

export function openOpenAiReaderNow(o: OpenAiReaderOptions): Reader {
  const host = endpointName(o.baseURL);
  if (!o.model.trim()) throw new InputError("reader: name the model (openai:MODEL)");
  const secret = o.apiKey ?? "";
  const client = new OpenAI({
    apiKey: secret || "unused", baseURL: o.baseURL, maxRetries: 0, logLevel: "off", organization: null, project: null,
  });
  const timeoutMs = o.timeoutMs ?? 120_000, maxRetries = o.maxRetries ?? 4;
  let json = o.json ?? false;

  const complete = async (params: ChatCompletionCreateParamsNonStreaming, signal: AbortSignal): Promise<{ content: unknown; prompt?: number; completion?: number }> => {
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

  const answer = async (input: ReaderInput, outer?: AbortSignal): Promise<ReaderAnswer> => {
    const t0 = performance.now();
    const { system, user } = readerPrompt(input.dataset, input.question, input.chunks);
    const maxTokens = o.maxTokens ?? answerTokenBudget(input.dataset);
    for (let retries = 0; ;) {
      const ctl = new AbortController();
      const onOuter = (): void => ctl.abort(outer?.reason);
      outer?.addEventListener("abort", onOuter, { once: true });
      const timer = setTimeout(() => ctl.abort(TIMED_OUT), timeoutMs);
      let c: Classified;
      try {
        const r = await complete({
          model: o.model, temperature: 0, max_tokens: maxTokens,
          messages: [{ role: "system", content: system }, { role: "user", content: user }],
          ...(json ? { response_format: ANSWER_FORMAT } : {}),
        }, ctl.signal);
        const text = answerText(r.content, json, host);
        return { text, promptTokens: r.prompt ?? 0, completionTokens: r.completion ?? 0, ms: performance.now() - t0, retries };
      } catch (e) {
        if (outer?.aborted) throw outer.reason ?? e;
        if (ctl.signal.reason === TIMED_OUT && (e instanceof APIUserAbortError || (e as Error).name === "AbortError")) {
          throw new ReaderCallError("timeout", `reader endpoint ${host}: no complete answer within ${timeoutMs} ms`, false, retries);
        }
        if (e instanceof ReaderCallError) throw e;
        c = classifyEndpointError(e, host, secret);
      } finally {
        clearTimeout(timer);
        outer?.removeEventListener("abort", onOuter);
      }
      if (c.kind === "format_unsupported" && json) {
        json = false; // the server has no response_format: plain text from now on
        continue;
      }
      const kind = c.kind === "format_unsupported" ? "bad_request" : c.kind;
      if (!c.retry || retries >= maxRetries) {
        const after = retries > 0 ? ` (after ${retries} retries)` : "";
        throw new ReaderCallError(kind, `${c.message}${after}`, c.fatal, retries);
      }
      const wait = retryDelayMs(c.headers, retries, o.retryBaseMs ?? 500);
      if (wait > (o.maxRetryDelayMs ?? 60_000)) {
        throw new ReaderCallError(kind, `${c.message}; the server asks to wait ${Math.round(wait / 1000)} s, over the reader's limit`, false, retries);
      }
      await sleep(wait, outer);
      retries++;
    }
  };

  return { model: `openai:${o.model}@${host}`, answer };
}

/** The model's text; with the JSON schema its `answer` field, and anything else is unparseable. */
function answerText(content: unknown, json: boolean, host: string): string {
  if (typeof content !== "string") throw new ReaderCallError("unparseable", `reader endpoint ${host}: the response holds no message text`);
  if (!json) return content.trim();
  try {
    const v: unknown = JSON.parse(content);
    if (v && typeof v === "object" && "answer" in v && typeof v.answer === "string") return v.answer.trim();
  } catch { /* below */ }
  throw new ReaderCallError("unparseable", `reader endpoint ${host}: the answer is not the asked JSON {"answer": string} (${content.length} characters)`);
}
