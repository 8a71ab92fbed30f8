/**
 * Bounds of the agent's knobs: `runAgent` checks them, and the CLI's flags name them. Samples per
 * length: 10 000 (each up to `maxCalls` + 1 model calls; a run keeps its rows in memory).
 */
export const AGENT_LIMITS = { maxCalls: 64, maxTokens: 4096, k: 64, samples: 10_000 } as const;
