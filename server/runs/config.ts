/**
 * Run configs as the dashboard takes them: validated by the engine's one zod schema, with every
 * problem reported per field path ("envs.task", "algo.encoder.dim"), presets resolved from
 * configs/, and clone edits (a partial config deep-merged onto the source, plus key=value
 * overrides as the CLI takes them).
 */
import path from "node:path";
import { z } from "zod";
import { composeConfig, deepMerge, parseOverride, presetNames, runConfigSchema, taskLabel, type RunConfig } from "../qrag/config.ts";
import { InputError } from "../qrag/errors.ts";
import { badRequest } from "./errors.ts";

type Obj = Record<string, unknown>;

export function configDir(): string {
  return process.env.QRAG_CONFIG_DIR ?? path.resolve("configs");
}

/** zod issues → { "a.b": message } (unknown keys are named one by one). */
export function issuesToFieldErrors(issues: readonly z.core.$ZodIssue[], prefix: readonly PropertyKey[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  const put = (p: readonly PropertyKey[], msg: string) => {
    const key = [...prefix, ...p].map(String).join(".") || "body";
    if (!(key in out)) out[key] = msg;
  };
  for (const i of issues) {
    if (i.code === "unrecognized_keys") for (const k of i.keys) put([...i.path, k], "unknown key");
    else put(i.path, i.message);
  }
  return out;
}

/** Validates a raw config tree with the engine's schema; throws 400 naming each bad field. */
export function validateRunConfig(raw: unknown): RunConfig {
  const r = runConfigSchema.safeParse(raw);
  if (!r.success) {
    const fieldErrors = issuesToFieldErrors(r.error.issues);
    throw badRequest(`invalid config: ${Object.keys(fieldErrors).join(", ")}`, fieldErrors);
  }
  return r.data;
}

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Applies CLI-style key=value overrides to a config tree. */
export function applyOverrides(tree: Obj, overrides: readonly string[]): Obj {
  let out = tree;
  const fieldErrors: Record<string, string> = {};
  overrides.forEach((arg, i) => {
    let o: { key: string; value: unknown };
    try {
      o = parseOverride(arg);
    } catch (e) {
      fieldErrors[`overrides.${i}`] = (e as Error).message;
      return;
    }
    const patch: Obj = {};
    let cur = patch;
    const keys = o.key.split(".");
    keys.forEach((k, j) => {
      if (j === keys.length - 1) cur[k] = o.value;
      else cur = cur[k] = {} as Obj;
    });
    out = deepMerge(out, patch);
  });
  if (Object.keys(fieldErrors).length) throw badRequest("invalid overrides", fieldErrors);
  return out;
}

/** The raw tree of a preset (training.yaml ← preset ← groups); 400 on `preset` when unknown. */
export function presetTree(preset: string, overrides: readonly string[] = []): Obj {
  const bad: Record<string, string> = {};
  overrides.forEach((o, i) => {
    try {
      parseOverride(o);
    } catch (e) {
      bad[`overrides.${i}`] = (e as Error).message;
    }
  });
  if (Object.keys(bad).length) throw badRequest("invalid overrides", bad);
  if (!presetNames(configDir()).includes(preset)) {
    throw badRequest(`unknown preset "${preset}"`, { preset: `unknown preset (available: ${presetNames(configDir()).join(", ")})` });
  }
  try {
    return composeConfig({ preset, overrides, configDir: configDir() });
  } catch (e) {
    if (e instanceof InputError) throw badRequest(e.message, { overrides: e.message });
    throw e;
  }
}

/** A partial config merged onto a base (arrays and scalars replaced, as Hydra does). */
export function mergeEdits(base: unknown, edits: unknown): Obj {
  return deepMerge(isObj(base) ? base : {}, isObj(edits) ? edits : {});
}

export function describeConfig(c: RunConfig): { envName: string; task: string; defaultName: string } {
  const task = taskLabel(c);
  return { envName: c.envs.name, task, defaultName: c.name ?? `${c.envs.name}-${task}` };
}
