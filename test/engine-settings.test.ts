/**
 * The engine's own settings (server/qrag/settings.ts): alone, the engine reads the same variables
 * with the same defaults as the platform's validated environment (server/settings.ts `settings().engine`), so
 * `configureEngine(settings().engine)` at a platform process's start changes nothing the engine would
 * have found itself; and `configureEngine` sets what it is given, leaving the rest.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { parseSettings } from "../server/settings.ts";
import { configureEngine, engineSettings, engineSettingsFromEnv } from "../server/qrag/settings.ts";
import { defaultConfigDir } from "../server/qrag/config/config.ts";
import { wasmThreadsWanted } from "../server/qrag/backend/wasm-threads.ts";

const ROOT = path.resolve(import.meta.dirname, "..");

test("alone, the engine's settings equal what the platform's environment maps onto it", () => {
  const envs: Record<string, string | undefined>[] = [
    {},
    { QRAG_DATA_DIR: "/srv/qrag" },
    { QRAG_DATA_DIR: "/srv/qrag", QRAG_DATA_ROOT: "/srv/corpora" },
    { QRAG_DATA_ROOT: " /srv/corpora ", QRAG_CONFIG_DIR: "/etc/qrag/configs", QRAG_BACKEND: "wasm", QRAG_WASM_THREADS: "2" },
    { QRAG_DATA_DIR: "rel/data", QRAG_CONFIG_DIR: "rel/configs", QRAG_BACKEND: "  ", QRAG_WASM_THREADS: "" },
  ];
  for (const e of envs) {
    const own = engineSettingsFromEnv(e);
    const mapped = parseSettings(e).engine;
    assert.deepEqual(
      { ...own, backend: own.backend ?? null, wasmThreads: own.wasmThreads ?? null },
      { ...mapped, backend: mapped.backend ?? null, wasmThreads: mapped.wasmThreads ?? null },
      JSON.stringify(e),
    );
  }
  // found from the engine's place, not from the working directory
  assert.deepEqual(engineSettingsFromEnv({}), { dataRoot: path.join(ROOT, "data"), configDir: path.join(ROOT, "configs"), backend: undefined, wasmThreads: undefined });
});

test("configureEngine sets what it is given and keeps the rest", () => {
  const before = engineSettings();
  const after = configureEngine({ configDir: "test/fixtures", wasmThreads: "3" });
  assert.equal(after.configDir, path.resolve("test/fixtures"));
  assert.equal(after.dataRoot, before.dataRoot);
  assert.equal(after.backend, before.backend);
  assert.equal(defaultConfigDir(), path.resolve("test/fixtures"));
  assert.equal(wasmThreadsWanted(), 3);
  // undefined: a path stays, backend and threads go back to auto
  const again = configureEngine({ dataRoot: undefined, backend: undefined, wasmThreads: undefined });
  assert.equal(again.dataRoot, before.dataRoot);
  assert.equal(again.backend, undefined);
  assert.equal(again.wasmThreads, undefined);
  configureEngine(before);
});
