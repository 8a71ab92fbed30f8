"use client";
/**
 * The run page's "where it runs" panel: its queue and resource request and, on a Slurm queue, the
 * current job (id, state in Slurm's words, node, elapsed time) and the run's earlier jobs. The
 * current job's state arrives live with the run's row ("runs:state"); its times and the earlier
 * jobs come with the run's detail, fetched again (with the log, where the job's output goes) when
 * the job, its state or its output changes.
 */
import { useEffect, useRef } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { RESOURCE_FIELDS, type RunDetailDto } from "../lib/contracts/index.ts";
import { fmtDateTime, fmtDuration } from "../lib/format.ts";
import { jobSeconds, jobStateText, jobStateTone } from "../lib/job-state.ts";
import { qk } from "../lib/hooks/keys.ts";
import { useNow } from "../lib/hooks/useNow.ts";

function JobState({ state, node, reason }: { state: string | null; node: string | null; reason: string | null }) {
  return (
    <span className={`badge status-${jobStateTone(state)}`} data-testid="job-state" data-state={state ?? ""}>
      <span className="dot" />
      {jobStateText({ state, node, reason })}
    </span>
  );
}

export function ExecutorPanel({ run }: { run: RunDetailDto }) {
  const qc = useQueryClient();
  const now = useNow(1_000);
  const ex = run.executor;
  // the job's times and the earlier jobs are the detail's: read it again when the job moves; the
  // log (where the job's output and how it ended go) when it moves or wrote more
  const job = ex ? `${ex.jobId}|${ex.state}|${ex.jobs}` : "";
  const version = ex ? `${job}|${ex.output}` : "";
  const seen = useRef({ job, version });
  useEffect(() => {
    if (seen.current.version === version) return;
    if (seen.current.job !== job) void qc.invalidateQueries({ queryKey: qk.run(run.id), exact: true });
    seen.current = { job, version };
    void qc.invalidateQueries({ queryKey: qk.logsAll(run.id) });
  }, [qc, run.id, job, version]);

  const asked = RESOURCE_FIELDS.filter((f) => run.resources[f.key] !== undefined);
  const current = ex && run.jobs[0]?.jobId === ex.jobId ? run.jobs[0] : null;
  const earlier = ex ? run.jobs.filter((j) => j !== current) : [];
  return (
    <section className="panel" data-testid="executor-panel" data-queue={run.queue}>
      <h2>Where it runs</h2>
      <div className="row small" style={{ flexWrap: "wrap" }}>
        <span>
          queue <b data-testid="run-queue">{run.queue}</b>
        </span>
        <span className="muted">{ex ? "· a Slurm job per attempt" : "· taken by a connected worker"}</span>
        {ex && asked.length > 0 && (
          <span data-testid="run-resources">
            ·{" "}
            {asked.map((f, i) => (
              <span key={f.key}>
                {i > 0 && ", "}
                {f.label} <b className="num">{String(run.resources[f.key])}</b>
              </span>
            ))}
          </span>
        )}
      </div>
      {ex && (
        <div className="row small" style={{ marginTop: 8, flexWrap: "wrap" }} data-testid="current-job">
          <span>
            job <b className="mono" data-testid="job-id">{ex.jobId ?? "—"}</b>
          </span>
          <JobState state={ex.state} node={ex.node} reason={ex.reason} />
          <span className="muted">node</span> <span className="mono" data-testid="job-node">{ex.node ?? "—"}</span>
          <span className="muted">elapsed</span> <span className="num" data-testid="job-elapsed">{fmtDuration(current ? jobSeconds(current, now) : null)}</span>
          {ex.jobs > 1 && <span className="badge plain">job {ex.jobs} of this run</span>}
        </div>
      )}
      {earlier.length > 0 && (
        <table className="table" data-testid="earlier-jobs" style={{ marginTop: 8 }}>
          <thead>
            <tr>
              <th className="num">#</th>
              <th>job</th>
              <th>state</th>
              <th>submitted</th>
              <th className="num">ran</th>
            </tr>
          </thead>
          <tbody>
            {earlier.map((j) => (
              <tr key={j.number} data-job={j.jobId ?? ""}>
                <td className="num">{j.number}</td>
                <td className="mono">{j.jobId ?? "—"}</td>
                <td>
                  <JobState state={j.state} node={j.node} reason={j.reason} />
                </td>
                <td className="muted">{fmtDateTime(j.submittedAt)}</td>
                <td className="num">{fmtDuration(jobSeconds(j, now))}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
