/**
 * Config loading: YAML presets laid out like the reference's Hydra groups (configs/training.yaml,
 * configs/envs/*.yaml, configs/algo/*.yaml, plus configs/presets/*.yaml), Hydra-style `key=value`
 * overrides, and validation by the one zod schema with errors that name the offending field.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import { z } from "zod";
import { InputError } from "./errors.ts";
import { runConfigSchema, type RunConfig } from "./config-schema.ts";

export { runConfigSchema, type RunConfig } from "./config-schema.ts";

export const CONFIG_GROUPS = ["envs", "algo"] as const;
type Group = (typeof CONFIG_GROUPS)[number];
type Obj = Record<string, unknown>;

/** The repository's configs/ folder (overridable for tests and installed copies). */
export function defaultConfigDir(): string {
  return process.env.QRAG_CONFIG_DIR ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../configs");
}

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Deep merge where `b` wins; arrays and scalars are replaced, not merged (as Hydra does). */
export function deepMerge(a: Obj, b: Obj): Obj {
  const out: Obj = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = isObj(v) && isObj(out[k]) ? deepMerge(out[k] as Obj, v) : v;
  return out;
}

function readYaml(file: string): Obj {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    throw new InputError(`config file not found: ${file}`);
  }
  const doc = YAML.parseDocument(text, { prettyErrors: true });
  if (doc.errors.length) {
    const e = doc.errors[0];
    throw new InputError(`${file}:${e.linePos?.[0].line ?? "?"}: ${e.message.split("\n")[0]}`);
  }
  const v = doc.toJS() ?? {};
  if (!isObj(v)) throw new InputError(`${file}: expected a mapping at the top level`);
  return v;
}

/** Names of the options of a group (files in configs/<group>/), for help text and the UI. */
export function groupOptions(group: Group, dir = defaultConfigDir()): string[] {
  const d = path.join(dir, group);
  return fs.existsSync(d) ? fs.readdirSync(d).filter((f) => f.endsWith(".yaml")).map((f) => f.slice(0, -5)).sort() : [];
}

export function presetNames(dir = defaultConfigDir()): string[] {
  const d = path.join(dir, "presets");
  return fs.existsSync(d) ? fs.readdirSync(d).filter((f) => f.endsWith(".yaml")).map((f) => f.slice(0, -5)).sort() : [];
}

function loadGroup(group: Group, name: string, dir: string): Obj {
  const file = path.join(dir, group, `${name}.yaml`);
  if (!fs.existsSync(file)) {
    throw new InputError(`${group}=${name}: no such option (choose one of: ${groupOptions(group, dir).join(", ")})`);
  }
  return readYaml(file);
}

/** Splits a file's `defaults` (group choices) from its body. */
function splitDefaults(doc: Obj, file: string): { defaults: Partial<Record<Group, string>>; body: Obj } {
  const { defaults, ...body } = doc;
  const out: Partial<Record<Group, string>> = {};
  if (defaults !== undefined) {
    const entries = Array.isArray(defaults) ? defaults.flatMap((d) => (isObj(d) ? Object.entries(d) : [])) : isObj(defaults) ? Object.entries(defaults) : null;
    if (!entries) throw new InputError(`${file}: defaults must be a mapping or a list of {group: option}`);
    for (const [g, v] of entries) {
      if (!(CONFIG_GROUPS as readonly string[]).includes(g)) throw new InputError(`${file}: defaults.${g}: unknown config group (known: ${CONFIG_GROUPS.join(", ")})`);
      out[g as Group] = String(v);
    }
  }
  return { defaults: out, body };
}

/** Parses one `key=value` override; the value is read as a YAML scalar/flow value. */
export function parseOverride(arg: string): { key: string; value: unknown } {
  const m = /^\+?([A-Za-z_][\w.]*)=(.*)$/s.exec(arg);
  if (!m) throw new InputError(`override "${arg}": expected key=value (e.g. envs.task=qa2 steps_count=3000)`);
  let value: unknown;
  try {
    value = m[2] === "" ? "" : YAML.parse(m[2]);
  } catch {
    value = m[2];
  }
  return { key: m[1], value };
}

function setPath(obj: Obj, dotted: string, value: unknown): Obj {
  const keys = dotted.split(".");
  const patch: Obj = {};
  let cur = patch;
  keys.forEach((k, i) => {
    if (i === keys.length - 1) cur[k] = value;
    else cur = cur[k] = {} as Obj;
  });
  return deepMerge(obj, patch);
}

/** Short aliases accepted for envs.task, e.g. qa2 → the reference's qa2_two-supporting-facts. */
const BABI_TASK_NAMES: Record<string, string> = {
  qa1: "qa1_single-supporting-fact",
  qa2: "qa2_two-supporting-facts",
  qa3: "qa3_three-supporting-facts",
  qa4: "qa4_two-arg-relations",
  qa5: "qa5_three-arg-relations",
};

export interface ResolveOptions {
  preset?: string;
  overrides?: readonly string[];
  configDir?: string;
}

/** Builds the raw (unvalidated) config tree: training.yaml ← preset ← group choices ← overrides. */
export function composeConfig(opts: ResolveOptions = {}): Obj {
  const dir = opts.configDir ?? defaultConfigDir();
  const base = splitDefaults(readYaml(path.join(dir, "training.yaml")), "training.yaml");
  const choices = { ...base.defaults };
  let body = base.body;
  if (opts.preset) {
    const file = path.join(dir, "presets", `${opts.preset}.yaml`);
    if (!fs.existsSync(file)) throw new InputError(`preset "${opts.preset}" not found (available: ${presetNames(dir).join(", ")})`);
    const p = splitDefaults(readYaml(file), `presets/${opts.preset}.yaml`);
    Object.assign(choices, p.defaults);
    body = deepMerge(body, p.body);
  }
  const keyOverrides: { key: string; value: unknown }[] = [];
  for (const arg of opts.overrides ?? []) {
    const o = parseOverride(arg);
    if ((CONFIG_GROUPS as readonly string[]).includes(o.key)) choices[o.key as Group] = String(o.value);
    else keyOverrides.push(o);
  }
  let tree: Obj = {};
  for (const g of CONFIG_GROUPS) if (choices[g]) tree[g] = loadGroup(g, choices[g]!, dir);
  // group files come first, then the training/preset body (a preset may tune envs.* or algo.*)
  tree = deepMerge(tree, body);
  for (const o of keyOverrides) tree = setPath(tree, o.key, o.value);
  const envs = tree.envs as Obj | undefined;
  if (envs && typeof envs.task === "string" && BABI_TASK_NAMES[envs.task]) envs.task = BABI_TASK_NAMES[envs.task];
  return tree;
}

/** Formats zod issues as "path.to.field: message" lines. */
export function formatIssues(err: z.ZodError): string {
  return err.issues
    .map((i) => {
      const p = i.path.join(".");
      const msg = i.code === "unrecognized_keys" ? `unknown key(s) ${i.keys.map((k) => (p ? `${p}.${k}` : k)).join(", ")}` : i.message;
      return p && i.code !== "unrecognized_keys" ? `${p}: ${msg}` : msg;
    })
    .join("\n");
}

export class ConfigError extends InputError {
  constructor(
    readonly issues: { path: string; message: string }[],
    message: string,
  ) {
    super(message);
    this.name = "ConfigError";
  }
}

/** Validates a raw config tree; throws ConfigError naming every bad field. */
export function validateConfig(raw: unknown): RunConfig {
  const r = runConfigSchema.safeParse(raw);
  if (!r.success) {
    const issues = r.error.issues.map((i) => ({ path: i.path.join("."), message: i.message }));
    throw new ConfigError(issues, `invalid config:\n${formatIssues(r.error)}`);
  }
  return r.data;
}

/** Compose + validate: what `qrag train preset=… key=value` and the worker call. */
export function resolveConfig(opts: ResolveOptions = {}): RunConfig {
  return validateConfig(composeConfig(opts));
}

/** The short task name used in labels and file names (qa2, niah_multivalue, hotpotqa…). */
export function taskLabel(c: RunConfig): string {
  const e = c.envs;
  if (e.name === "babilong") return e.task.slice(0, 3);
  if (e.name === "niah") return e.task;
  return e.name;
}

export function runName(c: RunConfig): string {
  return c.name ?? `${c.envs.name}-${taskLabel(c)}`;
}
