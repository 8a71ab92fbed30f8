"use client";
/**
 * The "Sweep" form of a run page: which checkpoint, which lengths (chunks), samples per length,
 * the Q-threshold, baselines and oracle stop, and optionally an LLM reader that answers from each
 * episode's kept chunks (a GGUF model in the data root, or the worker's configured endpoint). It
 * runs on the run's queue (server/runs/sweeps.ts). The server validates (bounds live in the
 * contract); its field errors are shown beside the fields.
 */
import { useState } from "react";
import { DEFAULT_SWEEP_LENGTHS, MAX_SWEEP_CHUNKS, type CheckpointDto, type CreateSweepBody } from "../../lib/contracts/index.ts";
import { HttpError } from "../../lib/api.ts";
import { useStartSweep } from "../../lib/hooks/useSweeps.ts";
import { FieldError } from "./FieldError.tsx";
import { parseChunkLengths } from "../../lib/chunk-lengths.ts";
import { LlmModelField, llmModel, type LlmChoice } from "./LlmModelField.tsx";

export function SweepForm({ runId, checkpoints, queue, onDone }: { runId: string; checkpoints: CheckpointDto[]; queue: string; onDone: () => void }) {
  const start = useStartSweep(runId);
  const updates = [...new Set(checkpoints.map((c) => c.update))].sort((a, b) => b - a);
  const [checkpoint, setCheckpoint] = useState<string>(checkpoints.some((c) => c.best) ? "best" : "last");
  const [lengths, setLengths] = useState(DEFAULT_SWEEP_LENGTHS.join(","));
  const [samples, setSamples] = useState("20");
  const [threshold, setThreshold] = useState("0.5");
  const [baselines, setBaselines] = useState(true);
  const [oracleStop, setOracleStop] = useState(false);
  const [readerKind, setReaderKind] = useState<LlmChoice>("none");
  const [readerValue, setReaderValue] = useState("");
  const [local, setLocal] = useState<Record<string, string>>({});
  const server = start.error instanceof HttpError ? start.error.fieldErrors : {};
  const errors = { ...server, ...local };

  const submit = (e: React.FormEvent) => {
    e.preventDefault();
    const bad: Record<string, string> = {};
    const { list, error } = parseChunkLengths(lengths);
    if (error) bad.lengths = error;
    const body: CreateSweepBody = {
      checkpoint: checkpoint === "best" || checkpoint === "last" ? checkpoint : Number(checkpoint),
      lengths: list,
      samples: Number(samples),
      threshold: Number(threshold),
      baselines,
      oracleStop,
      reader: llmModel(readerKind, readerValue),
    };
    setLocal(bad);
    if (Object.keys(bad).length) return;
    start.mutate(body, { onSuccess: onDone });
  };

  return (
    <form className="panel stack" style={{ gap: 10 }} onSubmit={submit} data-testid="sweep-form">
      <div className="form-grid">
        <div className="field">
          <label htmlFor="sweep-checkpoint">checkpoint</label>
          <select id="sweep-checkpoint" value={checkpoint} onChange={(e) => setCheckpoint(e.target.value)} data-testid="sweep-checkpoint">
            <option value="best">best</option>
            <option value="last">last</option>
            {updates.map((u) => (
              <option key={u} value={String(u)}>
                update {u}
              </option>
            ))}
          </select>
          <FieldError form="sweep" errors={errors} name="checkpoint" />
        </div>
        <div className="field">
          <label htmlFor="sweep-lengths">lengths (chunks)</label>
          <input id="sweep-lengths" value={lengths} onChange={(e) => setLengths(e.target.value)} data-testid="sweep-lengths" />
          <span className="hint">≈ 1K, 4K, 32K, 128K, 1M tokens by default; up to {MAX_SWEEP_CHUNKS.toLocaleString()} chunks (≈ 10M tokens)</span>
          <FieldError form="sweep" errors={errors} name="lengths" />
        </div>
        <div className="field">
          <label htmlFor="sweep-samples">samples per length</label>
          <input id="sweep-samples" type="number" min={1} max={500} value={samples} onChange={(e) => setSamples(e.target.value)} data-testid="sweep-samples" />
          <FieldError form="sweep" errors={errors} name="samples" />
        </div>
        <div className="field">
          <label htmlFor="sweep-threshold">Q-threshold</label>
          <input id="sweep-threshold" type="number" step="0.05" value={threshold} onChange={(e) => setThreshold(e.target.value)} data-testid="sweep-threshold" />
          <FieldError form="sweep" errors={errors} name="threshold" />
        </div>
        <div className="field">
          <label>
            <input type="checkbox" checked={baselines} onChange={(e) => setBaselines(e.target.checked)} data-testid="sweep-baselines" /> BM25 and dense baselines
          </label>
          <label>
            <input type="checkbox" checked={oracleStop} onChange={(e) => setOracleStop(e.target.checked)} data-testid="sweep-oracle" /> oracle stop (ground-truth completion)
          </label>
        </div>
        <div className="field">
          <label htmlFor="sweep-reader">LLM reader (answer accuracy)</label>
          <LlmModelField
            id="sweep-reader"
            kind={readerKind}
            onKind={setReaderKind}
            value={readerValue}
            onValue={setReaderValue}
            none="none: retrieval figures only"
            kindTestId="sweep-reader"
            valueTestId="sweep-reader-value"
            hint="reads what the Q-threshold kept and answers; scored with the benchmark's metric"
          />
          <FieldError form="sweep" errors={errors} name="reader" />
        </div>
      </div>
      {start.error && !Object.keys(server).length && <div className="form-banner">{(start.error as Error).message}</div>}
      <div className="row">
        <button type="submit" className="primary" disabled={start.isPending} data-testid="sweep-submit">
          {start.isPending ? "Queueing…" : "Queue sweep"}
        </button>
        <button type="button" onClick={onDone}>
          Close
        </button>
        <span className="muted small" data-testid="sweep-queue">
          runs on the queue <b>{queue}</b>, like the run it evaluates
        </span>
      </div>
    </form>
  );
}
