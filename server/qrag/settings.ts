/**
 * The engine's settings, its own: where a config's files may come from (`dataRoot`, data-root.ts),
 * where presets live (`configDir`, config.ts), the tfjs backend (`backend`, backend.ts) and the
 * wasm threads (`wasmThreads`, wasm-threads.ts). Engine code reads them here only; it never reads
 * the platform's settings (server/settings.ts).
 *
 * Defaults, read from the process environment on first use, so that every use of the engine as a
 * library (its CLI `qrag`, its benches, tests) gets them without setup:
 *   QRAG_DATA_ROOT, else QRAG_DATA_DIR, else <repo>/data    dataRoot
 *   QRAG_CONFIG_DIR, else <repo>/configs                    configDir
 *   QRAG_BACKEND (auto)                                      backend
 *   QRAG_WASM_THREADS (auto: one per core)                   wasmThreads
 * Empty values count as unset; relative paths resolve against the working directory then. `<repo>`
 * is found from this file's place, not from the working directory. A platform process (the
 * dashboard, the worker, its engine process, the platform's benches) maps its validated
 * environment (server/settings.ts `settings().engine`, the same variables with the same defaults) onto the
 * engine with `configureEngine` at start.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";

export interface EngineSettings {
  /** The only folder a run config's files may come from, absolute. */
  dataRoot: string;
  /** YAML presets and groups (configs/), absolute. */
  configDir: string;
  /** A tfjs backend name or alias (backend.ts `parseBackendPref`); undefined: auto. */
  backend?: string;
  /** "1"…"8" or "auto" (wasm-threads.ts `wasmThreadsWanted` checks it); undefined: auto. */
  wasmThreads?: string;
}

/** The repository the engine lives in (server/qrag/ is two folders down). */
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

const text = (s: string | undefined): string | undefined => (s?.trim() ? s.trim() : undefined);

/** The engine's settings from an environment (`process.env` by default; tests pass their own). */
export function engineSettingsFromEnv(source: Record<string, string | undefined> = process.env): EngineSettings {
  const dataDir = path.resolve(text(source.QRAG_DATA_DIR) ?? path.join(REPO, "data"));
  return {
    dataRoot: path.resolve(text(source.QRAG_DATA_ROOT) ?? dataDir),
    configDir: path.resolve(text(source.QRAG_CONFIG_DIR) ?? path.join(REPO, "configs")),
    backend: text(source.QRAG_BACKEND),
    wasmThreads: text(source.QRAG_WASM_THREADS),
  };
}

let current: EngineSettings | undefined;

/** The settings in force: what `configureEngine` set, over the defaults above. */
export function engineSettings(): EngineSettings {
  return (current ??= engineSettingsFromEnv());
}

/**
 * Sets some of the engine's settings for this process (the rest keep their values); paths are made
 * absolute. A `dataRoot` or `configDir` of undefined changes nothing; `backend` or `wasmThreads`
 * given as undefined mean auto. Returns the settings now in force.
 */
export function configureEngine(partial: Partial<EngineSettings>): EngineSettings {
  const next: EngineSettings = { ...engineSettings() };
  if (partial.dataRoot !== undefined) next.dataRoot = path.resolve(partial.dataRoot);
  if (partial.configDir !== undefined) next.configDir = path.resolve(partial.configDir);
  if ("backend" in partial) next.backend = text(partial.backend);
  if ("wasmThreads" in partial) next.wasmThreads = text(partial.wasmThreads);
  current = next;
  return next;
}

/**
 * The OpenAI-compatible reader's key: QRAG_READER_API_KEY, else OPENAI_API_KEY; read when a reader
 * opens and kept out of EngineSettings, so no settings dump, run config or event can carry it.
 * Never a CLI flag (argv is visible to every user of the machine).
 */
export function readerApiKey(source: Record<string, string | undefined> = process.env): string | undefined {
  return text(source.QRAG_READER_API_KEY) ?? text(source.OPENAI_API_KEY);
}

/**
 * The OpenAI-compatible endpoint a dashboard sweep's "endpoint" reader calls (QRAG_READER_URL,
 * e.g. http://127.0.0.1:8000/v1): the worker's setting, never the form's, so the key it sends
 * goes only where the worker's operator pointed it.
 */
export function readerUrl(source: Record<string, string | undefined> = process.env): string | undefined {
  return text(source.QRAG_READER_URL);
}
