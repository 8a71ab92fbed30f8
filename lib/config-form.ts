/**
 * The launch form is generated from the run config's JSON Schema (GET /api/schema, written by the
 * engine with z.toJSONSchema; descriptions come from the schema's .describe()). `describeSchema`
 * walks it into a small field tree; the form edits a "draft" where every numeric leaf is the text
 * the user typed, and `draftToConfig` turns it back into a config candidate. Validation is the
 * server's (POST /api/runs/validate, the same pipeline as create), so a non-number is reported
 * by the engine's schema at its own field.
 */
import type { JsonSchema } from "./contracts/dto.ts";

type Obj = Record<string, unknown>;

interface Base {
  key: string;
  /** Dotted path, as the server's fieldErrors name fields ("envs.task", without "config."). */
  path: string;
  /** The value may be left out (optional, or a default applies). */
  optional: boolean;
  defaultValue?: unknown;
  /** The schema's description of the field. */
  hint?: string;
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
  /** `choices`: the schema's examples, offered as a select (a value outside them is kept). */
  | (Base & { kind: "string"; choices?: string[] })
  | (Base & { kind: "boolean" })
  | (Base & { kind: "enum"; values: string[] })
  | (Base & { kind: "literal"; value: unknown });

const isNumeric = (s: JsonSchema | boolean | undefined): s is JsonSchema => typeof s === "object" && (s.type === "number" || s.type === "integer");

function numberBounds(s: JsonSchema): NumberBounds {
  const b: NumberBounds = { int: s.type === "integer" };
  if (s.exclusiveMinimum !== undefined) Object.assign(b, { min: s.exclusiveMinimum, minInclusive: false });
  else if (s.minimum !== undefined) Object.assign(b, { min: s.minimum, minInclusive: true });
  if (s.exclusiveMaximum !== undefined) Object.assign(b, { max: s.exclusiveMaximum, maxInclusive: false });
  else if (s.maximum !== undefined) Object.assign(b, { max: s.maximum, maxInclusive: true });
  return b;
}

/** The property every option fixes with a `const` (the discriminator of a tagged union). */
function discriminatorOf(options: JsonSchema[]): string | undefined {
  const first = options[0]?.properties ?? {};
  return Object.keys(first).find((k) => options.every((o) => o.properties?.[k]?.const !== undefined));
}

/** Walks a JSON Schema into the form's field tree. */
export function describeSchema(schema: JsonSchema, path: string[] = [], key = "", optional = false): FieldNode {
  const base: Base = { key, path: path.join("."), optional: optional || schema.default !== undefined, defaultValue: schema.default, hint: schema.description };
  const union = schema.oneOf ?? schema.anyOf;
  if (union) {
    const disc = discriminatorOf(union);
    if (disc) {
      const options: Record<string, FieldNode & { kind: "object" }> = {};
      for (const o of union) {
        const node = describeSchema(o, path, key);
        if (node.kind === "object") options[String(o.properties![disc].const)] = node;
      }
      return { ...base, kind: "variant", discriminator: disc, options };
    }
    // number | number[]
    const num = union.find(isNumeric);
    const arr = union.find((o) => o.type === "array" && isNumeric(o.items));
    if (num && arr) return { ...base, kind: "numbers", bounds: numberBounds(num), scalar: true };
    return { ...base, kind: "string" };
  }
  if (schema.const !== undefined) return { ...base, kind: "literal", value: schema.const };
  if (schema.enum) return { ...base, kind: "enum", values: schema.enum.map(String) };
  switch (schema.type) {
    case "object": {
      const required = new Set(schema.required ?? []);
      const children = Object.entries(schema.properties ?? {}).map(([k, v]) => describeSchema(v, [...path, k], k, !required.has(k)));
      return { ...base, kind: "object", children };
    }
    case "array":
      if (schema.prefixItems?.every(isNumeric)) return { ...base, kind: "numbers", bounds: numberBounds(schema.prefixItems[0]), scalar: false, length: schema.prefixItems.length };
      if (isNumeric(schema.items)) return { ...base, kind: "numbers", bounds: numberBounds(schema.items), scalar: false };
      return { ...base, kind: "string" };
    case "number":
    case "integer":
      return { ...base, kind: "number", bounds: numberBounds(schema) };
    case "boolean":
      return { ...base, kind: "boolean" };
    case "string": {
      const choices = schema.examples?.filter((x): x is string => typeof x === "string");
      return choices?.length ? { ...base, kind: "string", choices } : { ...base, kind: "string" };
    }
    default:
      return { ...base, kind: "string" };
  }
}

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const NUMBER_RE = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i;

/** "12" → 12, "abc" stays "abc" (the server then says "must be a number" at the field), "" → undefined. */
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

/** Draft → config candidate for the server (empty optional fields are left out so defaults apply). */
export function draftToConfig(node: FieldNode, draft: unknown): unknown {
  switch (node.kind) {
    case "object": {
      const d = isObj(draft) ? draft : {};
      const out: Obj = {};
      for (const c of node.children) {
        const v = draftToConfig(c, d[c.key]);
        if (v !== undefined) out[c.key] = v;
      }
      // an optional section left empty (envs.curriculum) is left out, not sent as {}
      return node.optional && Object.keys(out).length === 0 ? undefined : out;
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

/** Every field path the form renders (to tell field errors from form-level ones). */
export function fieldPaths(node: FieldNode, out = new Set<string>()): Set<string> {
  out.add(node.path);
  if (node.kind === "object") node.children.forEach((c) => fieldPaths(c, out));
  if (node.kind === "variant") {
    out.add(`${node.path}.${node.discriminator}`);
    Object.values(node.options).forEach((o) => fieldPaths(o, out));
  }
  return out;
}

/** The server names config fields "config.envs.task"; the form's paths are "envs.task". */
export function configFieldErrors(fieldErrors: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(fieldErrors)) out[k.replace(/^config\.?/, "")] = v;
  return out;
}

/** The leaves of a draft as dotted path → value. */
function leaves(d: unknown, prefix: string, out: Map<string, unknown>): Map<string, unknown> {
  if (isObj(d)) for (const [k, v] of Object.entries(d)) leaves(v, prefix ? `${prefix}.${k}` : k, out);
  else out.set(prefix, d);
  return out;
}

/**
 * What a draft changes against a baseline draft (the preset's, or the cloned run's), leaf by leaf
 * in the draft's order; a leaf only one side has counts when it holds a value.
 */
export function draftDiff(draft: unknown, baseline: unknown): { path: string; from: unknown; to: unknown }[] {
  const now = leaves(draft, "", new Map());
  const was = leaves(baseline, "", new Map());
  const out: { path: string; from: unknown; to: unknown }[] = [];
  for (const path of new Set([...now.keys(), ...was.keys()])) {
    const [to, from] = [now.get(path), was.get(path)];
    if (JSON.stringify(to ?? "") !== JSON.stringify(from ?? "")) out.push({ path, from, to });
  }
  return out;
}
