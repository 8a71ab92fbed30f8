/**
 * Config diff for compare views: the dotted keys whose values differ across runs (a key missing
 * from a run counts as a difference), and grouping of runs by the value of one key.
 */
type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** { "algo.encoder.dim": 128, "envs.num_sentences": [50, 100], … } (arrays are leaves). */
export function flattenConfig(config: unknown, prefix = ""): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (!isObj(config)) {
    if (prefix) out.set(prefix, config);
    return out;
  }
  for (const [k, v] of Object.entries(config)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (isObj(v) && Object.keys(v).length) for (const [kk, vv] of flattenConfig(v, key)) out.set(kk, vv);
    else out.set(key, v);
  }
  return out;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export interface DiffRow {
  key: string;
  /** Value per run id (undefined: the run's config has no such key). */
  values: Record<string, unknown>;
}

/** Only the keys whose values are not all equal, sorted by key. */
export function configDiff(configs: Readonly<Record<string, unknown>>): DiffRow[] {
  const flat = Object.entries(configs).map(([id, c]) => [id, flattenConfig(c)] as const);
  const keys = new Set<string>();
  for (const [, f] of flat) for (const k of f.keys()) keys.add(k);
  const rows: DiffRow[] = [];
  for (const key of [...keys].sort()) {
    const values: Record<string, unknown> = {};
    for (const [id, f] of flat) values[id] = f.get(key);
    const vs = Object.values(values);
    // a missing key reads as undefined, which differs from any value a run has
    if (vs.some((v) => !same(v, vs[0]))) rows.push({ key, values });
  }
  return rows;
}

/** Runs grouped by the value of `key` (JSON of the value; missing values group as "undefined"). */
export function groupBy(configs: Readonly<Record<string, unknown>>, key: string): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const [id, c] of Object.entries(configs)) {
    const v = flattenConfig(c).get(key);
    const label = v === undefined ? "undefined" : JSON.stringify(v);
    const list = groups.get(label);
    if (list) list.push(id);
    else groups.set(label, [id]);
  }
  return groups;
}
