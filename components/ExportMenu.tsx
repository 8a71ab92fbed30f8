"use client";
/**
 * The Export menu: each export file as a download link, named for what it is and what reads it
 * back. On the run page, the run's files (GET /api/runs/:id/export/:file); in the compare view,
 * the same files over its runs (GET /api/compare/export/:file?ids=…: rows name their run, the
 * event files come as a tar of one folder per run).
 */
import { EXPORT_FILES, type ExportFile } from "../lib/contracts/index.ts";

const WHAT: Record<ExportFile, string> = {
  "metrics.csv": "every metric point (CSV)",
  "metrics.json": "every metric point (JSON)",
  "episodes.jsonl": "stored episodes, one per line",
  "config.yaml": "the config (qrag train reads it)",
  tfevents: "TensorBoard event file",
};

const COMPARED: Partial<Record<ExportFile, string>> = {
  "config.yaml": "the configs, one YAML document per run",
  tfevents: "TensorBoard event files, a folder per run (tar)",
};

export function ExportMenu(p: { runId: string } | { runIds: readonly string[] }) {
  const many = "runIds" in p;
  const href = (f: ExportFile) =>
    many ? `/api/compare/export/${f}?ids=${p.runIds.map(encodeURIComponent).join(",")}` : `/api/runs/${encodeURIComponent(p.runId)}/export/${f}`;
  return (
    <details className="menu" data-testid="export-menu">
      <summary className="button">Export</summary>
      <ul className="menu-list">
        {EXPORT_FILES.map((f) => (
          <li key={f}>
            <a href={href(f)} download data-testid="export-link" data-file={f}>
              <span className="mono">{f}</span> <span className="muted small">{(many && COMPARED[f]) || WHAT[f]}</span>
            </a>
          </li>
        ))}
      </ul>
    </details>
  );
}
