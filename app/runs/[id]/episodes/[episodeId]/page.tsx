"use client";
import Link from "next/link";
import { useParams } from "next/navigation";
import { useEpisode } from "../../../../../lib/hooks/useEpisode.ts";
import { useRun } from "../../../../../lib/hooks/useRun.ts";
import { EpisodeView } from "../../../../../components/EpisodeView.tsx";
import { AgentEpisodeView } from "../../../../../components/episode/AgentEpisodeView.tsx";
import { fmtNum } from "../../../../../lib/format.ts";

/** envs.sort_by_index of the run's config (the engine's default, true, until the run has loaded). */
function sortByIndexOf(config: unknown): boolean {
  const envs = (config as { envs?: { sort_by_index?: unknown } } | null | undefined)?.envs;
  return typeof envs?.sort_by_index === "boolean" ? envs.sort_by_index : true;
}

export default function EpisodePage() {
  const { id, episodeId } = useParams<{ id: string; episodeId: string }>();
  const run = useRun(id);
  const ep = useEpisode(id, episodeId);
  const e = ep.data;
  return (
    <main className="stack">
      <div className="page-head" style={{ margin: 0 }}>
        <Link href={run.data?.kind === "sweep" ? `/sweeps/${id}` : `/runs/${id}`}>← {run.data?.name ?? "run"}</Link>
        <h1>Episode {e ? e.sampleId : episodeId}</h1>
        {e && (
          <span className="muted">
            {e.phase === "agent"
              ? `agent at ${e.numChunks.toLocaleString()} chunks · answer score ${fmtNum(e.return, 2)} · coverage ${fmtNum(e.coverage, 3)}`
              : `${e.phase === "sweep" ? `sweep at ${e.numChunks.toLocaleString()} chunks` : `${e.phase} at update ${e.update} (step ${e.step})`} · coverage ${fmtNum(e.coverage, 3)} · F1 ${fmtNum(e.f1, 3)} · return ${fmtNum(e.return, 3)}`}
          </span>
        )}
      </div>
      {ep.error ? (
        <div className="form-banner">Could not load episode: {(ep.error as Error).message}</div>
      ) : !e ? (
        <div className="empty">Loading episode…</div>
      ) : e.agent ? (
        <AgentEpisodeView sample={e.agent} runId={id} episodeId={episodeId} />
      ) : e.record ? (
        <EpisodeView record={e.record} runId={id} episodeId={episodeId} sortByIndex={sortByIndexOf(run.data?.config)} />
      ) : (
        <div className="empty">This episode has no stored record.</div>
      )}
    </main>
  );
}
