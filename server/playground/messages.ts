/** IPC between the dashboard's playground pool (pool.ts) and its engine process (engine-child.ts). */
import type { EpisodeRecord, PlaygroundInput } from "../../lib/contracts/index.ts";

export type PlaygroundRequest =
  /** The first message: the checkpoint folder to load (resolved and checked by the dashboard). */
  | { type: "open"; checkpoint: string; dataRoot: string }
  | { type: "run"; id: number; input: PlaygroundInput };

export type PlaygroundReply =
  | { type: "ready"; backend: string }
  | { type: "result"; id: number; record: EpisodeRecord; ms: number }
  /** `id` absent: the checkpoint did not load (the process exits). */
  | { type: "error"; id?: number; message: string };
