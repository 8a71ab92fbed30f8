/**
 * The agent's prompt and the parsing of each model reply, in R3-RAG's step format (Li et al.,
 * "R3-RAG: Learning Step-by-Step Reasoning and Retrieval for LLMs via Reinforcement Learning";
 * their inference loop, startup/RRAG.py in github.com/Yuan-Li-FNLP/R3-RAG): the system message
 * "You are a helpful assistant", the user message "The question: Q" followed by the trajectory so
 * far; each reply is "The problem analysis: … The retrieval query: …?" or "The problem analysis: …
 * The final answer: …", and after a query the loop appends "The retrieval documents: …".
 *
 * Two formats:
 * - `r3rag`: exactly that, for R3-RAG's released models (served by an OpenAI-compatible server);
 * - `json` (default): for a general instruct model, the same trajectory with an instruction
 *   preamble, and each reply one step `{"kind": "reason"|"query"|"answer", "text": …}`,
 *   constrained by a grammar (llama.cpp) or `response_format` (endpoint) where the provider has it.
 * Parsers are pure and never throw: a reply they cannot read is `null`, and the loop answers by force.
 */
import type { OutputSchema } from "../reader/chat.ts";

export type AgentFormat = "r3rag" | "json";
export const AGENT_FORMATS: readonly AgentFormat[] = ["r3rag", "json"];

/** One parsed step of a reply (a retrieve step is the loop's, never the model's). */
export interface ParsedStep {
  kind: "reason" | "query" | "answer";
  text: string;
}

/** What the trajectory holds so far, rendered into every prompt. */
export type TrajectoryItem = ParsedStep | { kind: "retrieve"; docs: readonly string[] };

const ANALYSIS = "The problem analysis:", QUERY = "The retrieval query:", ANSWER = "The final answer:", DOCS = "The retrieval documents:";
export const R3RAG_SYSTEM = "You are a helpful assistant";

/** A parsed text is cut here: a query or answer is a line, not an essay. */
export const MAX_STEP_TEXT = 1000;

const JSON_PREAMBLE =
  "Answer the question step by step. Each reply is exactly one step as JSON: " +
  '{"kind": "reason", "text": your analysis of what is known and missing}, ' +
  '{"kind": "query", "text": a search query for the missing fact}, or ' +
  '{"kind": "answer", "text": the final answer only (a word or short phrase)}. ' +
  "After a query you are shown the retrieved documents. Answer once the documents suffice.";

/** The step schema of the `json` format; `answerOnly` for the forced final answer. */
export function stepSchema(answerOnly = false): OutputSchema {
  return {
    name: "agent_step",
    schema: {
      type: "object",
      properties: {
        kind: { type: "string", enum: answerOnly ? ["answer"] : ["reason", "query", "answer"] },
        text: { type: "string", maxLength: 200 },
      },
      required: ["kind", "text"],
      additionalProperties: false,
    },
  };
}

/** Where R3-RAG's model stops: before it writes retrieved documents of its own. */
export const R3RAG_STOP = [DOCS];

function transcript(items: readonly TrajectoryItem[]): string {
  const out: string[] = [];
  for (const it of items) {
    if (it.kind === "retrieve") out.push(`${DOCS} ${it.docs.join("\n")}`);
    else out.push(`${it.kind === "reason" ? ANALYSIS : it.kind === "query" ? QUERY : ANSWER} ${it.text}`);
  }
  return out.join("\n");
}

/**
 * The prompt of the next call. `force`: the step bound is reached or the last reply did not parse;
 * the model is asked for the final answer now.
 */
export function agentPrompt(format: AgentFormat, question: string, items: readonly TrajectoryItem[], force = false): { system: string; user: string } {
  const t = transcript(items);
  const base = `The question: ${question.trim()}${t ? `\n${t}` : ""}`;
  if (format === "r3rag") return { system: R3RAG_SYSTEM, user: force ? `${base}\n${ANALYSIS} No more retrieval is possible; give the final answer now.` : base };
  const next = force ? "Give the final answer now, as {\"kind\": \"answer\", \"text\": …}." : "Your next step as JSON:";
  return { system: R3RAG_SYSTEM, user: `${JSON_PREAMBLE}\n\n${base}\n\n${next}` };
}

const clean = (s: string): string => s.replace(/^[\s#]+|[\s#]+$/g, "").slice(0, MAX_STEP_TEXT);

/** The text after `label` up to the first of `stops` (each searched after it), cleaned; null when empty. */
function section(text: string, at: number, label: string, stops: readonly string[]): string | null {
  const start = at + label.length;
  let end = text.length;
  for (const s of stops) {
    const i = text.indexOf(s, start);
    if (i !== -1 && i < end) end = i;
  }
  const v = clean(text.slice(start, end));
  return v ? v : null;
}

/**
 * A reply in R3-RAG's format → its steps: the analysis, then a query (up to its "?" or the next
 * label) or an answer, whichever comes first after the analysis. As R3-RAG's own parser, a reply
 * without an analysis is unparseable (null); so is an analysis followed by neither.
 */
export function parseR3RagReply(text: string): ParsedStep[] | null {
  const a = text.indexOf(ANALYSIS);
  if (a === -1) return null;
  const labels = [ANALYSIS, QUERY, ANSWER, DOCS, "###"];
  const analysis = section(text, a, ANALYSIS, labels);
  const from = a + ANALYSIS.length;
  const q = text.indexOf(QUERY, from), ans = text.indexOf(ANSWER, from);
  if (q === -1 && ans === -1) return null;
  const steps: ParsedStep[] = analysis ? [{ kind: "reason", text: analysis }] : [];
  if (q !== -1 && (ans === -1 || q < ans)) {
    // the query ends at its question mark, kept (R3-RAG's stop list holds "?")
    let query = section(text, q, QUERY, [...labels, "\nStep", "?"]);
    const mark = text.indexOf("?", q + QUERY.length);
    if (query && mark !== -1 && clean(text.slice(q + QUERY.length, mark)) === query) query = `${query}?`;
    if (!query) return null;
    steps.push({ kind: "query", text: query });
  } else {
    const answer = section(text, ans, ANSWER, [...labels, "\nStep"]);
    if (!answer) return null;
    steps.push({ kind: "answer", text: answer });
  }
  return steps;
}

/** A reply in the `json` format → its one step; null unless it is that object with a known kind and a text. */
export function parseJsonStep(text: string): ParsedStep[] | null {
  const body = text.trim().replace(/^```(?:json)?\s*|\s*```$/g, ""); // models fence JSON without being asked
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    return null;
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  const { kind, text: t } = v as { kind?: unknown; text?: unknown };
  if ((kind !== "reason" && kind !== "query" && kind !== "answer") || typeof t !== "string") return null;
  const c = clean(t);
  return c ? [{ kind, text: c }] : null;
}

export function parseReply(format: AgentFormat, text: string): ParsedStep[] | null {
  return format === "r3rag" ? parseR3RagReply(text) : parseJsonStep(text);
}

/** The forced answer's text: the parsed answer if the reply has one, else the reply's first line, cleaned. */
export function forcedAnswer(format: AgentFormat, text: string): string {
  const steps = parseReply(format, text);
  const a = steps?.find((s) => s.kind === "answer");
  if (a) return a.text;
  const i = text.lastIndexOf(ANSWER);
  const rest = i === -1 ? text : text.slice(i + ANSWER.length);
  return clean(rest.trim().split("\n")[0] ?? "");
}
