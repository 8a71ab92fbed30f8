"use client";
/**
 * The LLM reader on this episode's kept chunks (sweeps and official evaluations run with
 * `--reader`): its answer, the benchmark's score of it against the target, the call's tokens,
 * latency and retries, and the prompt exactly as sent. Model text is untrusted: rendered as text.
 */
import type { EpisodeRecord } from "../../lib/contracts/index.ts";
import { fmtNum } from "../../lib/format.ts";

export function ReaderPanel({ reader, target }: { reader: NonNullable<EpisodeRecord["reader"]>; target: string }) {
  const ok = reader.correct >= 1;
  return (
    <section className="panel stack" style={{ gap: 8 }} data-testid="reader-panel">
      <div className="row">
        <h3 style={{ margin: 0 }}>LLM reader</h3>
        <span className="muted small mono">{reader.model}</span>
      </div>
      <dl className="kv">
        <dt>answer</dt>
        <dd>
          <b data-testid="reader-answer">{reader.answer || "(empty)"}</b>{" "}
          <span className={`badge ${reader.failure ? "off" : ok ? "ok" : reader.correct > 0 ? "plain" : "off"}`} data-testid="reader-verdict">
            {reader.failure ? `failed: ${reader.failure.kind}` : ok ? "correct" : reader.correct > 0 ? `partly correct (${fmtNum(reader.correct, 2)})` : "wrong"}
          </span>
        </dd>
        <dt>target</dt>
        <dd>{target}</dd>
        {reader.f1 !== undefined && (
          <>
            <dt>token F1</dt>
            <dd>{fmtNum(reader.f1, 3)}</dd>
          </>
        )}
        <dt>call</dt>
        <dd className="small">
          {reader.tokens.prompt.toLocaleString()} prompt + {reader.tokens.completion.toLocaleString()} answer tokens · {reader.cached ? "from the cache" : `${Math.round(reader.ms)} ms`}
          {reader.retries > 0 ? ` · ${reader.retries} ${reader.retries === 1 ? "retry" : "retries"}` : ""}
        </dd>
        {reader.failure && (
          <>
            <dt>failure</dt>
            <dd className="error-text small">{reader.failure.message}</dd>
          </>
        )}
      </dl>
      <details>
        <summary className="small">prompt as sent ({reader.prompt.length.toLocaleString()} characters)</summary>
        <pre className="mono small" style={{ whiteSpace: "pre-wrap", maxHeight: 320, overflow: "auto" }} data-testid="reader-prompt">
          {reader.prompt}
        </pre>
      </details>
    </section>
  );
}
