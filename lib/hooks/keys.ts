import type { EpisodesQuery, RunListParams, XAxis } from "../contracts/index.ts";

/** React Query keys: everything about one run lives under ["run", id, …]. */

export type { RunListParams };
export interface MetricsParams {
  keys: readonly string[];
  width: number;
  x: XAxis;
}
export type EpisodesParams = EpisodesQuery & { limit: number };

export const qk = {
  runs: () => ["runs"] as const,
  runList: (p: RunListParams) => ["runs", p] as const,
  run: (id: string) => ["run", id] as const,
  metricsAll: (id: string) => ["run", id, "metrics"] as const,
  metrics: (id: string, p: MetricsParams) => ["run", id, "metrics", p] as const,
  episodesAll: (id: string) => ["run", id, "episodes"] as const,
  episodes: (id: string, p: EpisodesParams) => ["run", id, "episodes", p] as const,
  episode: (id: string, episodeId: string) => ["run", id, "episode", episodeId] as const,
  logsAll: (id: string) => ["run", id, "logs"] as const,
  logs: (id: string, limit: number) => ["run", id, "logs", { limit }] as const,
  presets: () => ["presets"] as const,
  schema: () => ["schema"] as const,
  workers: () => ["workers"] as const,
  queues: () => ["queues"] as const,
};
