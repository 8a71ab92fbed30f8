/**
 * The platform's one contract: REST inputs (rest.ts) and answers (dto.ts), socket.io messages of
 * /workers and /ui (sockets.ts), the engine's events (engine-events.ts) and its metric keys
 * (metrics.ts). Browser code, the
 * server and the worker import from here; the browser imports nothing of server/.
 */
export * from "./metrics.ts";
export * from "./engine-events.ts";
export * from "./dto.ts";
export * from "./rest.ts";
export * from "./queues.ts";
export * from "./run-columns.ts";
export * from "./sockets.ts";
export * from "./retrieval-metrics.ts";
export * from "./sweeps.ts";
export * from "./episode-chunks.ts";
export * from "./dashboards.ts";
export * from "./import.ts";
export * from "./data-files.ts";
export * from "./auth.ts";
export * from "./short-text.ts";
export * from "./series-buckets.ts";
export * from "./llm-agent.ts";
export * from "./playground.ts";
