"use client";
import Link from "next/link";
import { useParams } from "next/navigation";
import { memo, useState } from "react";
import { ACTIVE_STATUSES, type CheckpointDto, type RunDetailDto } from "../../../lib/contracts/index.ts";
import { useRun } from "../../../lib/hooks/useRun.ts";
import { useRunMetrics } from "../../../lib/hooks/useRunMetrics.ts";
import { useEpisodes } from "../../../lib/hooks/useEpisodes.ts";
import { useLogs } from "../../../lib/hooks/useLogs.ts";
import { useWorkers } from "../../../lib/hooks/useWorkers.ts";
import { useRunStream } from "../../../lib/hooks/useRunStream.ts";
import { useCancelRun, usePatchRun, useResumeRun } from "../../../lib/hooks/useRunActions.ts";
import { useNow } from "../../../lib/hooks/useNow.ts";
import type { XAxis } from "../../../lib/contracts/index.ts";
import { fmtDateTime, fmtDuration, fmtNum, runSeconds } from "../../../lib/format.ts";
import { BackendBadge, Progress, StatusBadge, WorkerBadge } from "../../../components/Badges.tsx";
import { MetricChart } from "../../../components/MetricChart.tsx";
import { METRIC_PANELS as GROUPS } from "../../../lib/metric-panels.ts";
import { LogTail } from "../../../components/LogTail.tsx";
import { ConfigView } from "../../../components/ConfigView.tsx";
import { SweepSection } from "../../../components/sweeps/SweepSection.tsx";
import { ExportMenu } from "../../../components/ExportMenu.tsx";
import { ExecutorPanel } from "../../../components/ExecutorPanel.tsx";
import { confirmCancel } from "../../../lib/confirm-cancel.ts";

const METRIC_KEYS = GROUPS.flatMap((g) => g.series.map((s) => s.key));
const CHART_WIDTH = 800;

function Tags({ run }: { run: RunDetailDto }) {
  const patch = usePatchRun(run.id);
  const [text, setText] = useState("");
  const save = (tags: string[]) => patch.mutate({ tags: [...new Set(tags)] });
  return (
    <span className="row" style={{ gap: 6 }} data-testid="run-tags">
      <span className="chips">
        {run.tags.map((t) => (
          <span key={t} className="chip">
            {t}
            <button type="button" aria-label={`remove tag ${t}`} onClick={() => save(run.tags.filter((x) => x !== t))}>
              ×
            </button>
          </span>
        ))}
      </span>
      <input
        value={text}
        placeholder="add tag"
        style={{ width: 100, padding: "2px 6px" }}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && text.trim()) {
            save([...run.tags, text.trim()]);
            setText("");
          }
        }}
      />
    </span>
  );
}

function Header({ run }: { run: RunDetailDto }) {
  const cancel = useCancelRun();
  const resume = useResumeRun();
  const workers = useWorkers();
  const now = useNow(1_000);
  const worker = workers.data?.find((w) => w.id === run.workerId);
  const active = ACTIVE_STATUSES.includes(run.status);
  const err = (cancel.error ?? resume.error) as Error | null;
  return (
    <div className="panel stack" style={{ gap: 10 }}>
      <div className="page-head" style={{ margin: 0 }}>
        <h1 data-testid="run-name">{run.name}</h1>
        <StatusBadge status={run.status} />
        <BackendBadge backend={run.backend} device={run.device} />
        <WorkerBadge name={run.workerName ?? worker?.name ?? null} online={worker ? worker.status !== "offline" : run.workerId ? false : null} />
        {run.attempt > 1 && <span className="badge plain">attempt {run.attempt}</span>}
        <span className="spacer" />
        {active && (
          <button type="button" className="danger" onClick={() => confirmCancel(run.name) && cancel.mutate(run.id)} disabled={cancel.isPending} data-testid="cancel-button">
            {cancel.isPending ? "Cancelling…" : "Cancel"}
          </button>
        )}
        {(run.status === "cancelled" || run.status === "failed") && (
          <button type="button" onClick={() => resume.mutate(run.id)} disabled={resume.isPending} data-testid="resume-button">
            {resume.isPending ? "Resuming…" : "Resume"}
          </button>
        )}
        <ExportMenu runId={run.id} />
        <Link className="button" href={`/runs/new?clone=${run.id}`} data-testid="clone-link">
          Clone
        </Link>
      </div>
      <div className="row small">
        {run.progressTotal > 0 ? (
          <>
            <Progress done={run.progressDone} total={run.progressTotal} wide />
            <span className="muted num" data-testid="run-progress">
              {run.progressDone} / {run.progressTotal} updates
            </span>
          </>
        ) : (
          <span className="muted" data-testid="run-progress">
            {run.kind === "imported" ? "imported from files" : run.status === "queued" ? (run.executor ? "waiting for its Slurm job" : "waiting for a worker") : "no progress reported yet"}
          </span>
        )}
        <span className="muted">·</span>
        <span className="mono">
          {run.envName}/{run.task}
        </span>
        {run.preset && <span className="muted">preset {run.preset}</span>}
        <span className="muted" data-testid="header-queue">· queue {run.queue}</span>
        <span className="muted">· created {fmtDateTime(run.createdAt)}{run.createdBy ? ` by ${run.createdBy}` : ""}</span>
        <span className="muted">· duration {fmtDuration(runSeconds(run, now))}</span>
        {run.parentId && (
          <span className="muted">
            · cloned from <Link href={`/runs/${run.parentId}`}>{run.parentId.slice(0, 8)}</Link>
          </span>
        )}
        <Tags run={run} />
      </div>
      {run.error && (
        <div className="form-banner" data-testid="run-error">
          {run.error}
        </div>
      )}
      {err && <div className="form-banner">{err.message}</div>}
    </div>
  );
}

// The run page re-renders on every live batch (progress); the parts below only when their own data changes.
const Episodes = memo(function Episodes({ runId, phase = "eval" }: { runId: string; phase?: "eval" | "playground" }) {
  const eps = useEpisodes(runId, { limit: 24, phase });
  const list = eps.data ?? [];
  // saved playground episodes (components/playground) get their own list once there are some
  if (phase === "playground" && list.length === 0) return null;
  return (
    <section className="panel" data-testid={`episodes-${phase}`}>
      <h2>{phase === "eval" ? "Latest eval episodes" : "Playground episodes"}</h2>
      {list.length === 0 ? (
        <div className="empty">{eps.isLoading ? "Loading…" : "No evaluation episodes yet."}</div>
      ) : (
        <div style={{ maxHeight: 340, overflow: "auto" }}>
          <table className="table" data-testid="episodes-table">
            <thead>
              <tr>
                <th className="num">update</th>
                <th>sample</th>
                <th className="num">coverage</th>
                <th className="num">F1</th>
                <th className="num">return</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.map((e) => (
                <tr key={`${e.phase}:${e.update}:${e.sampleId}`}>
                  <td className="num">{e.update}</td>
                  <td className="mono" title={e.record?.question}>
                    {e.sampleId}
                  </td>
                  <td className="num">{fmtNum(e.coverage, 3)}</td>
                  <td className="num">{fmtNum(e.f1, 3)}</td>
                  <td className="num">{fmtNum(e.return, 3)}</td>
                  <td>
                    {e.id > 0 ? (
                      <Link href={`/runs/${runId}/episodes/${e.id}`} data-testid="episode-link">
                        open
                      </Link>
                    ) : (
                      <span className="muted small">saving…</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
});

/**
 * The run's checkpoint folders ("last", "best"), each as its newest save: every eval writes "last"
 * (and "best" when it improved), and listing every save read like several best checkpoints. The
 * history of saves is one click away.
 */
const Checkpoints = memo(function Checkpoints({ runId, checkpoints, resumeFrom }: { runId: string; checkpoints: CheckpointDto[]; resumeFrom: string | null }) {
  const [history, setHistory] = useState(false);
  const sorted = [...checkpoints].sort((a, b) => b.update - a.update || Number(b.best) - Number(a.best));
  const saves = new Map<string, number>();
  for (const c of sorted) saves.set(c.path, (saves.get(c.path) ?? 0) + 1);
  const current = sorted.filter((c, i) => sorted.findIndex((d) => d.path === c.path) === i);
  const list = history ? sorted : current;
  return (
    <section className="panel">
      <h2>Checkpoints</h2>
      {list.length === 0 ? (
        <div className="empty">No checkpoints yet.</div>
      ) : (
        <table className="table" data-testid="checkpoints-table" data-view={history ? "history" : "current"}>
          <thead>
            <tr>
              <th>name</th>
              <th className="num">update</th>
              <th className="num">step</th>
              <th className="num">eval return</th>
              <th>saved</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.map((c, i) => {
              const name = c.path.split(/[\\/]/).pop();
              const replaced = history && sorted.findIndex((d) => d.path === c.path) !== i;
              return (
                <tr key={`${c.path}:${c.update}:${i}`} data-name={name} className={replaced ? "muted" : undefined}>
                  <td className="mono" title={c.path}>
                    {name}
                    {c.best && !replaced ? <span title="saved at the best eval return so far"> ★</span> : ""}
                    {replaced ? " (overwritten)" : !history && (saves.get(c.path) ?? 0) > 1 ? <span className="muted"> · saved {saves.get(c.path)}×</span> : null}
                  </td>
                  <td className="num">{c.update}</td>
                  <td className="num">{c.step}</td>
                  <td className="num">{fmtNum(c.evalReturn, 3)}</td>
                  <td className="muted">{fmtDateTime(c.createdAt)}</td>
                  <td>
                    {!replaced && (name === "best" || name === "last") && (
                      <Link href={`/playground?run=${encodeURIComponent(runId)}&checkpoint=${name}`} className="small" data-testid="try-playground">
                        Try in playground
                      </Link>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {sorted.length > current.length && (
        <button type="button" className="link small" onClick={() => setHistory(!history)} data-testid="checkpoint-history">
          {history ? "show current checkpoints" : `show every save (${sorted.length})`}
        </button>
      )}
      {resumeFrom && <p className="muted small">resumes from {resumeFrom}</p>}
    </section>
  );
});

const Config = memo(function Config({ config }: { config: unknown }) {
  return (
    <details className="panel">
      <summary>
        <b>Config</b>
      </summary>
      <div style={{ marginTop: 10 }}>
        <ConfigView config={config} />
      </div>
    </details>
  );
});

export default function RunPage() {
  const { id } = useParams<{ id: string }>();
  const run = useRun(id);
  const [x, setX] = useState<XAxis>("step");
  const [smoothing, setSmoothing] = useState(0.6);
  const metrics = useRunMetrics(id, { keys: METRIC_KEYS, width: CHART_WIDTH, x });
  const logs = useLogs(id, 300);
  const stream = useRunStream(id);

  if (run.error) {
    return (
      <main>
        <div className="form-banner">Could not load run {id}: {(run.error as Error).message}</div>
      </main>
    );
  }
  if (!run.data) return <main className="empty">Loading run…</main>;
  const r = run.data;
  if (r.kind === "sweep") {
    return (
      <main className="empty">
        {r.name} is a sweep job: <Link href={`/sweeps/${r.id}`}>open the sweep</Link>
      </main>
    );
  }
  return (
    <main className="stack" data-testid="run-page" data-run-id={r.id} data-status={r.status}>
      <Header run={r} />
      {r.executor && <ExecutorPanel run={r} />}
      <div className="chart-toolbar panel">
        <label>
          smoothing
          <input type="range" min={0} max={0.99} step={0.01} value={smoothing} onChange={(e) => setSmoothing(Number(e.target.value))} data-testid="smoothing" />
          <span className="mono" style={{ width: 32 }}>
            {smoothing.toFixed(2)}
          </span>
        </label>
        <label>
          x axis
          <select value={x} onChange={(e) => setX(e.target.value as XAxis)} data-testid="x-axis">
            <option value="step">step</option>
            <option value="wall">wall time</option>
          </select>
        </label>
        {ACTIVE_STATUSES.includes(r.status) && (
          <span className={`badge ${stream.connected ? "ok" : "off"}`} data-testid="stream-badge">
            {stream.connected ? "streaming" : "connecting…"}
          </span>
        )}
        {metrics.isFetching && <span className="muted small">loading series…</span>}
        {metrics.error && <span className="error-text small">{(metrics.error as Error).message}</span>}
      </div>
      <div className="charts">
        {GROUPS.filter((g) => !g.ifData || g.series.some((s) => (metrics.data?.series[s.key]?.length ?? 0) > 0)).map((g) => (
          <MetricChart key={g.id} testId={`chart-${g.id}`} title={g.title} series={g.series} data={metrics.data?.series} x={x} smoothing={smoothing} buckets={CHART_WIDTH} />
        ))}
      </div>
      <SweepSection run={r} />
      <div className="grid2">
        <Episodes runId={r.id} />
        <Episodes runId={r.id} phase="playground" />
        <Checkpoints runId={r.id} checkpoints={r.checkpoints} resumeFrom={r.resumeFrom} />
      </div>
      <section className="panel">
        <h2>Log</h2>
        <LogTail lines={logs.data ?? []} />
      </section>
      <Config config={r.config} />
      {r.notes && (
        <section className="panel">
          <h2>Notes</h2>
          <p style={{ whiteSpace: "pre-wrap", margin: 0 }}>{r.notes}</p>
        </section>
      )}
    </main>
  );
}
