/**
 * A tiny trained run inside a dashboard's data folder, as the playground finds one: `train()` of
 * the `tiny` preset, shortened (its model, not its quality, matters here: ≈ 2 s), into
 * <dataDir>/runs/<runId>, and the Run and Checkpoint rows its worker's events would have stored
 * (one row per checkpoint event).
 */
import path from "node:path";
import { openDb } from "../server/db/client.ts";
import { resolveConfig, type RunConfig } from "../server/qrag/index.ts";
import { train } from "../server/qrag/training/train.ts";
import type { EngineEvent } from "../server/qrag/events.ts";

export async function tinyRunInto(dataDir: string, databaseUrl: string, runId: string, preset = "tiny"): Promise<{ config: RunConfig; runDir: string; best: string; last: string }> {
  const config = resolveConfig({ preset, overrides: ["steps_count=24", "eval_interval=12", "eval_episodes=8"] });
  const checkpoints: Extract<EngineEvent, { type: "checkpoint" }>[] = [];
  const res = await train(config, { runDir: path.join(dataDir, "runs", runId), onEvent: (e) => void (e.type === "checkpoint" && checkpoints.push(e)) });
  const db = await openDb(databaseUrl);
  try {
    await db.prisma.run.create({ data: { id: runId, name: runId, status: "completed", config: JSON.stringify(config), preset, envName: config.envs.name, task: "qa1" } });
    for (const c of checkpoints) {
      await db.prisma.checkpoint.upsert({
        where: { runId_update_best: { runId, update: c.update, best: c.best } },
        create: { runId, step: c.step, update: c.update, path: c.path, best: c.best, evalReturn: c.evalReturn ?? null },
        update: { step: c.step, path: c.path, evalReturn: c.evalReturn ?? null },
      });
    }
  } finally {
    await db.close();
  }
  return { config, runDir: res.runDir, best: path.join(res.runDir, "checkpoints", "best"), last: path.join(res.runDir, "checkpoints", "last") };
}
