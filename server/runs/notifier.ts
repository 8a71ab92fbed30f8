/**
 * How the run services tell the outside world what changed, without knowing who listens: the
 * dashboard server passes an implementation backed by the /ui namespace (server/realtime/ui.ts);
 * tests and scripts use `silentNotifier`.
 */
import type { RunBatchMsg } from "../../lib/contracts/index.ts";

export interface RunNotifier {
  /**
   * These runs' derived state (status, summary, progress, worker, attempt…) changed: publish it.
   * `progress` marks a change of summary and progress only, which may wait a little longer (it
   * comes with every batch; the status changes that a user acts on are published at once).
   */
  changed(runIds: readonly string[], kind?: "status" | "progress"): void;
  /** A batch was committed: deliver it to the run's live subscribers. Called in commit order. */
  batch(msg: RunBatchMsg): void;
}

export const silentNotifier: RunNotifier = { changed: () => {}, batch: () => {} };
