/**
 * The compare view's state ⇄ its URL (`/compare?runs=a,b,c&group=envs.task&band=minmax&…`), and
 * its defaults. The URL is read leniently (an unreadable parameter falls back to its default, so
 * a hand-edited link still opens); a dashboard's spec is the same object, validated strictly by
 * the contract when it is saved.
 */
import { BAND_KINDS, COMPARED_KEYS, MAX_COMPARE_RUNS, MAX_WHERE, RUN_STATUSES, X_AXES, axisBrush, axisScale, pcoordSpec, runsTableSpec, scatterSpec, type BandKind, type DashboardSpec, type PcoordSpec, type RunFilterSpec, type RunStatus, type RunsTableSpec, type ScatterSpec, type XAxis } from "./contracts/index.ts";

/** Panels shown when none are chosen: the registry's compared keys (lib/contracts/metrics.ts), the run page's first charts. */
export const DEFAULT_PANELS: readonly string[] = COMPARED_KEYS;
export const DEFAULT_SMOOTHING = 0.6;

/** A spec with every default filled in. */
export interface CompareState {
  runs?: string[];
  filter?: RunFilterSpec;
  panels: string[];
  group?: string;
  band: BandKind;
  smoothing: number;
  x: XAxis;
  hidden: string[];
  /** The parallel-coordinates panel (absent: not shown). */
  pcoord?: PcoordSpec;
  /** The scatter panel (absent: not shown). */
  scatter?: ScatterSpec;
  /** The runs-table panel (absent: not shown). */
  table?: RunsTableSpec;
}

const list = (s: string | null) => (s ? s.split(",").map((x) => x.trim()).filter(Boolean) : []);

export function withDefaults(spec: Partial<DashboardSpec>): CompareState {
  return {
    runs: spec.runs,
    filter: spec.filter,
    panels: spec.panels?.length ? spec.panels : [...DEFAULT_PANELS],
    group: spec.group,
    band: spec.band ?? "std",
    smoothing: spec.smoothing ?? DEFAULT_SMOOTHING,
    x: spec.x ?? "step",
    hidden: spec.hidden ?? [],
    pcoord: spec.pcoord,
    scatter: spec.scatter,
    table: spec.table,
  };
}

/**
 * The summary panels from the URL: `pc=axis,axis` + `pcm=metric` + `pcb=[brushes as JSON]`,
 * `sc=x,y`. Read leniently like the rest: a bad brush is dropped alone, bad axes drop the panel.
 */
function summaryPanelsFromSearch(sp: URLSearchParams): Pick<CompareState, "pcoord" | "scatter" | "table"> {
  let pcoord: PcoordSpec | undefined;
  const metric = sp.get("pcm");
  if (metric) {
    let brushes: unknown[] = [];
    try {
      const raw: unknown = JSON.parse(sp.get("pcb") ?? "[]");
      if (Array.isArray(raw)) brushes = raw.filter((b) => axisBrush.safeParse(b).success);
    } catch {
      // an unreadable brush list: no brushes
    }
    // `pcs=key:log,key:linear`: scales set by hand, a bad one dropped alone
    const scales = list(sp.get("pcs")).map((s) => {
      const i = s.lastIndexOf(":");
      return { key: s.slice(0, i), scale: s.slice(i + 1) };
    }).filter((s) => axisScale.safeParse(s).success);
    const parsed = pcoordSpec.safeParse({ axes: list(sp.get("pc")), metric, ...(brushes.length ? { brushes } : {}), ...(scales.length ? { scales } : {}) });
    pcoord = parsed.success ? parsed.data : undefined;
  }
  const [x, y] = list(sp.get("sc"));
  const sc = x && y ? scatterSpec.safeParse({ x, y }) : undefined;
  // the runs-table panel: `table=1&cols=a,b&sort=k&order=asc` (the runs page's names); bad columns drop the panel
  let table: RunsTableSpec | undefined;
  if (sp.get("table") === "1") {
    const order = sp.get("order");
    const sort = sp.get("sort");
    const parsed = runsTableSpec.safeParse({ cols: list(sp.get("cols")), ...(sort ? { sort } : {}), ...(order === "asc" || order === "desc" ? { order } : {}) });
    table = parsed.success ? parsed.data : undefined;
  }
  return { pcoord, scatter: sc?.success ? sc.data : undefined, table };
}

const KEY_RE = /^[\w.-]{1,200}$/;

/** URL → state. `filter.status`, `filter.q`, `filter.tag` come as `status=`, `q=`, `tag=` (the runs table's names). */
export function stateFromSearch(sp: URLSearchParams): CompareState {
  const runs = list(sp.get("runs")).filter((r) => /^[\w-]{1,100}$/.test(r)).slice(0, MAX_COMPARE_RUNS);
  const statuses = list(sp.get("status")).filter((s): s is RunStatus => (RUN_STATUSES as readonly string[]).includes(s));
  const q = sp.get("q")?.slice(0, 200) || undefined;
  const tag = sp.get("tag")?.slice(0, 64) || undefined;
  const where = sp.get("where")?.slice(0, MAX_WHERE) || undefined;
  const filter: RunFilterSpec | undefined =
    sp.get("filter") === "1" || (!runs.length && (statuses.length || q || tag || where)) ? { ...(statuses.length ? { status: statuses } : {}), ...(q ? { q } : {}), ...(tag ? { tag } : {}), ...(where ? { where } : {}) } : undefined;
  const group = sp.get("group") ?? "";
  const band = sp.get("band") ?? "";
  const smoothing = Number(sp.get("smooth") ?? NaN);
  const x = sp.get("x") ?? "";
  return withDefaults({
    runs: runs.length && !filter ? runs : undefined,
    filter,
    panels: list(sp.get("panels")).filter((k) => /^[\w.-]{1,100}$/.test(k)).slice(0, 20),
    group: KEY_RE.test(group) ? group : undefined,
    band: (BAND_KINDS as readonly string[]).includes(band) ? (band as BandKind) : undefined,
    smoothing: Number.isFinite(smoothing) && smoothing >= 0 && smoothing <= 0.99 ? smoothing : undefined,
    x: (X_AXES as readonly string[]).includes(x) ? (x as XAxis) : undefined,
    hidden: list(sp.get("hidden")).slice(0, MAX_COMPARE_RUNS),
    ...summaryPanelsFromSearch(sp),
  });
}

/** State → URL query (defaults left out, so links stay short). */
export function searchFromState(s: CompareState): string {
  const p = new URLSearchParams();
  if (s.runs?.length) p.set("runs", s.runs.join(","));
  if (s.filter) {
    p.set("filter", "1");
    if (s.filter.status?.length) p.set("status", s.filter.status.join(","));
    if (s.filter.q) p.set("q", s.filter.q);
    if (s.filter.tag) p.set("tag", s.filter.tag);
    if (s.filter.where) p.set("where", s.filter.where);
  }
  if (s.panels.join(",") !== DEFAULT_PANELS.join(",")) p.set("panels", s.panels.join(","));
  if (s.group) p.set("group", s.group);
  if (s.band !== "std") p.set("band", s.band);
  if (s.smoothing !== DEFAULT_SMOOTHING) p.set("smooth", String(s.smoothing));
  if (s.x !== "step") p.set("x", s.x);
  if (s.hidden.length) p.set("hidden", s.hidden.join(","));
  if (s.pcoord) {
    if (s.pcoord.axes.length) p.set("pc", s.pcoord.axes.join(","));
    p.set("pcm", s.pcoord.metric);
    if (s.pcoord.brushes?.length) p.set("pcb", JSON.stringify(s.pcoord.brushes));
    if (s.pcoord.scales?.length) p.set("pcs", s.pcoord.scales.map((x) => `${x.key}:${x.scale}`).join(","));
  }
  if (s.scatter) p.set("sc", `${s.scatter.x},${s.scatter.y}`);
  if (s.table) {
    p.set("table", "1");
    if (s.table.cols.length) p.set("cols", s.table.cols.join(","));
    if (s.table.sort) p.set("sort", s.table.sort);
    if (s.table.order) p.set("order", s.table.order);
  }
  return p.toString();
}

/** State → the spec a dashboard stores (every field explicit). */
export function specFromState(s: CompareState): DashboardSpec {
  return {
    ...(s.runs ? { runs: s.runs } : {}),
    ...(s.filter ? { filter: s.filter } : {}),
    panels: s.panels,
    ...(s.group ? { group: s.group } : {}),
    band: s.band,
    smoothing: s.smoothing,
    x: s.x,
    hidden: s.hidden,
    ...(s.pcoord ? { pcoord: s.pcoord } : {}),
    ...(s.scatter ? { scatter: s.scatter } : {}),
    ...(s.table ? { table: s.table } : {}),
  };
}

/** A filter as the runs list's query (GET /api/runs), capped at MAX_COMPARE_RUNS newest runs. */
export function filterQuery(f: RunFilterSpec): { status?: string; q?: string; tag?: string; where?: string; sort: "createdAt"; order: "desc"; limit: number } {
  return { status: f.status?.length ? f.status.join(",") : undefined, q: f.q || undefined, tag: f.tag || undefined, where: f.where || undefined, sort: "createdAt", order: "desc", limit: MAX_COMPARE_RUNS };
}
