/** Bounds of the agent's knobs: `runAgent` checks them, and the CLI's flags name them. */
export const AGENT_LIMITS = { maxCalls: 64, maxTokens: 4096, k: 64 } as const;
