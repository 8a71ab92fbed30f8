/** REST handlers for /api/presets, /api/schema, /api/workers and /api/health. */
import { z } from "zod";
import type { PresetDto } from "../../lib/protocol.ts";
import { presetNames, resolveConfig, runConfigSchema } from "../qrag/config.ts";
import { ENGINE_VERSION } from "../qrag/version.ts";
import { configDir } from "../runs/config.ts";
import { listWorkers } from "../runs/queries.ts";
import { hasPlatform, hooks } from "../realtime/hub.ts";
import { handler, json } from "./http.ts";

/** Every preset in configs/presets, resolved and validated by the engine. */
export const presets = {
  GET: handler(async () => {
    const dir = configDir();
    const out: PresetDto[] = [];
    for (const name of presetNames(dir)) {
      try {
        out.push({ name, config: resolveConfig({ preset: name, configDir: dir }) });
      } catch (e) {
        console.error(`preset ${name}: ${(e as Error).message}`);
      }
    }
    return out;
  }),
};

let schemaCache: unknown;
/** The JSON Schema of the run config (input side: defaults are optional), for the launch form. */
export const schema = {
  GET: handler(async () => (schemaCache ??= z.toJSONSchema(runConfigSchema, { io: "input", unrepresentable: "any" }))),
};

export const workers = {
  GET: handler(async (_req, _ctx, db) => {
    return listWorkers(db, hasPlatform() ? new Set(hooks().connectedWorkers()) : null);
  }),
};

export const health = {
  GET: handler(async (_req, _ctx, db) => {
    const t0 = performance.now();
    await db.prisma.run.count({ where: { status: "running" } });
    return json({ ok: true, engineVersion: ENGINE_VERSION, database: db.provider, dbMs: Math.round(performance.now() - t0), workers: hooks().connectedWorkers().length });
  }),
};
