/**
 * The dashboard's executors besides its connected workers, from settings: today the Slurm queue
 * when QRAG_EXECUTOR=slurm (none otherwise). Its jobs' workers sign in with worker tokens made per
 * job (server/auth) and connect back to `dashboardUrl`.
 */
import { createWorkerToken, revokeWorkerToken } from "../auth/accounts.ts";
import type { DbHandle } from "../db/client.ts";
import type { RunNotifier } from "../runs/notifier.ts";
import { SLURM_QUEUE } from "../runs/queues.ts";
import { jobTokenName } from "../realtime/workers.ts";
import { ROOT, type Settings } from "../settings.ts";
import { WORKER_ENTRY } from "../worker-entry.ts";
import { SlurmClient } from "./slurm/client.ts";
import { createSlurmExecutor, type SlurmExecutor } from "./slurm/executor.ts";

export function startExecutors(
  h: DbHandle,
  o: { settings: Settings; url: string; notifier: RunNotifier; reapLeases(): Promise<void>; endTokenSockets(tokenId: number): void; log(m: string): void },
): SlurmExecutor | null {
  const s = o.settings.slurm;
  if (!s) return null;
  const client = new SlurmClient({ jobsDir: s.jobsDir, timeoutMs: s.commandTimeoutMs, ...(s.binDir ? { binDir: s.binDir } : {}) });
  o.log(`[slurm] queue "${SLURM_QUEUE}" → partition ${s.partition}; jobs' files in ${s.jobsDir}; polling every ${s.pollMs} ms`);
  return createSlurmExecutor(h, {
    client,
    queue: SLURM_QUEUE,
    partition: s.partition,
    pollMs: s.pollMs,
    maxJobs: s.maxJobs,
    staleSubmitMs: s.staleSubmitMs,
    submitTries: s.submitTries,
    plan: { dashboardUrl: s.dashboardUrl ?? o.url, jobsDir: s.jobsDir, root: ROOT, worker: WORKER_ENTRY, node: process.execPath, dataRoot: o.settings.dataRoot },
    notifier: o.notifier,
    createToken: async (name) => {
      const t = await createWorkerToken(h, name);
      return { id: t.id, secret: t.secret };
    },
    revokeToken: async (id) => {
      await revokeWorkerToken(h, id).catch(() => undefined);
      o.endTokenSockets(id);
    },
    tokenName: jobTokenName,
    reapLeases: o.reapLeases,
    log: (m) => o.log(`[slurm] ${m}`),
  });
}
