/**
 * Helpers for tests that run train() on a tiny config: collecting its events, reading one
 * metric's series, and a run cancelled once it has reported a given update (the first half of a
 * resume test).
 */
import { train } from "../server/qrag/training/train.ts";
import type { RunConfig } from "../server/qrag/config/config.ts";
import type { EngineEvent } from "../server/qrag/events.ts";

export function collect(): { events: EngineEvent[]; onEvent: (e: EngineEvent) => void } {
  const events: EngineEvent[] = [];
  return { events, onEvent: (e) => events.push(e) };
}

export function series(events: EngineEvent[], key: string): { update: number; step: number; value: number }[] {
  return events.flatMap((e) => (e.type === "metric" && e.key === key ? [{ update: e.update, step: e.step, value: e.value }] : []));
}

/** Trains until qf_loss is reported at update `update` or later, then cancels (which saves a checkpoint). */
export async function trainThenCancel(config: RunConfig, runDir: string, update: number, opts: Parameters<typeof train>[1] = {}) {
  const ac = new AbortController();
  const { events, onEvent } = collect();
  const res = await train(config, {
    ...opts,
    runDir,
    signal: ac.signal,
    onEvent: (e) => {
      onEvent(e);
      if (e.type === "metric" && e.key === "qf_loss" && e.update >= update) ac.abort();
    },
  });
  return { res, events };
}
