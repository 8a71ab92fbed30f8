/**
 * Ends the engine child within `everyMs` of its worker's death, even while its main thread is
 * busy. The IPC "disconnect" event reaches a child only when its event loop turns, which a
 * training iteration on the CPU can hold off for seconds (a killed worker's child outlived it by
 * 1.9–4 s). A watcher thread sees the parent change — a dead parent's children are re-parented at
 * once, even before it is reaped — and kills the process: the same "no checkpoint after a dead
 * worker" exit as the disconnect handler, only sooner.
 */
import { Worker } from "node:worker_threads";

const WATCHER = `
const { workerData: w } = require("node:worker_threads");
setInterval(() => {
  if (process.ppid !== w.ppid) process.kill(w.pid, "SIGKILL");
}, w.everyMs);
`;

/**
 * Starts the watcher; resolves once it runs. Await it before any long computation: a thread
 * does not start while its parent's main thread is busy.
 */
export function exitWithParent(everyMs = 100): Promise<void> {
  const t = new Worker(WATCHER, { eval: true, workerData: { ppid: process.ppid, pid: process.pid, everyMs } });
  return new Promise((resolve, reject) => {
    t.once("error", reject);
    t.once("online", () => {
      t.unref(); // never what keeps the process alive
      resolve();
    });
  });
}
