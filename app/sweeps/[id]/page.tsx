"use client";
/**
 * One sweep job: its status and progress live, coverage/F1 vs context length with intervals,
 * the table, each length's episodes (opened in the replay player), and the across-lengths view.
 */
import Link from "next/link";
import { useParams } from "next/navigation";
import { useState } from "react";
import { ACTIVE_STATUSES } from "../../../lib/contracts/index.ts";
import { useAcrossLengths, useSweep } from "../../../lib/hooks/useSweeps.ts";
import { useEpisodes } from "../../../lib/hooks/useEpisodes.ts";
import { useCancelRun, useResumeRun } from "../../../lib/hooks/useRunActions.ts";
import { fmtDateTime, fmtNum } from "../../../lib/format.ts";
import { fmtTokens } from "../../../lib/analysis/sweep-series.ts";
import { BackendBadge, Progress, StatusBadge } from "../../../components/Badges.tsx";
import { SweepChart } from "../../../components/sweeps/SweepChart.tsx";
import { SweepTable } from "../../../components/sweeps/SweepTable.tsx";
import { AcrossLengths } from "../../../components/sweeps/AcrossLengths.tsx";
import { AgentTable } from "../../../components/sweeps/AgentTable.tsx";
import { confirmCancel } from "../../../lib/confirm-cancel.ts";
import { useRun } from "../../../lib/hooks/useRun.ts";

function LengthEpisodes({ sweepId, lengths, agent }: { sweepId: string; lengths: number[]; agent: boolean }) {
  const [n, setN] = useState(lengths[0]);
  // one length at a time, every sample of it (a sweep has at most 500 per length, an agent file 1000)
  const eps = useEpisodes(sweepId, { limit: 1000, phase: agent ? "agent" : "sweep", numChunks: n });
  const list = [...(eps.data ?? [])].sort((a, b) => a.id - b.id);
  return (
    <section className="panel">
      <div className="row">
        <h2 style={{ margin: 0 }}>Episodes</h2>
        <select value={n} onChange={(e) => setN(Number(e.target.value))} data-testid="sweep-episodes-length" aria-label="length">
          {lengths.map((l) => (
            <option key={l} value={l}>
              {l.toLocaleString()} chunks
            </option>
          ))}
        </select>
      </div>
      {list.length === 0 ? (
        <div className="empty">{eps.isLoading ? "Loading…" : "No episodes at this length yet."}</div>
      ) : (
        <div style={{ maxHeight: 340, overflow: "auto" }}>
          <table className="table" data-testid="sweep-episodes">
            <thead>
              <tr>
                <th>sample</th>
                <th className="num">coverage</th>
                <th className="num">F1</th>
                {agent && <th className="num">answer score</th>}
                <th />
              </tr>
            </thead>
            <tbody>
              {list.map((e) => (
                <tr key={e.id}>
                  <td className="mono">{e.sampleId}</td>
                  <td className="num">{fmtNum(e.coverage, 3)}</td>
                  <td className="num">{fmtNum(e.f1, 3)}</td>
                  {agent && <td className="num">{fmtNum(e.return, 2)}</td>}
                  <td>
                    <Link href={`/runs/${sweepId}/episodes/${e.id}`}>replay</Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

export default function SweepPage() {
  const { id } = useParams<{ id: string }>();
  const sweep = useSweep(id);
  const live = sweep.data ? ACTIVE_STATUSES.includes(sweep.data.run.status) : false;
  const across = useAcrossLengths(id, live);
  const cancel = useCancelRun();
  const resume = useResumeRun();
  const parent = useRun(sweep.data?.run.sweepOf ?? undefined); // named by its name, not its id
  if (sweep.error) return <main className="form-banner">Could not load sweep {id}: {(sweep.error as Error).message}</main>;
  if (!sweep.data) return <main className="empty">Loading sweep…</main>;
  const { run: r, spec, points } = sweep.data;
  return (
    <main className="stack" data-testid="sweep-page" data-status={r.status}>
      <div className="panel stack" style={{ gap: 8 }}>
        <div className="page-head" style={{ margin: 0 }}>
          <h1>{spec.source === "agent" ? "Agent" : "Sweep"} · {spec.checkpointLabel}</h1>
          <StatusBadge status={r.status} />
          <BackendBadge backend={r.backend} device={r.device} />
          <span className="spacer" />
          {ACTIVE_STATUSES.includes(r.status) && (
            <button type="button" className="danger" onClick={() => confirmCancel(r.name) && cancel.mutate(r.id)} disabled={cancel.isPending}>
              Cancel
            </button>
          )}
          {(r.status === "cancelled" || r.status === "failed") && (spec.source === "dashboard" || spec.agentRun) && (
            <button type="button" onClick={() => resume.mutate(r.id)} disabled={resume.isPending}>
              Resume
            </button>
          )}
        </div>
        <div className="row small">
          <Progress done={r.progressDone} total={r.progressTotal} wide />
          <span className="muted">
            {r.progressDone} / {r.progressTotal} episodes
          </span>
          {r.sweepOf && (
            <span>
              · of run{" "}
              <Link href={`/runs/${r.sweepOf}`} data-testid="sweep-of">
                {parent.data?.name ?? r.sweepOf.slice(0, 10)}
              </Link>
            </span>
          )}
          <span className="muted">
            {spec.source === "agent" ? (
              <>
                · {spec.lengths.map((l) => l.toLocaleString()).join(", ")} chunks · {spec.samples} samples per length · {spec.agentRun ? `${spec.agentRun.format} steps, at most ${spec.agentRun.maxCalls} model calls · created ${fmtDateTime(r.createdAt)}` : "uploaded"}
              </>
            ) : (
              <>
            · {spec.lengths.map((l) => l.toLocaleString()).join(", ")} chunks ({points.map((p) => fmtTokens(p.tokens)).join(", ") || "tokens measured per length"}) · {spec.samples} samples per length · Q ≥ {spec.threshold} ·{" "}
            {spec.oracleStop ? "oracle stop" : "no oracle stop"} · {spec.baselines ? "with baselines" : "no baselines"} · {spec.source !== "dashboard" ? "uploaded" : `created ${fmtDateTime(r.createdAt)}`}
              </>
            )}
          </span>
        </div>
        {r.error && <div className="form-banner">{r.error}</div>}
      </div>
      <SweepChart sweeps={[sweep.data]} />
      {sweep.data.agent ? <AgentTable summaries={sweep.data.agent} /> : <SweepTable sweep={sweep.data} />}
      {spec.lengths.length > 0 && <LengthEpisodes sweepId={r.id} lengths={[...spec.lengths].sort((a, b) => a - b)} agent={spec.source === "agent"} />}
      {across.data && <AcrossLengths sweepId={r.id} data={across.data} />}
    </main>
  );
}
