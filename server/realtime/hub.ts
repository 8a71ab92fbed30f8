/**
 * The seam between request handlers (which Next bundles separately) and the live parts of the
 * dashboard process (socket.io namespaces, the assignment loop). server/main.ts installs the
 * hooks on globalThis; without them (tests of the DB layer, `next start` alone) they do nothing,
 * and workers still learn of a cancel from the next acknowledgement or heartbeat.
 */
import { LEASE_MS } from "../../lib/protocol.ts";

export interface PlatformHooks {
  /** A run's status, summary or progress changed: tell browsers ("runs:changed"). */
  runsChanged(runIds: string[]): void;
  /** Forward a cancel to the worker executing the run. */
  cancelOnWorker(runId: string, workerId: string | null): void;
  /** Queued work appeared: offer it to idle workers. */
  kick(): void;
  /** Workers currently connected to this node (for /api/workers and /api/health). */
  connectedWorkers(): string[];
}

export interface PlatformSettings {
  dataDir: string;
  leaseMs: number;
}

const noop: PlatformHooks = { runsChanged: () => {}, cancelOnWorker: () => {}, kick: () => {}, connectedWorkers: () => [] };
const g = globalThis as unknown as { __qragHooks?: PlatformHooks; __qragSettings?: PlatformSettings };

export function setPlatform(hooks: PlatformHooks | undefined, settings?: PlatformSettings): void {
  g.__qragHooks = hooks;
  if (settings) g.__qragSettings = settings;
}

export function hooks(): PlatformHooks {
  return g.__qragHooks ?? noop;
}

export function settings(): PlatformSettings {
  return g.__qragSettings ?? { dataDir: process.env.QRAG_DATA_DIR ?? "data", leaseMs: LEASE_MS };
}

/** True inside the dashboard process (the hooks are installed), false in Next alone or tests. */
export function hasPlatform(): boolean {
  return g.__qragHooks !== undefined;
}
