/**
 * The tfjs backends by name, tfjs-free (the config schema and the worker's usage read them): the
 * one list of choices, in the order `auto` tries them (backend.ts), their aliases, and the parse of
 * a preference (`QRAG_BACKEND`, `--backend`, a config's `backend`).
 */

/** Every backend one can force, in the order `auto` tries them. */
export const BACKENDS = ["tensorflow-gpu", "webgpu", "tensorflow", "wasm", "cpu"] as const;
export type BackendChoice = (typeof BACKENDS)[number];

/** What a config's `backend` (and the canonical spelling of every preference) may be. */
export const BACKEND_PREFS = ["auto", ...BACKENDS] as const;
export type BackendPref = (typeof BACKEND_PREFS)[number];

/** Other spellings accepted from the environment and the command line. */
const ALIASES: Readonly<Record<string, BackendPref>> = {
  "": "auto",
  "tfjs-node-gpu": "tensorflow-gpu",
  "node-gpu": "tensorflow-gpu",
  gpu: "tensorflow-gpu",
  "tfjs-node": "tensorflow",
  node: "tensorflow",
  dawn: "webgpu",
};

/** Resolves a backend preference string (any case, aliases included); throws on an unknown name. */
export function parseBackendPref(pref: string | undefined): BackendPref {
  const key = (pref ?? "").trim().toLowerCase();
  const c = (BACKEND_PREFS as readonly string[]).includes(key) ? (key as BackendPref) : Object.hasOwn(ALIASES, key) ? ALIASES[key] : undefined;
  if (c === undefined) {
    throw new Error(`unknown tfjs backend "${pref}" (QRAG_BACKEND / --backend): use one of ${BACKEND_PREFS.join(", ")}`);
  }
  return c;
}
