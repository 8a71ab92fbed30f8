/**
 * The trainer worker's entry beside this dashboard, and how node runs it: the local worker
 * (local/local-worker.ts) and a Slurm job's worker (executors/slurm/job-script.ts) run the worker
 * the way the dashboard itself runs. Beside the sources that is server/worker/main.ts under tsx;
 * beside a bundle of the dashboard (server/main.mjs: test/test-bundles.ts, the device pack) it is
 * the worker's bundle, server/worker/main.mjs, run by node alone.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ROOT } from "./settings.ts";

export const WORKER_ENTRY = path.join(ROOT, "server", "worker", `main${path.extname(fileURLToPath(import.meta.url))}`);

/** Node's flags that run `entry` (they go before it): tsx's loader when it is TypeScript. */
export const nodeFlagsFor = (entry: string): string[] => (entry.endsWith(".ts") ? ["--import", "tsx"] : []);
