/** REST handlers for /api/presets, /api/schema, /api/workers and /api/health. */
import type { ConfigSchemaDto, JsonSchema, PresetDto } from "../../lib/contracts/index.ts";
import { configJsonSchema, ENGINE_VERSION, presetNames, resolveConfig } from "../qrag/index.ts";
import { listWorkers } from "../runs/queries.ts";
import { handler } from "./http.ts";

/** Every preset in configs/presets, resolved and validated by the engine. */
export const presets = {
  GET: handler(async () => {
    const out: PresetDto[] = [];
    for (const name of presetNames()) {
      try {
        out.push({ name, config: resolveConfig({ preset: name }) });
      } catch (e) {
        console.error(`preset ${name}: ${(e as Error).message}`);
      }
    }
    return out;
  }),
};

/** The run config's JSON Schema, from which the launch form is drawn. */
export const schema = {
  GET: handler(async (): Promise<ConfigSchemaDto> => ({ schema: configJsonSchema() as JsonSchema })),
};

export const workers = {
  GET: handler(async (_req, _p, d) => {
    const here = d.connectedWorkers();
    return listWorkers(d.db, here ? new Set(here) : null, d.leaseMs);
  }),
};

export const health = {
  GET: handler(async (_req, _p, d) => {
    const t0 = performance.now();
    await d.db.prisma.run.count({ where: { status: "running" } });
    // public when sign-in is required: up or not, nothing more until signed in
    if (d.auth.required && !d.principal) return { ok: true };
    const here = d.connectedWorkers();
    const workers = here ? here.length : (await listWorkers(d.db, null, d.leaseMs)).filter((w) => w.status !== "offline").length;
    return { ok: true, engineVersion: ENGINE_VERSION, database: d.db.provider, dbMs: Math.round(performance.now() - t0), workers, ...(d.nodes ? { nodes: await d.nodes() } : {}) };
  }),
};
