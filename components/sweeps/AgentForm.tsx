"use client";
/**
 * The "Run agent" form of a run page: the R3-style agent (issue 30) over the run's BabiLong task,
 * queued as a job the worker runs — its model (a GGUF file in the data root, or the worker's
 * OpenAI-compatible endpoint), retriever (bm25; dense and Q-RAG's state encoder from the run's
 * best checkpoint), lengths, samples and step bound. Bounds and field errors come from the server.
 */
import { useState } from "react";
import { AGENT_RETRIEVERS, type CreateAgentBody } from "../../lib/contracts/index.ts";
import { HttpError } from "../../lib/api.ts";
import { useStartAgent } from "../../lib/hooks/useAgent.ts";
import { FieldError } from "./FieldError.tsx";
import { parseChunkLengths } from "../../lib/chunk-lengths.ts";
import { LlmModelField, llmModel, type LlmChoice } from "./LlmModelField.tsx";

const RETRIEVER_LABELS: Record<(typeof AGENT_RETRIEVERS)[number], string> = { bm25: "BM25", dense: "dense (the run's encoders, one step)", qrag: "Q-RAG (the run's state encoder)" };

export function AgentForm({ runId, hasCheckpoint, onDone }: { runId: string; hasCheckpoint: boolean; onDone: () => void }) {
  const start = useStartAgent(runId);
  const [kind, setKind] = useState<LlmChoice>("gguf");
  const [value, setValue] = useState("");
  const [retriever, setRetriever] = useState<(typeof AGENT_RETRIEVERS)[number]>("bm25");
  const [lengths, setLengths] = useState("50");
  const [samples, setSamples] = useState("20");
  const [maxCalls, setMaxCalls] = useState("10");
  const [local, setLocal] = useState<Record<string, string>>({});
  const server = start.error instanceof HttpError ? start.error.fieldErrors : {};
  const errors = { ...server, ...local };
  const err = (name: string) => <FieldError form="agent" errors={errors} name={name} />;
  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    const { list, error } = parseChunkLengths(lengths);
    const bad: Record<string, string> = error ? { lengths: error } : {};
    setLocal(bad);
    if (Object.keys(bad).length) return;
    const body: CreateAgentBody = {
      model: llmModel(kind, value)!, // never "none": the select here offers no such option
      retriever, lengths: list, samples: Number(samples), maxCalls: Number(maxCalls),
    };
    start.mutate(body, { onSuccess: onDone });
  };
  return (
    <form className="panel stack" style={{ gap: 10 }} onSubmit={submit} data-testid="agent-form">
      <div className="form-grid">
        <div className="field">
          <label htmlFor="agent-model-kind">model</label>
          <LlmModelField id="agent-model-kind" kind={kind} onKind={setKind} value={value} onValue={setValue} kindTestId="agent-model-kind" valueTestId="agent-model" />
          {err("model")}
        </div>
        <div className="field">
          <label htmlFor="agent-retriever">retriever</label>
          <select id="agent-retriever" value={retriever} onChange={(e) => setRetriever(e.target.value as typeof retriever)} data-testid="agent-retriever">
            {AGENT_RETRIEVERS.map((r) => (
              <option key={r} value={r} disabled={r !== "bm25" && !hasCheckpoint}>
                {RETRIEVER_LABELS[r]}
              </option>
            ))}
          </select>
          {err("retriever")}
        </div>
        <div className="field">
          <label htmlFor="agent-lengths">lengths (chunks)</label>
          <input id="agent-lengths" value={lengths} onChange={(e) => setLengths(e.target.value)} data-testid="agent-lengths" />
          {err("lengths")}
        </div>
        <div className="field">
          <label htmlFor="agent-samples">samples per length</label>
          <input id="agent-samples" type="number" min={1} max={500} value={samples} onChange={(e) => setSamples(e.target.value)} data-testid="agent-samples" />
          {err("samples")}
        </div>
        <div className="field">
          <label htmlFor="agent-max-calls">model calls per sample</label>
          <input id="agent-max-calls" type="number" min={1} max={64} value={maxCalls} onChange={(e) => setMaxCalls(e.target.value)} data-testid="agent-max-calls" />
          <span className="hint">then the answer is forced (R3-RAG&apos;s chain length is 10)</span>
          {err("maxCalls")}
        </div>
      </div>
      {start.error && !Object.keys(server).length && <div className="form-banner">{(start.error as Error).message}</div>}
      <div className="row">
        <button type="submit" className="primary" disabled={start.isPending || !value.trim()} data-testid="agent-submit">
          {start.isPending ? "Queueing…" : "Queue agent evaluation"}
        </button>
        <button type="button" onClick={onDone}>
          Close
        </button>
      </div>
    </form>
  );
}
