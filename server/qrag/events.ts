/**
 * The typed events `train()`, `evaluate()` and `sweep()` emit. Their schemas live in the shared
 * contract (lib/contracts/engine-events.ts) because the worker, the server and the browser read
 * them too; the engine imports nothing else from outside server/qrag.
 */
export type {
  EngineEvent, EpisodeRecord, EpisodeStep, EventSink, RunMeta, SweepPoint,
} from "../../lib/contracts/engine-events.ts";
export type { MetricKey } from "../../lib/contracts/metrics.ts";
