"use client";
/** Uploads `qrag sweep --out` (and optionally `--episodes`) files as a completed sweep of this run. */
import { useState } from "react";
import { useUploadSweep } from "../../lib/hooks/useSweeps.ts";
import { UploadError } from "./UploadError.tsx";

export function SweepUpload({ runId, onDone }: { runId: string; onDone: () => void }) {
  const upload = useUploadSweep(runId);
  const [points, setPoints] = useState<File | null>(null);
  const [episodes, setEpisodes] = useState<File | null>(null);
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    if (!points) return;
    const body = {
      points: { name: points.name, text: await points.text() },
      ...(episodes ? { episodes: { name: episodes.name, text: await episodes.text() } } : {}),
    };
    upload.mutate(body, { onSuccess: onDone });
  };
  return (
    <form className="panel stack" style={{ gap: 10 }} onSubmit={submit} data-testid="sweep-upload">
      <div className="form-grid">
        <div className="field">
          <label htmlFor="sweep-points-file">sweep points (qrag sweep --out)</label>
          <input id="sweep-points-file" type="file" accept=".jsonl,.json,application/json" onChange={(e) => setPoints(e.target.files?.[0] ?? null)} data-testid="sweep-points-file" />
        </div>
        <div className="field">
          <label htmlFor="sweep-episodes-file">episodes (qrag sweep --episodes, optional)</label>
          <input id="sweep-episodes-file" type="file" accept=".jsonl,.json,application/json" onChange={(e) => setEpisodes(e.target.files?.[0] ?? null)} data-testid="sweep-episodes-file" />
        </div>
      </div>
      <UploadError error={upload.error as Error | null} testId="sweep-upload-error" />
      <div className="row">
        <button type="submit" className="primary" disabled={!points || upload.isPending} data-testid="sweep-upload-submit">
          {upload.isPending ? "Uploading…" : "Upload sweep"}
        </button>
        <button type="button" onClick={onDone}>
          Close
        </button>
      </div>
    </form>
  );
}
