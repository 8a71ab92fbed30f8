/**
 * The OpenAI-compatible reader: the reader's prompt (./prompts.ts) through an endpoint's chat
 * completions (./openai-chat.ts: greedy, retries honouring Retry-After, timeouts, the key kept in
 * its closure). Loaded only by `openOpenAiReader` (./open.ts).
 */
import { answerTokenBudget, readerPrompt } from "./prompts.ts";
import { ReaderCallError, type Reader } from "./reader.ts";
import { endpointName } from "./endpoint-name.ts";
import { openOpenAiChatNow, type OpenAiChatOptions } from "./openai-chat.ts";

export interface OpenAiReaderOptions extends Omit<OpenAiChatOptions, "label"> {
  /** `response_format` with the answer's JSON schema; dropped for good when the server refuses it. */
  json?: boolean;
  maxTokens?: number;
}

/** As llama-reader.ts's grammar: a bounded answer, so the JSON closes within the token budget. */
const ANSWER_FORMAT = {
  name: "answer",
  schema: { type: "object", properties: { answer: { type: "string", maxLength: 64 } }, required: ["answer"], additionalProperties: false },
};

export function openOpenAiReaderNow(o: OpenAiReaderOptions): Reader {
  const chat = openOpenAiChatNow({ ...o, label: "reader" });
  const host = endpointName(o.baseURL);
  return {
    model: chat.model,
    async answer(input, signal) {
      const { system, user } = readerPrompt(input.dataset, input.question, input.chunks);
      const r = await chat.complete({ system, user, maxTokens: o.maxTokens ?? answerTokenBudget(input.dataset), ...(o.json ? { schema: ANSWER_FORMAT } : {}) }, signal);
      return { text: answerText(r.text, r.constrained, host), promptTokens: r.promptTokens, completionTokens: r.completionTokens, ms: r.ms, retries: r.retries };
    },
  };
}

/** The model's text; with the JSON schema its `answer` field, and anything else is unparseable. */
function answerText(content: string, json: boolean, host: string): string {
  if (!json) return content.trim();
  try {
    const v: unknown = JSON.parse(content);
    if (v && typeof v === "object" && "answer" in v && typeof v.answer === "string") return v.answer.trim();
  } catch { /* below */ }
  throw new ReaderCallError("unparseable", `reader endpoint ${host}: the answer is not the asked JSON {"answer": string} (${content.length} characters)`);
}
