"use client";
/**
 * The playground (issue 28 item 8): choose a run and its "best" or "last" checkpoint, paste or
 * upload a document (read here, in the browser), ask a question (or load a test sample of the
 * run's dataset and edit it), and watch the greedy agent retrieve step by step in the replay
 * player. Nothing is stored until "Save as episode". Every text the user or the model wrote is
 * rendered as text; sizes are checked here first and again by the server (400 naming the field).
 */
import Link from "next/link";
import { useState } from "react";
import { apiGet, apiPost, HttpError } from "../../lib/api.ts";
import { PLAYGROUND_LIMITS as L, type PlaygroundCheckpoint, type PlaygroundResultDto, type PlaygroundSampleDto, type PlaygroundSavedDto } from "../../lib/contracts/index.ts";
import { useRun } from "../../lib/hooks/useRun.ts";
import { useRuns } from "../../lib/hooks/useRuns.ts";
import { EpisodeView } from "../EpisodeView.tsx";

const bytes = (s: string) => new TextEncoder().encode(s).length;

function sortByIndexOf(config: unknown): boolean {
  const envs = (config as { envs?: { sort_by_index?: unknown } } | null | undefined)?.envs;
  return typeof envs?.sort_by_index === "boolean" ? envs.sort_by_index : true;
}

export function Playground({ initialRun, initialCheckpoint }: { initialRun: string; initialCheckpoint: PlaygroundCheckpoint }) {
  const runs = useRuns({ limit: 200, sort: "createdAt", order: "desc" });
  const [runId, setRunId] = useState(initialRun);
  const run = useRun(runId || undefined);
  const [checkpoint, setCheckpoint] = useState<PlaygroundCheckpoint>(initialCheckpoint);
  const [document, setDocument] = useState("");
  const [question, setQuestion] = useState("");
  const [answer, setAnswer] = useState("");
  const [gold, setGold] = useState<string[]>([]);
  const [sampleIndex, setSampleIndex] = useState(0);
  const [busy, setBusy] = useState<"" | "sample" | "run" | "save">("");
  const [error, setError] = useState<{ message: string; fields: Record<string, string> } | null>(null);
  const [result, setResult] = useState<PlaygroundResultDto | null>(null);
  const [saved, setSaved] = useState<PlaygroundSavedDto | null>(null);

  const have = new Set((run.data?.checkpoints ?? []).map((c) => (c.best ? "best" : "last")));
  const local: Record<string, string> = {};
  if (bytes(document) > L.documentBytes) local.document = `at most ${L.documentBytes / 1000} KB (UTF-8)`;
  if (bytes(question) > L.questionBytes) local.question = `at most ${L.questionBytes} bytes`;
  const fields = { ...(error?.fields ?? {}), ...local };
  const ready = !!runId && have.has(checkpoint) && document.trim() !== "" && question.trim() !== "" && Object.keys(local).length === 0;

  const fail = (e: unknown) => setError({ message: (e as Error).message, fields: e instanceof HttpError ? e.fieldErrors : {} });
  const body = () => ({ checkpoint, document, question, ...(answer ? { answer } : {}), ...(gold.length ? { gold } : {}) });
  const act = async (what: "sample" | "run" | "save", fn: () => Promise<void>) => {
    setBusy(what);
    setError(null);
    try {
      await fn();
    } catch (e) {
      fail(e);
    } finally {
      setBusy("");
    }
  };
  const loadSample = () =>
    act("sample", async () => {
      const s = await apiGet<PlaygroundSampleDto>(`/api/runs/${encodeURIComponent(runId)}/playground/sample?index=${sampleIndex}`);
      setDocument(s.document);
      setQuestion(s.question);
      setAnswer(s.answer);
      setGold(s.gold);
    });
  const play = () =>
    act("run", async () => {
      setSaved(null);
      setResult(await apiPost<PlaygroundResultDto>(`/api/runs/${encodeURIComponent(runId)}/playground`, body()));
    });
  const save = () => act("save", async () => setSaved(await apiPost<PlaygroundSavedDto>(`/api/runs/${encodeURIComponent(runId)}/playground/episodes`, body())));
  const upload = async (f: File | undefined) => {
    if (!f) return;
    if (f.size > L.documentBytes) return setError({ message: "file too large", fields: { document: `the file has ${Math.round(f.size / 1000)} KB; at most ${L.documentBytes / 1000} KB` } });
    setDocument(await f.text());
  };

  const choices = (runs.data?.runs ?? []).filter((r) => r.kind !== "sweep");
  return (
    <div className="stack" data-testid="playground">
      <section className="panel stack">
        <div className="row" style={{ gap: 12, flexWrap: "wrap" }}>
          <label className="row small">
            run
            <select value={runId} onChange={(e) => (setRunId(e.target.value), setResult(null), setSaved(null))} data-testid="pg-run">
              <option value="">choose a run…</option>
              {runId && !choices.some((r) => r.id === runId) && <option value={runId}>{runId}</option>}
              {choices.map((r) => (
                <option key={r.id} value={r.id}>
                  {r.name} ({r.id})
                </option>
              ))}
            </select>
          </label>
          <label className="row small">
            checkpoint
            <select value={checkpoint} onChange={(e) => setCheckpoint(e.target.value as PlaygroundCheckpoint)} data-testid="pg-checkpoint">
              {(["best", "last"] as const).map((c) => (
                <option key={c} value={c} disabled={run.data !== undefined && !have.has(c)}>
                  {c}
                  {run.data && !have.has(c) ? " (none yet)" : ""}
                </option>
              ))}
            </select>
          </label>
          <span className="row small">
            <label className="row">
              sample
              <input type="number" min={0} max={L.sampleIndex} value={sampleIndex} onChange={(e) => setSampleIndex(Math.max(0, Math.min(L.sampleIndex, Math.floor(Number(e.target.value) || 0))))} style={{ width: 80 }} data-testid="pg-sample-index" />
            </label>
            <button type="button" disabled={!runId || busy !== ""} onClick={loadSample} data-testid="pg-load-sample">
              {busy === "sample" ? "Loading…" : "Load a benchmark sample"}
            </button>
          </span>
        </div>
        {fields.checkpoint && <p className="field-error">{fields.checkpoint}</p>}
        <div className="field">
          <label className="row small" htmlFor="pg-document">
            <b>Document</b>
            <span className="muted">
              {bytes(document).toLocaleString()} / {L.documentBytes.toLocaleString()} bytes · split into sentences as the datasets are (a line break ends one)
            </span>
            <input type="file" accept=".txt,text/plain" onChange={(e) => void upload(e.target.files?.[0])} data-testid="pg-upload" />
          </label>
          <textarea id="pg-document" value={document} onChange={(e) => setDocument(e.target.value)} rows={10} style={{ width: "100%", fontFamily: "inherit" }} data-testid="pg-document" />
          {fields.document && <p className="field-error" role="alert" data-testid="pg-error-document">{fields.document}</p>}
        </div>
        <div className="field">
          <label className="small" htmlFor="pg-question">
            <b>Question</b>
          </label>
          <input id="pg-question" value={question} onChange={(e) => setQuestion(e.target.value)} style={{ width: "100%" }} data-testid="pg-question" />
          {fields.question && <p className="field-error" role="alert" data-testid="pg-error-question">{fields.question}</p>}
        </div>
        {gold.length > 0 && (
          <p className="small muted" data-testid="pg-gold">
            {gold.length} gold fact{gold.length > 1 ? "s" : ""} from the sample (marked where the document still holds them{answer ? `; answer “${answer}”` : ""}){" "}
            <button type="button" className="link" onClick={() => (setGold([]), setAnswer(""))}>
              clear
            </button>
          </p>
        )}
        <div className="row">
          <button type="button" className="primary" disabled={!ready || busy !== ""} onClick={play} data-testid="pg-run-button">
            {busy === "run" ? "Retrieving…" : "Run"}
          </button>
          {result && (
            <button type="button" disabled={busy !== "" || saved !== null} onClick={save} data-testid="pg-save">
              {busy === "save" ? "Saving…" : saved ? "Saved" : "Save as episode"}
            </button>
          )}
          {saved && (
            <Link href={`/runs/${encodeURIComponent(saved.runId)}/episodes/${saved.episodeId}`} data-testid="pg-saved-link">
              open the saved episode
            </Link>
          )}
          {result && (
            <span className="muted small" data-testid="pg-latency">
              {result.record.num_chunks.toLocaleString()} chunks · {result.record.text_len?.toLocaleString() ?? "?"} tokens · {checkpoint} @ update {result.checkpoint.update} · answered in {Math.round(result.ms.total)} ms (episode {Math.round(result.ms.engine)} ms, {result.warm ? "warm" : "cold: checkpoint loaded"}) · not stored
            </span>
          )}
        </div>
        {error && (
          <div className="form-banner" role="alert" data-testid="pg-error">
            {error.message}
          </div>
        )}
      </section>
      {result && <EpisodeView key={`${result.ms.total}`} record={result.record} runId={runId} episodeId="" sortByIndex={sortByIndexOf(run.data?.config)} />}
    </div>
  );
}
