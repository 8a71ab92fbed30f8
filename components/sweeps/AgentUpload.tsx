"use client";
/** Uploads a `qrag agent --out` file as an agent evaluation of this run (beside its sweeps). */
import { useState } from "react";
import { useUploadAgent } from "../../lib/hooks/useAgent.ts";
import { UploadError } from "./UploadError.tsx";

export function AgentUpload({ runId, onDone }: { runId: string; onDone: () => void }) {
  const upload = useUploadAgent(runId);
  const [file, setFile] = useState<File | null>(null);
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    if (!file) return;
    upload.mutate({ file: { name: file.name, text: await file.text() } }, { onSuccess: onDone });
  };
  return (
    <form className="panel stack" style={{ gap: 10 }} onSubmit={submit} data-testid="agent-upload">
      <div className="field">
        <label htmlFor="agent-file">agent evaluation (qrag agent --out)</label>
        <input id="agent-file" type="file" accept=".jsonl,.json,application/json" onChange={(e) => setFile(e.target.files?.[0] ?? null)} data-testid="agent-file" />
      </div>
      <UploadError error={upload.error as Error | null} testId="agent-upload-error" />
      <div className="row">
        <button type="submit" className="primary" disabled={!file || upload.isPending} data-testid="agent-upload-submit">
          {upload.isPending ? "Uploading…" : "Upload agent evaluation"}
        </button>
        <button type="button" onClick={onDone}>
          Close
        </button>
      </div>
    </form>
  );
}
