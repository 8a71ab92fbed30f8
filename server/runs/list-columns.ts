/**
 * The runs table's chosen columns and filter (lib/contracts/run-columns.ts) against the database:
 * config values come from each run's stored config, `last.` from its summary (the latest value of
 * the summary keys) or its latest point, and `best.` / `min.` / `max.` from one grouped query over
 * the metric points of the keys named.
 */
import type { CellValue, RunColumn, RunListQuery, RunSummary } from "../../lib/contracts/index.ts";
import { configCell, lowerIsBetter, shortText } from "../../lib/contracts/index.ts";
import { configJsonSchema } from "../qrag/index.ts";
import { badRequest } from "./errors.ts";
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

let schemaMemo: Schema | undefined;
/** The run config's JSON Schema, built once (it is static; building it takes milliseconds). */
const configSchema = () => (schemaMemo ??= configJsonSchema() as Schema);

type Schema = { properties?: Record<string, Schema>; oneOf?: Schema[]; anyOf?: Schema[]; allOf?: Schema[]; additionalProperties?: boolean | Schema };

/** Whether the run config's JSON Schema has this path (a union: in any branch; a record: any key). */
function schemaHas(s: Schema | undefined, path: readonly string[]): boolean {
  if (!s) return false;
  if (path.length === 0) return true;
  const branches = [...(s.oneOf ?? []), ...(s.anyOf ?? []), ...(s.allOf ?? [])];
  if (branches.some((b) => schemaHas(b, path))) return true;
  const [head, ...rest] = path;
  if (s.properties?.[head]) return schemaHas(s.properties[head], rest);
  return typeof s.additionalProperties === "object" && schemaHas(s.additionalProperties, rest);
}

/**
 * A config column the run config does not have is a typo, not a column of blanks: 400 naming it,
 * for the chosen columns, the filter and the sort alike.
 */
export function checkConfigColumns(query: RunListQuery, sort: RunColumn | null): void {
  const uses: [string, RunColumn | null][] = [
    ...(query.cols ?? []).map((c) => ["cols", c] as [string, RunColumn]),
    ...(query.where ?? []).map((c) => ["where", c.column] as [string, RunColumn]),
    ["sort", sort],
  ];
  for (const [field, c] of uses) {
    if (!c || c.kind !== "config" || schemaHas(configSchema(), c.path)) continue;
    const message = `unknown config key ${shortText(c.path.join("."))} (a key of the run config, such as envs.task or algo.optimizer.lr, or last./best./min./max. and a metric)`;
    throw badRequest(`invalid query: ${field}`, { [field]: message });
  }
}
