"use client";
/**
 * The run page's Export menu: each of the run's export files (GET /api/runs/:id/export/:file) as a
 * download link, named for what it is and what reads it back.
 */
import { EXPORT_FILES, type ExportFile } from "../lib/contracts/index.ts";

const WHAT: Record<ExportFile, string> = {
  "metrics.csv": "every metric point (CSV)",
  "metrics.json": "every metric point (JSON)",
  "episodes.jsonl": "stored episodes, one per line",
  "config.yaml": "the config (qrag train reads it)",
  tfevents: "TensorBoard event file",
};

export function ExportMenu({ runId }: { runId: string }) {
  return (
    <details className="menu" data-testid="export-menu">
      <summary className="button">Export</summary>
      <ul className="menu-list">
        {EXPORT_FILES.map((f) => (
          <li key={f}>
            <a href={`/api/runs/${encodeURIComponent(runId)}/export/${f}`} download data-testid="export-link" data-file={f}>
              <span className="mono">{f}</span> <span className="muted small">{WHAT[f]}</span>
            </a>
          </li>
        ))}
      </ul>
    </details>
  );
}
