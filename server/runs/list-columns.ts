/**
 * The runs table's chosen columns and filter (lib/contracts/run-columns.ts) against the database:
 * config values come from each run's stored config, `last.` from its summary (the latest value of
 * the summary keys) or its latest point, and `best.` / `min.` / `max.` from one grouped query over
 * the metric points of the keys named.
 */
import type { CellValue, RunColumn, RunSummary } from "../../lib/contracts/index.ts";
import { configCell, lowerIsBetter } from "../../lib/contracts/index.ts";
import type { DbHandle } from "../db/client.ts";
import { parseJson } from "./dto.ts";

/** Per run and metric key: the least, greatest and latest value. */
export type MetricStats = Map<string, Map<string, { min: number; max: number; last?: number }>>;

/** The stats the columns need, for these runs (null: every run that has the keys). */
export async function metricStats(h: DbHandle, runIds: readonly string[] | null, columns: readonly RunColumn[]): Promise<MetricStats> {
  const keys = [...new Set(columns.flatMap((c) => (c.kind === "metric" ? [c.metric] : [])))];
  const out: MetricStats = new Map();
  if (keys.length === 0 || runIds?.length === 0) return out;
  const where = { key: { in: keys }, ...(runIds ? { runId: { in: [...runIds] } } : {}) };
  const groups = await h.prisma.metricPoint.groupBy({ by: ["runId", "key"], where, _min: { value: true }, _max: { value: true, step: true } });
  for (const g of groups) {
    if (g._min.value === null || g._max.value === null) continue;
    let m = out.get(g.runId);
    if (!m) out.set(g.runId, (m = new Map()));
    m.set(g.key, { min: g._min.value, max: g._max.value });
  }
  // the latest value of keys the summary does not keep (last.eval_precision, …): one read per key at its last step
  const lastKeys = [...new Set(columns.flatMap((c) => (c.kind === "metric" && c.agg === "last" ? [c.metric] : [])))];
  if (lastKeys.length) {
    const lastSteps = groups.filter((g) => lastKeys.includes(g.key as never) && g._max.step !== null).map((g) => ({ runId: g.runId, key: g.key, step: g._max.step! }));
    for (let i = 0; i < lastSteps.length; i += 500) {
      const rows = await h.prisma.metricPoint.findMany({ where: { OR: lastSteps.slice(i, i + 500) }, select: { runId: true, key: true, value: true } });
      for (const r of rows) {
        const s = out.get(r.runId)?.get(r.key);
        if (s) s.last = r.value;
      }
    }
  }
  return out;
}

/** A run's value in a column. */
export function cellOf(c: RunColumn, run: { id: string; config: unknown; summary: RunSummary }, stats: MetricStats): CellValue | undefined {
  if (c.kind === "config") return configCell(run.config, c.path);
  const s = stats.get(run.id)?.get(c.metric);
  switch (c.agg) {
    case "last":
      return (run.summary as Record<string, number | undefined>)[c.metric] ?? s?.last;
    case "min":
      return s?.min;
    case "max":
      return s?.max;
    case "best":
      return s ? (lowerIsBetter(c.metric) ? s.min : s.max) : undefined;
  }
}

/** The runs' stored config and summary, parsed. */
export const parsedRun = (r: { id: string; config: string; summary: string }) => ({ id: r.id, config: parseJson<unknown>(r.config, {}), summary: parseJson<RunSummary>(r.summary, {}) });
