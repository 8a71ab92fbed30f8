/**
 * Seeds finished runs and their metric points straight into a dashboard's database (the compare
 * tests and benchmark need many points fast, not training). Configs are the tiny preset's with
 * overrides, so the config diff and grouping see real config trees.
 */
import { openDb } from "../server/db/client.ts";
import { resolveConfig } from "../server/qrag/index.ts";

export interface SeedRun {
  id: string;
  name: string;
  /** Dotted config overrides, e.g. { "envs.task": "qa2", seed: 3 }. */
  set?: Record<string, unknown>;
  /** Metric key → points (step, value); update = step, wall = step / 100. */
  points: Record<string, { step: number; value: number }[]>;
  createdAt?: Date;
}

function setPath(obj: Record<string, unknown>, dotted: string, value: unknown) {
  const parts = dotted.split(".");
  let o = obj;
  for (const p of parts.slice(0, -1)) o = (o[p] ??= {}) as Record<string, unknown>;
  o[parts[parts.length - 1]] = value;
}

export async function seedRuns(databaseUrl: string, runs: readonly SeedRun[]): Promise<void> {
  const h = await openDb(databaseUrl);
  try {
    for (const r of runs) {
      const config = structuredClone(resolveConfig({ preset: "tiny" })) as unknown as Record<string, unknown>;
      for (const [k, v] of Object.entries(r.set ?? {})) setPath(config, k, v);
      const envs = config.envs as { name: string; task?: string };
      const last = Math.max(0, ...Object.values(r.points).flatMap((ps) => ps.map((p) => p.step)));
      await h.prisma.run.create({
        data: {
          id: r.id, name: r.name, status: "completed", config: JSON.stringify(config), preset: "tiny", envName: envs.name, task: envs.task ?? "",
          createdAt: r.createdAt ?? new Date(), startedAt: r.createdAt ?? new Date(), finishedAt: new Date(), progressDone: last, progressTotal: last, attempt: 1,
        },
      });
      const rows = Object.entries(r.points).flatMap(([key, ps]) => ps.map((p) => ({ runId: r.id, key, step: p.step, update: p.step, value: p.value, wall: p.step / 100 })));
      for (let i = 0; i < rows.length; i += 5000) await h.prisma.metricPoint.createMany({ data: rows.slice(i, i + 5000) });
    }
  } finally {
    await h.close();
  }
}
