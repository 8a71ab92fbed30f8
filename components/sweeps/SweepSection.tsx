"use client";
/**
 * The run page's Sweep section: start a sweep of one of the run's checkpoints, upload a CLI
 * sweep, and see every sweep of the run — status and progress live, coverage/F1 vs context length
 * with several sweeps overlaid (other checkpoints, thresholds), and the figures as a table.
 */
import Link from "next/link";
import { useState } from "react";
import { ACTIVE_STATUSES, sweepReaderLabel, type RunDetailDto, type SweepDto } from "../../lib/contracts/index.ts";
import { useRunSweeps } from "../../lib/hooks/useSweeps.ts";
import { useCancelRun, useResumeRun } from "../../lib/hooks/useRunActions.ts";
import { toggled } from "../../lib/selection.ts";
import { Progress, StatusBadge } from "../Badges.tsx";
import { SWEEP_COLORS, SweepChart } from "./SweepChart.tsx";
import { SweepTable } from "./SweepTable.tsx";
import { SweepForm } from "./SweepForm.tsx";
import { SweepUpload } from "./SweepUpload.tsx";
import { AgentUpload } from "./AgentUpload.tsx";
import { AgentTable } from "./AgentTable.tsx";
import { AgentForm } from "./AgentForm.tsx";
import { confirmCancel } from "../../lib/confirm-cancel.ts";

function SweepRow({ s, color, shown, onToggle }: { s: SweepDto; color: string; shown: boolean; onToggle: () => void }) {
  const cancel = useCancelRun();
  const resume = useResumeRun();
  const r = s.run;
  return (
    <tr data-testid="sweep-item" data-sweep-id={r.id} data-status={r.status}>
      <td>
        <input type="checkbox" checked={shown} onChange={onToggle} aria-label="overlay this sweep" data-testid="sweep-overlay" />
      </td>
      <td>
        <span className="swatch" style={{ background: color, width: 12, height: 3, display: "inline-block", marginRight: 6 }} />
        <Link href={`/sweeps/${r.id}`}>{s.spec.checkpointLabel}</Link>
      </td>
      <td className="small">
        {s.spec.source === "agent" ? (
          `${s.spec.lengths.map((l) => l.toLocaleString()).join(", ")} chunks · ${s.spec.samples}/length · uploaded agent evaluation`
        ) : (
          <>
        {s.spec.lengths.map((l) => l.toLocaleString()).join(", ")} chunks · {s.spec.samples}/length · Q ≥ {s.spec.threshold}
        {s.spec.oracleStop ? " · oracle stop" : ""}
        {s.spec.baselines ? "" : " · no baselines"}
        {s.spec.reader ? ` · reader ${sweepReaderLabel(s.spec.reader)}` : ""}
          </>
        )}
      </td>
      <td>
        <StatusBadge status={r.status} />
      </td>
      <td>
        <Progress done={r.progressDone} total={r.progressTotal} />
      </td>
      <td>
        {ACTIVE_STATUSES.includes(r.status) && (
          <button type="button" className="link small" onClick={() => confirmCancel(r.name ?? r.id) && cancel.mutate(r.id)} disabled={cancel.isPending}>
            cancel
          </button>
        )}
        {(r.status === "cancelled" || r.status === "failed") && (s.spec.source === "dashboard" || s.spec.agentRun) && (
          <button type="button" className="link small" onClick={() => resume.mutate(r.id)} disabled={resume.isPending} title="runs the lengths not finished yet">
            resume
          </button>
        )}
        {r.error && <span className="error-text small" title={r.error}> {r.error.slice(0, 80)}</span>}
      </td>
    </tr>
  );
}

export function SweepSection({ run }: { run: RunDetailDto }) {
  const sweeps = useRunSweeps(run.id);
  const [open, setOpen] = useState<"form" | "upload" | "agent" | "run-agent" | null>(null);
  const [hidden, setHidden] = useState<Set<string>>(new Set());
  const list = sweeps.data?.sweeps ?? [];
  const shown = list.filter((s) => !hidden.has(s.run.id));
  // the latest Q-RAG sweep's table, and the latest agent evaluation's beside it
  const latest = shown.filter((s) => s.spec.source !== "agent").at(-1);
  const latestAgent = shown.filter((s) => s.spec.source === "agent").at(-1);
  const canSweep = run.envName === "babilong" && run.checkpoints.length > 0 && run.kind !== "sweep";
  const canAgent = run.envName === "babilong" && run.kind !== "sweep";
  const toggle = (id: string) => setHidden((old) => toggled(old, id));
  return (
    <section className="panel stack" style={{ gap: 12 }} data-testid="sweep-section">
      <div className="row">
        <h2 style={{ margin: 0 }}>Context-length sweeps</h2>
        <span className="spacer" style={{ flex: 1 }} />
        <button type="button" onClick={() => setOpen(open === "form" ? null : "form")} disabled={!canSweep} title={canSweep ? "evaluate a checkpoint at growing haystack sizes" : run.envName !== "babilong" ? "sweeps need a BabiLong run" : "needs a checkpoint"} data-testid="sweep-button">
          Sweep…
        </button>
        <button type="button" onClick={() => setOpen(open === "upload" ? null : "upload")} data-testid="sweep-upload-button">
          Upload CLI sweep…
        </button>
        <button type="button" onClick={() => setOpen(open === "run-agent" ? null : "run-agent")} disabled={!canAgent} title={canAgent ? "the R3-style agent on this run's task, run by a worker" : "the agent runs on BabiLong runs"} data-testid="agent-run-button">
          Run agent…
        </button>
        <button type="button" onClick={() => setOpen(open === "agent" ? null : "agent")} data-testid="agent-upload-button" title="a `qrag agent --out` file: the R3-style agent beside Q-RAG">
          Upload agent evaluation…
        </button>
      </div>
      {open === "form" && <SweepForm runId={run.id} checkpoints={run.checkpoints} queue={run.queue} onDone={() => setOpen(null)} />}
      {open === "upload" && <SweepUpload runId={run.id} onDone={() => setOpen(null)} />}
      {open === "run-agent" && <AgentForm runId={run.id} hasCheckpoint={run.checkpoints.length > 0} onDone={() => setOpen(null)} />}
      {open === "agent" && <AgentUpload runId={run.id} onDone={() => setOpen(null)} />}
      {list.length === 0 ? (
        <div className="empty">{sweeps.isLoading ? "Loading…" : "No sweeps yet: evaluate a checkpoint at 1K … 1M tokens with “Sweep…”."}</div>
      ) : (
        <>
          <div className="table-wrap">
            <table className="table">
              <tbody>
                {list.map((s, i) => (
                  <SweepRow key={s.run.id} s={s} color={SWEEP_COLORS[i % SWEEP_COLORS.length]} shown={!hidden.has(s.run.id)} onToggle={() => toggle(s.run.id)} />
                ))}
              </tbody>
            </table>
          </div>
          <SweepChart sweeps={shown} />
          {latest && (
            <>
              <h3 style={{ margin: 0 }}>
                {latest.spec.checkpointLabel} <Link className="small" href={`/sweeps/${latest.run.id}`}>episodes & across lengths →</Link>
              </h3>
              <SweepTable sweep={latest} />
            </>
          )}
          {latestAgent?.agent && (
            <>
              <h3 style={{ margin: 0 }}>
                {latestAgent.spec.checkpointLabel} <Link className="small" href={`/sweeps/${latestAgent.run.id}`}>agent episodes →</Link>
              </h3>
              <AgentTable summaries={latestAgent.agent} />
            </>
          )}
        </>
      )}
    </section>
  );
}
