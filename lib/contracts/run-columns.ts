/**
 * The runs table's own columns and filter (GET /api/runs?cols=…&where=…&sort=<column>): a column
 * is a config key (`envs.task`, `algo.optimizer.lr`; `config.` in front is allowed) or a metric
 * summary — `last.<metric>` (the latest value, as the table's fixed columns show), `best.<metric>`
 * (the highest, the lowest for a loss) or `min.<metric>` / `max.<metric>`. A filter is clauses
 * joined by `and`: `envs.task = qa2 and best.eval_coverage >= 0.9`, operators = != > >= < <= and
 * ~ (contains); values are numbers, words, or "quoted text". Parsed here once, for the server (which
 * filters and sorts) and the page (which shows the error under the box). Errors name the token.
 */
import { METRIC_KEYS, type MetricKey } from "./metrics.ts";

export const MAX_RUN_COLUMNS = 12;
const KEY_RE = /^[A-Za-z_][\w-]*(\.[\w-]+)*$/;
export const AGGREGATES = ["last", "best", "min", "max"] as const;
export type Aggregate = (typeof AGGREGATES)[number];

export type RunColumn = { kind: "metric"; key: string; agg: Aggregate; metric: MetricKey } | { kind: "config"; key: string; path: string[] };

/** Lower is better for these (their `best` is the minimum). */
export const lowerIsBetter = (m: MetricKey) => m === "qf_loss";

/** A column key as a column, or an error naming it. */
export function parseColumn(raw: string): RunColumn | { error: string } {
  const key = raw.trim();
  if (!key || key.length > 100 || !KEY_RE.test(key)) return { error: `"${key.slice(0, 40)}" is not a column (a config key such as envs.task, or last./best./min./max. and a metric)` };
  const [head, ...rest] = key.split(".");
  if ((AGGREGATES as readonly string[]).includes(head) && rest.length === 1) {
    const metric = rest[0];
    if (!(METRIC_KEYS as readonly string[]).includes(metric)) return { error: `unknown metric ${metric} in ${key} (one of ${METRIC_KEYS.join(", ")})` };
    return { kind: "metric", key, agg: head as Aggregate, metric: metric as MetricKey };
  }
  const path = head === "config" ? rest : [head, ...rest];
  if (path.length === 0) return { error: `"${key}" names no config key` };
  return { kind: "config", key, path };
}

/** A comma-separated column list: the columns, or the first error. */
export function parseColumns(raw: string): RunColumn[] | { error: string } {
  const parts = raw.split(",").map((s) => s.trim()).filter(Boolean);
  if (parts.length > MAX_RUN_COLUMNS) return { error: `at most ${MAX_RUN_COLUMNS} columns` };
  const out: RunColumn[] = [];
  for (const p of parts) {
    const c = parseColumn(p);
    if ("error" in c) return c;
    if (!out.some((o) => o.key === c.key)) out.push(c);
  }
  return out;
}

export const FILTER_OPS = ["=", "!=", ">=", "<=", ">", "<", "~"] as const;
export type FilterOp = (typeof FILTER_OPS)[number];
export interface FilterClause {
  column: RunColumn;
  op: FilterOp;
  value: string | number;
}

/** Tokens: words, "quoted text" (\" inside), operators; each with where it starts (for errors). */
function tokens(text: string): { t: string; at: number; quoted?: boolean }[] | { error: string } {
  const out: { t: string; at: number; quoted?: boolean }[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      let s = "";
      while (j < text.length && text[j] !== '"') {
        if (text[j] === "\\" && j + 1 < text.length) j++;
        s += text[j++];
      }
      if (j >= text.length) return { error: `unclosed quote at character ${i + 1}` };
      out.push({ t: s, at: i, quoted: true });
      i = j + 1;
      continue;
    }
    const op = [...FILTER_OPS].sort((a, b) => b.length - a.length).find((o) => text.startsWith(o, i));
    if (op) {
      out.push({ t: op, at: i });
      i += op.length;
      continue;
    }
    let j = i;
    while (j < text.length && !/[\s"=!<>~]/.test(text[j])) j++;
    out.push({ t: text.slice(i, j), at: i });
    i = j;
  }
  return out;
}

const shown = (t: string) => JSON.stringify(t.length > 40 ? `${t.slice(0, 39)}…` : t);

/** A filter expression as clauses, or an error naming the token that does not fit. */
export function parseFilter(text: string): FilterClause[] | { error: string } {
  if (text.length > 500) return { error: "at most 500 characters" };
  const toks = tokens(text);
  if ("error" in toks) return toks;
  const out: FilterClause[] = [];
  let k = 0;
  while (k < toks.length) {
    if (out.length > 0) {
      if (toks[k].t.toLowerCase() !== "and" || toks[k].quoted) return { error: `expected "and" at character ${toks[k].at + 1}, got ${shown(toks[k].t)}` };
      k++;
      if (k >= toks.length) return { error: `a clause must follow "and"` };
    }
    const [key, op, value] = [toks[k], toks[k + 1], toks[k + 2]];
    const column = parseColumn(key.t);
    if (key.quoted || "error" in column) return { error: `${"error" in column ? column.error : `${shown(key.t)} is not a column`} (character ${key.at + 1})` };
    if (!op || !(FILTER_OPS as readonly string[]).includes(op.t) || op.quoted) return { error: `expected an operator (${FILTER_OPS.join(" ")}) after ${key.t}${op ? `, got ${shown(op.t)} at character ${op.at + 1}` : ""}` };
    if (!value || ((FILTER_OPS as readonly string[]).includes(value.t) && !value.quoted)) return { error: `expected a value after ${key.t} ${op.t}${value ? `, got ${shown(value.t)} at character ${value.at + 1}` : ""}` };
    const num = !value.quoted && value.t.trim() !== "" && Number.isFinite(Number(value.t)) ? Number(value.t) : null;
    if ((op.t === ">" || op.t === "<" || op.t === ">=" || op.t === "<=") && num === null) return { error: `${op.t} needs a number, got ${shown(value.t)} at character ${value.at + 1}` };
    out.push({ column, op: op.t as FilterOp, value: num ?? value.t });
    k += 3;
  }
  return out;
}

/** A config value or metric summary as a cell holds it. */
export type CellValue = string | number | boolean | null;

/** Whether a run's value passes a clause (a run without the value never does). */
export function clauseHolds(v: CellValue | undefined, c: FilterClause): boolean {
  if (v === undefined || v === null) return false;
  if (typeof c.value === "number") {
    const n = typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : NaN;
    if (Number.isNaN(n)) return c.op === "!=";
    switch (c.op) {
      case "=": return n === c.value;
      case "!=": return n !== c.value;
      case ">": return n > c.value;
      case ">=": return n >= c.value;
      case "<": return n < c.value;
      case "<=": return n <= c.value;
      case "~": return String(v).includes(String(c.value));
    }
  }
  const s = String(v);
  if (c.op === "=") return s === c.value;
  if (c.op === "!=") return s !== c.value;
  return s.toLowerCase().includes(String(c.value).toLowerCase());
}

/** A config value at a path, as a cell (objects and lists as JSON text). */
export function configCell(config: unknown, path: readonly string[]): CellValue | undefined {
  let v: unknown = config;
  for (const p of path) {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  if (v === undefined) return undefined;
  if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean") return v;
  return JSON.stringify(v);
}

/** Cells compared for sorting: numbers before text, a missing value last whatever the order. */
export function compareCells(a: CellValue | undefined, b: CellValue | undefined, order: "asc" | "desc"): number {
  const missing = (v: CellValue | undefined) => v === undefined || v === null;
  if (missing(a) || missing(b)) return missing(a) === missing(b) ? 0 : missing(a) ? 1 : -1;
  const sign = order === "asc" ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return (a - b) * sign;
  if (typeof a === "number") return -1;
  if (typeof b === "number") return 1;
  return String(a).localeCompare(String(b)) * sign;
}
