/**
 * Two dashboard processes on one PostgreSQL database and workers connected to either: spawning
 * them (server/main.ts, worker/main.ts), their REST calls, and a /ui socket standing in for a
 * browser. Used by test/scale-out.test.ts and test/browser-scale-out.test.ts.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { io, type Socket } from "socket.io-client";
import type { EngineEvent, RunBatchMsg, RunDetailDto } from "../lib/contracts/index.ts";
import { GiveUp, ROOT, freePort, tmpDir, waitFor } from "./platform-helpers.ts";

export const TOKEN = "scale-out-token";

export class Proc {
  readonly lines: string[] = [];
  readonly exited: Promise<number | null>;
  constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    const take = (b: Buffer) => {
      for (const l of b.toString().split("\n")) if (l.trim()) this.lines.push(l);
      if (this.lines.length > 400) this.lines.splice(0, this.lines.length - 400);
      if (process.env.QRAG_TEST_VERBOSE) process.stderr.write(b.toString().replace(/^/gm, `[${name}] `));
    };
    child.stdout?.on("data", take);
    child.stderr?.on("data", take);
    this.exited = new Promise((r) => child.once("exit", (code) => r(code)));
  }
  alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  tail(n = 40): string {
    return `--- ${this.name} (last ${n} lines)\n${this.lines.slice(-n).join("\n")}`;
  }
  async stop(): Promise<void> {
    if (!this.alive()) return;
    this.child.kill("SIGTERM");
    const t = setTimeout(() => this.alive() && this.child.kill("SIGKILL"), 15_000);
    await this.exited;
    clearTimeout(t);
  }
}

export interface Node {
  name: string;
  url: string;
  proc: Proc;
}

/** A dashboard process on `dbUrl` without a local worker; `next: false` serves socket.io and /api only. */
export async function startNode(name: string, dbUrl: string, o: { next: boolean; env?: Record<string, string> }): Promise<Node> {
  const port = await freePort();
  const args = ["--import", "tsx", path.join(ROOT, "server/main.ts"), "--no-worker", ...(o.next ? [] : ["--no-next"])];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: "production",
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_URL: dbUrl,
      QRAG_DATA_DIR: tmpDir(`qrag-node-${name}-`),
      QRAG_WORKER_TOKEN: TOKEN,
      QRAG_LEASE_MS: "6000",
      NEXT_TELEMETRY_DISABLED: "1",
      ...o.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const node = { name, url: `http://127.0.0.1:${port}`, proc: new Proc(`node:${name}`, child) };
  await waitFor(
    `node ${name} on ${node.url}`,
    async () => {
      if (!node.proc.alive()) throw new GiveUp(`node ${name} exited\n${node.proc.tail()}`);
      return (await fetch(`${node.url}/api/health`).catch(() => null))?.ok;
    },
    90_000,
    200,
  );
  return node;
}

export function startWorker(node: Node, name: string): Proc {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(ROOT, "server/worker/main.ts"), "--url", node.url, "--token", TOKEN, "--name", name, "--data-dir", tmpDir(`qrag-worker-${name}-`)],
    { cwd: ROOT, env: { ...process.env, NODE_ENV: "production", QRAG_WASM_THREADS: "1" }, stdio: ["ignore", "pipe", "pipe"] },
  );
  return new Proc(`worker:${name}`, child);
}

/** REST on a node; non-GET requests carry JSON and the node's own Origin (server/http/same-origin.ts). */
export async function api<T>(node: Node, method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${node.url}${p}`, {
    method,
    headers: method === "GET" ? {} : { "content-type": "application/json", origin: node.url },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

export const getRun = async (node: Node, id: string) => (await api<RunDetailDto>(node, "GET", `/api/runs/${id}`)).body;

/** Until every node hears the others through the adapter (its LISTEN connection is up). */
export async function waitNodesMeet(nodes: Node[]): Promise<void> {
  for (const n of nodes) {
    await waitFor(`node ${n.name} to see ${nodes.length} nodes`, async () => (await api<{ nodes?: number }>(n, "GET", "/api/health")).body.nodes === nodes.length, 30_000, 200);
  }
}

/** A /ui client: records each run's batches and any seq that is not the next one (gap or duplicate). */
export class UiStream {
  readonly socket: Socket;
  readonly batches = new Map<string, RunBatchMsg[]>();
  readonly violations: string[] = [];
  private readonly from = new Map<string, number>();
  constructor(node: Node) {
    this.socket = io(`${node.url}/ui`, { transports: ["websocket"], reconnection: false });
    this.socket.on("run:batch", (b: RunBatchMsg) => {
      const list = this.batches.get(b.runId) ?? [];
      const last = list.at(-1)?.seq ?? this.from.get(b.runId) ?? 0;
      if (b.seq !== last + 1) this.violations.push(`run ${b.runId}: got seq ${b.seq} after ${last}`);
      list.push(b);
      this.batches.set(b.runId, list);
    });
  }
  async subscribe(runId: string, afterSeq = 0): Promise<void> {
    this.from.set(runId, afterSeq);
    await waitFor("the /ui socket", () => this.socket.connected, 20_000, 50);
    await this.socket.timeout(20_000).emitWithAck("subscribe", { runId, afterSeq });
  }
  events(runId: string): EngineEvent[] {
    return (this.batches.get(runId) ?? []).flatMap((b) => b.events);
  }
  lastSeq(runId: string): number {
    return this.batches.get(runId)?.at(-1)?.seq ?? this.from.get(runId) ?? 0;
  }
  close(): void {
    this.socket.close();
  }
}
