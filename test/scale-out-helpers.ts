/**
 * Two dashboard processes on one PostgreSQL database and workers connected to either, built on the
 * process helpers of test/e2e-helpers.ts, as bundles of the sources (test-bundles.ts: quicker to
 * start, the same code). Used by test/scale-out.test.ts and test/browser-scale-out.test.ts.
 */
import { freePort, tmpDir, waitFor } from "./platform-helpers.ts";
import { Proc, UiStream, api, getRun, startServer, startWorker as startWorkerOn, waitHealthy, type Env } from "./e2e-helpers.ts";
import { serverBundle, workerBundle } from "./test-bundles.ts";

export { Proc, UiStream, api, getRun };

export interface Node extends Env {
  name: string;
  proc: Proc;
}

/** A dashboard process on `dbUrl` without a local worker; `next: false` serves socket.io and /api only. */
export async function startNode(name: string, dbUrl: string, o: { next: boolean; env?: Record<string, string> }): Promise<Node> {
  const port = await freePort();
  const env: Env = { dbUrl, dataDir: tmpDir(`qrag-node-${name}-`), port, url: `http://127.0.0.1:${port}` };
  const proc = startServer(env, { worker: false, next: o.next, env: { QRAG_LEASE_MS: "6000", ...o.env }, bundle: serverBundle() });
  await waitHealthy(env, proc);
  return { ...env, name, proc };
}

export function startWorker(node: Node, name: string): Proc {
  return startWorkerOn(node, name, workerBundle());
}

/** Until every node hears the others through the adapter (its LISTEN connection is up). */
export async function waitNodesMeet(nodes: Node[]): Promise<void> {
  for (const n of nodes) {
    await waitFor(`node ${n.name} to see ${nodes.length} nodes`, async () => (await api<{ nodes?: number }>(n, "GET", "/api/health")).body.nodes === nodes.length, 30_000, 200);
  }
}
