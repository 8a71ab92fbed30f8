"use client";
/**
 * Compare view: coverage/F1 vs context length of several runs on one chart — each run's latest
 * sweep with points, and its latest uploaded agent evaluation (one colour per sweep). Shown only when some compared run has been swept.
 */
import { useQueries } from "@tanstack/react-query";
import { apiGet } from "../../lib/api.ts";
import type { SweepDto, SweepListDto } from "../../lib/contracts/index.ts";
import { sweepKeys } from "../../lib/hooks/useSweeps.ts";
import { SweepChart } from "./SweepChart.tsx";

/** Runs whose sweeps are fetched (one request each). */
const MAX_RUNS = 24;

export function SweepOverlay({ runs }: { runs: { id: string; name: string }[] }) {
  const shown = runs.slice(0, MAX_RUNS);
  const results = useQueries({
    queries: shown.map((r) => ({
      queryKey: sweepKeys.ofRun(r.id),
      queryFn: ({ signal }: { signal: AbortSignal }) => apiGet<SweepListDto>(`/api/runs/${encodeURIComponent(r.id)}/sweeps`, signal),
      staleTime: 10_000,
    })),
  });
  const names = new Map<string, string>();
  const sweeps: SweepDto[] = [];
  shown.forEach((r, i) => {
    const newest = [...(results[i]?.data?.sweeps ?? [])].reverse();
    for (const latest of [newest.find((s) => s.points.length > 0), newest.find((s) => (s.agent?.length ?? 0) > 0)]) {
      if (!latest) continue;
      names.set(latest.run.id, r.name);
      sweeps.push(latest);
    }
  });
  if (!sweeps.length) return null;
  return (
    <section className="stack" style={{ gap: 6 }} data-testid="sweep-overlay" data-sweeps={sweeps.length}>
      <SweepChart sweeps={sweeps} labelOf={(s) => (s.spec.source === "agent" ? (names.get(s.run.id) ?? s.run.id) : `${names.get(s.run.id) ?? s.run.id} (${s.spec.checkpointLabel})`)} />
      {runs.length > MAX_RUNS && <p className="muted small">sweeps of the first {MAX_RUNS} runs shown</p>}
    </section>
  );
}
