/**
 * A real `qrag agent --out` file for the dashboard's agent tests: runAgent (bm25, R3-RAG's step
 * format) against a local OpenAI-compatible endpoint (test/openai-fake-server.ts, loading the tiny
 * GGUF model) whose replies are scripted, so the rows are the engine's own and their values known:
 * at 20 chunks both samples query the question and answer the gold word (accuracy 1); at 40 chunks
 * the first answers with an HTML injection (wrong) and the second right (accuracy 0.5).
 */
import fs from "node:fs";
import path from "node:path";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { buildSource } from "../server/qrag/data/sources.ts";
import { runAgent } from "../server/qrag/llm-agent/run.ts";
import { openOpenAiChat } from "../server/qrag/reader/open.ts";
import { writeTinyGguf } from "../server/qrag/reader/tiny-gguf.ts";
import { agentRowSchema, type AgentSample, type AgentSummary } from "../lib/contracts/llm-agent.ts";
import { startFakeOpenAi } from "./openai-fake-server.ts";

/** Model text that must show as text: an <img> whose onerror would set a global if it were HTML. */
export const INJECTION = `<img src=x onerror="window.__agentXss=1">`;
export const AGENT_LENGTHS = [20, 40] as const;

export interface AgentFile {
  file: string;
  text: string;
  samples: AgentSample[];
  summaries: AgentSummary[];
}

export async function writeAgentFile(dir: string): Promise<AgentFile> {
  const gguf = path.join(dir, "tiny.gguf");
  writeTinyGguf(gguf);
  const key = "sk-fixture-0000";
  const server = await startFakeOpenAi(gguf, { key });
  try {
    const qa1 = resolveConfig({ preset: "babilong-cpu", overrides: ["envs.task=qa1"] });
    for (const n of AGENT_LENGTHS) {
      const source = buildSource(qa1, "test", n);
      for (let i = 0; i < 2; i++) {
        const s = source.sample(i);
        const answer = n === 40 && i === 0 ? INJECTION : s.answer;
        const reply = (content: string) => server.faults.push({ kind: "content", content });
        reply(`The problem analysis: find where the person is ${n === 40 && i === 0 ? INJECTION : ""}\nThe retrieval query: ${s.question.trim()}`);
        reply(`The problem analysis: the documents say it.\nThe final answer: ${answer}`);
      }
    }
    const file = path.join(dir, "agent.jsonl");
    const model = await openOpenAiChat({ baseURL: server.url, model: "tiny", apiKey: key, retryBaseMs: 10, label: "agent model" });
    await runAgent({ model, retriever: "bm25", format: "r3rag", lengths: [...AGENT_LENGTHS], samples: 2, k: 3, outFile: file });
    const text = fs.readFileSync(file, "utf8");
    const rows = text.trim().split("\n").map((l) => agentRowSchema.parse(JSON.parse(l)));
    return { file, text, samples: rows.filter((r) => r.type === "sample"), summaries: rows.filter((r) => r.type === "summary") };
  } finally {
    await server.close();
  }
}
