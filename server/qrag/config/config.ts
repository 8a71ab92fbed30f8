/**
 * Config loading: YAML presets laid out like the reference's Hydra groups (configs/training.yaml,
 * configs/envs/*.yaml, configs/algo/*.yaml, plus configs/presets/*.yaml), Hydra-style `key=value`
 * overrides, and validation by the one zod schema with errors that name the offending field.
 */
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { z } from "zod";
import { engineSettings } from "../settings.ts";
import { InputError } from "../errors.ts";
import { runConfigSchema, type RunConfig } from "./schema.ts";
import { datasetLabel } from "../data/registry.ts";
import { BABI_TASK_NAMES, isBabiTask } from "../data/babi/vocab.ts";
import { shortText } from "../../../lib/contracts/short-text.ts";

export type { RunConfig } from "./schema.ts";

const CONFIG_GROUPS = ["envs", "algo"] as const;
type Group = (typeof CONFIG_GROUPS)[number];
type Obj = Record<string, unknown>;

/** The configs/ folder: the engine's configDir (settings.ts: QRAG_CONFIG_DIR, else the repository's). */
export function defaultConfigDir(): string {
  return engineSettings().configDir;
}

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Deep merge where `b` wins; arrays and scalars are replaced, not merged (as Hydra does). */
function deepMerge(a: Obj, b: Obj): Obj {
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

/** `obj` with the dotted key set to `value` (objects on the way are merged, not replaced). */
function setPath(obj: Obj, dotted: string, value: unknown): Obj {
  const patch = dotted
    .split(".")
    .reverse()
    .reduce<unknown>((inner, k) => ({ [k]: inner }), value) as Obj;
  return deepMerge(obj, patch);
}

interface ResolveOptions {
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
  const parsed = parseOverrides(opts.overrides ?? []);
  for (const o of parsed) if (isGroup(o.key)) choices[o.key] = String(o.value);
  let tree: Obj = {};
  for (const g of CONFIG_GROUPS) if (choices[g]) tree[g] = loadGroup(g, choices[g]!, dir);
  // group files come first, then the training/preset body (a preset may tune envs.* or algo.*)
  tree = deepMerge(tree, body);
  tree = applyParsed(tree, parsed.filter((o) => !isGroup(o.key)));
  const envs = tree.envs as Obj | undefined;
  // short bAbI names (envs.task=qa2) become the reference's (qa2_two-supporting-facts)
  if (envs && typeof envs.task === "string" && isBabiTask(envs.task)) tree = setPath(tree, "envs.task", BABI_TASK_NAMES[envs.task]);
  return tree;
}

const isGroup = (k: string): k is Group => (CONFIG_GROUPS as readonly string[]).includes(k);

/** Parses every override, naming each bad one by its index (`overrides.2`). */
function parseOverrides(overrides: readonly string[]): { key: string; value: unknown }[] {
  const issues: ConfigIssue[] = [];
  const out = overrides.flatMap((arg, i) => {
    try {
      return [parseOverride(arg)];
    } catch (e) {
      issues.push({ path: `overrides.${i}`, message: (e as Error).message });
      return [];
    }
  });
  if (issues.length) throw new ConfigError(issues, issues.map((i) => i.message).join("\n"));
  return out;
}

function applyParsed(tree: Obj, parsed: readonly { key: string; value: unknown }[]): Obj {
  let out = tree;
  for (const o of parsed) out = setPath(out, o.key, o.value);
  return out;
}

/** key=value overrides on an existing tree (a stored run's config, the form's edits). */
function applyOverrides(tree: Obj, overrides: readonly string[]): Obj {
  return applyParsed(tree, parseOverrides(overrides));
}

export interface ConfigIssue {
  /** Dotted field path ("envs.task"), `overrides.N` or `preset`. */
  path: string;
  message: string;
}

/** A bad config: every problem with the field it belongs to (the CLI prints them, the API answers 400). */
export class ConfigError extends InputError {
  constructor(
    readonly issues: ConfigIssue[],
    message: string,
  ) {
    super(message);
    this.name = "ConfigError";
  }
}

const bound = (n: number | bigint) => (Math.abs(Number(n)) >= 1e15 ? Number(n).toExponential(0) : String(n));

/** zod's generic messages in a form's words; the schema's own messages are kept. */
function issueMessage(issue: z.core.$ZodIssue): string {
  const i = issue as z.core.$ZodIssue & { expected?: string; origin?: string; minimum?: number | bigint; maximum?: number | bigint; inclusive?: boolean; input?: unknown };
  const missing = /received undefined/.test(i.message);
  if (i.code === "invalid_type") {
    if (missing) return "required";
    if (i.expected === "int") return "must be a whole number";
    if (i.expected === "number") return "must be a number";
  }
  if (i.code === "too_small" && i.origin === "number") return `must be ${i.inclusive ? "≥" : ">"} ${bound(i.minimum!)}`;
  if (i.code === "too_big" && i.origin === "number") return `must be ${i.inclusive ? "≤" : "<"} ${bound(i.maximum!)}`;
  if (i.code === "invalid_union" && !i.message.includes("discriminator")) return "expected a number or a list of numbers (e.g. 10, 20)";
  return i.message;
}

/** zod issues → one issue per field path (unknown keys named one by one); configs and REST inputs alike. */
export function fieldIssues(err: z.ZodError): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  const seen = new Set<string>();
  const put = (p: readonly PropertyKey[], message: string) => {
    // keys come from the input (an unknown one may be 1,000 characters): short and printable
    const path = p.map((k) => shortText(String(k))).join(".");
    if (seen.has(path)) return;
    seen.add(path);
    out.push({ path, message });
  };
  for (const i of err.issues) {
    if (i.code === "unrecognized_keys") for (const k of i.keys) put([...i.path, k], "unknown key");
    else put(i.path, issueMessage(i));
  }
  return out;
}

/** Validates a raw config tree; throws ConfigError naming every bad field. */
export function validateConfig(raw: unknown): RunConfig {
  const r = runConfigSchema.safeParse(raw);
  if (!r.success) {
    const issues = fieldIssues(r.error);
    throw new ConfigError(issues, `invalid config:\n${issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("\n")}`);
  }
  return r.data;
}

/** Compose + validate: what `qrag train preset=… key=value` calls. */
export function resolveConfig(opts: ResolveOptions = {}): RunConfig {
  return validateConfig(composeConfig(opts));
}

export interface RunConfigInput {
  /** A preset name (configs/presets), the base when no `config` is given. */
  preset?: string;
  /** A whole config tree, or a partial one merged onto `base`. */
  config?: unknown;
  /** A stored config that `config` edits (a clone). */
  base?: unknown;
  overrides?: readonly string[];
  configDir?: string;
}

/**
 * The platform's one entry into configs: a form's tree, a preset, or a stored run's config with
 * edits, then key=value overrides, validated. Throws ConfigError (issues under `config.…`,
 * `overrides.N` or `preset`). The API calls it on create, clone and the form's live check; the
 * worker re-validates the stored config on assignment with `validateConfig`.
 */
export function buildRunConfig(input: RunConfigInput): RunConfig {
  const dir = input.configDir ?? defaultConfigDir();
  let tree: Obj;
  if (input.config !== undefined || input.base !== undefined) {
    if (input.config !== undefined && !isObj(input.config)) throw new ConfigError([{ path: "config", message: "expected an object" }], "config: expected an object");
    tree = applyOverrides(deepMerge(isObj(input.base) ? input.base : {}, isObj(input.config) ? input.config : {}), input.overrides ?? []);
  } else if (input.preset) {
    if (!presetNames(dir).includes(input.preset)) {
      const message = `unknown preset (available: ${presetNames(dir).join(", ")})`;
      throw new ConfigError([{ path: "preset", message }], `preset "${input.preset}": ${message}`);
    }
    try {
      tree = composeConfig({ preset: input.preset, overrides: input.overrides, configDir: dir });
    } catch (e) {
      // a group choice that does not exist (envs=nope) or a broken YAML file
      if (e instanceof InputError && !(e instanceof ConfigError)) throw new ConfigError([{ path: "overrides", message: e.message }], e.message);
      throw e;
    }
  } else {
    throw new ConfigError([{ path: "config", message: "required (or give a preset)" }], "config or preset is required");
  }
  try {
    return validateConfig(tree);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    const issues = e.issues.map((i) => ({ path: i.path ? `config.${i.path}` : "config", message: i.message }));
    throw new ConfigError(issues, e.message);
  }
}

/** The short task name used in labels and file names (qa2, niah_multivalue, hotpotqa…). */
function taskLabel(c: RunConfig): string {
  return datasetLabel(c.envs);
}

export function runName(c: RunConfig): string {
  return c.name ?? `${c.envs.name}-${taskLabel(c)}`;
}

/** The columns a run is listed by. */
export function describeConfig(c: RunConfig): { envName: string; task: string; defaultName: string } {
  return { envName: c.envs.name, task: taskLabel(c), defaultName: runName(c) };
}

let jsonSchema: Record<string, unknown> | undefined;
/** The run config as JSON Schema (input side: keys with defaults are optional), for forms. */
export function configJsonSchema(): Record<string, unknown> {
  return (jsonSchema ??= z.toJSONSchema(runConfigSchema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>);
}
