/**
 * Where an agent episode's replay stands at a step: the chunks retrieved up to it (the haystack
 * strip's picks before the cursor) — so the strip marks each retrieval as the player reaches it.
 */
import type { AgentStep } from "../contracts/index.ts";

/** Index into pred_idx of the last chunk retrieved at or before `step` (-1: none yet). */
export function agentPickCursor(steps: readonly AgentStep[], step: number): number {
  let n = 0;
  for (let i = 0; i <= step && i < steps.length; i++) if (steps[i].kind === "retrieve") n += steps[i].ids?.length ?? 0;
  return n - 1;
}
