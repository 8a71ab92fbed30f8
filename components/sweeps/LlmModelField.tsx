"use client";
/**
 * Which LLM a sweep's reader or the agent uses: a GGUF model in the data root (llama.cpp on the
 * worker) or the worker's OpenAI-compatible endpoint by model name (its URL and key are the
 * worker's settings, never a form field). `none` is offered where the model is optional.
 */
import { dataFilesListId, type SweepReader } from "../../lib/contracts/index.ts";
import { DataRootSuggestions } from "../DataRootSuggestions.tsx";

export type LlmChoice = "none" | SweepReader["provider"];

export function LlmModelField(p: {
  id: string;
  kind: LlmChoice;
  onKind: (k: LlmChoice) => void;
  value: string;
  onValue: (v: string) => void;
  /** The text of a "none" option; left out where a model is required. */
  none?: string;
  kindTestId: string;
  valueTestId: string;
  /** Shown under the field, above the data root's note. */
  hint?: string;
}) {
  return (
    <>
      <select id={p.id} value={p.kind} onChange={(e) => p.onKind(e.target.value as LlmChoice)} data-testid={p.kindTestId}>
        {p.none && <option value="none">{p.none}</option>}
        <option value="gguf">a GGUF model in the data root (llama.cpp on the worker)</option>
        <option value="endpoint">the worker&apos;s OpenAI-compatible endpoint (QRAG_READER_URL)</option>
      </select>
      {p.kind !== "none" && (
        <input
          aria-label={p.kind === "gguf" ? "GGUF file" : "model name"}
          value={p.value}
          onChange={(e) => p.onValue(e.target.value)}
          placeholder={p.kind === "gguf" ? "models/qwen3-4b-q4_k_m.gguf" : "Qwen/Qwen3-4B"}
          list={p.kind === "gguf" ? dataFilesListId("file") : undefined}
          maxLength={p.kind === "gguf" ? 1024 : 200}
          data-testid={p.valueTestId}
        />
      )}
      {p.hint && <span className="hint">{p.hint}</span>}
      {p.kind === "gguf" && <DataRootSuggestions />}
    </>
  );
}

/** The chosen model as the contract's reader / agent model, or undefined for none. */
export function llmModel(kind: LlmChoice, value: string): SweepReader | undefined {
  return kind === "gguf" ? { provider: "gguf", file: value } : kind === "endpoint" ? { provider: "endpoint", model: value } : undefined;
}
