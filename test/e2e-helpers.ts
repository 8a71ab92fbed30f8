/**
 * Real processes for end-to-end and crash tests: the dashboard server (server/main.ts) and trainer
 * workers (server/worker/main.ts) as child processes with their output kept, REST calls, and a
 * socket.io /ui client standing in for the browser that records every batch and any sequence gap.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { io, type Socket } from "socket.io-client";
import type { EngineEvent, MetricsDto, RunBatchMsg, RunDetailDto } from "../lib/contracts/index.ts";
import { GiveUp, ROOT, waitFor } from "./platform-helpers.ts";
import { BUNDLE_ENV } from "./test-bundles.ts";

export const TOKEN = "e2e-token";
export const LEASE_MS = 4_000;
const RUN_TIMEOUT = 120_000;



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
  get pid(): number {
    return this.child.pid!;
  }
  alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  tail(n = 40): string {
    return `--- ${this.name} (last ${n} lines)\n${this.lines.slice(-n).join("\n")}`;
  }
  kill9(): Promise<number | null> {
    if (this.alive()) process.kill(this.pid, "SIGKILL");
    return this.exited;
  }
  async stop(): Promise<void> {
    if (!this.alive()) return;
    this.child.kill("SIGTERM");
    const t = setTimeout(() => this.alive() && this.child.kill("SIGKILL"), 15_000);
    await this.exited;
    clearTimeout(t);
  }
}

export interface Env {
  dbUrl: string;
  dataDir: string;
  port: number;
  url: string;
}

/** `bundle`: test-bundles.ts serverBundle() (the same code, quicker to start; its local worker a bundle too). */
export function startServer(env: Env, opts: { worker: boolean; next?: boolean; env?: Record<string, string>; bundle?: string }): Proc {
  const entry = opts.bundle ? [opts.bundle] : ["--import", "tsx", path.join(ROOT, "server/main.ts")];
  const args = [...entry, ...(opts.worker ? [] : ["--no-worker"]), ...(opts.next === false ? ["--no-next"] : [])];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: "production",
      PORT: String(env.port),
      HOST: "127.0.0.1",
      DATABASE_URL: env.dbUrl,
      QRAG_DATA_DIR: env.dataDir,
      QRAG_WORKER_TOKEN: TOKEN,
      QRAG_LEASE_MS: String(LEASE_MS),
      NEXT_TELEMETRY_DISABLED: "1",
      ...(opts.bundle ? BUNDLE_ENV : {}),
      ...opts.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new Proc(`server:${env.port}`, child);
}

/** A worker on the sources (tsx), or on `bundle` (test-bundles.ts workerBundle(): the same code, quicker to start). */
export function startWorker(env: Pick<Env, "url" | "dataDir">, name: string, bundle?: string): Proc {
  const entry = bundle ? [bundle] : ["--import", "tsx", path.join(ROOT, "server/worker/main.ts")];
  const child = spawn(
    process.execPath,
    [...entry, "--url", env.url, "--token", TOKEN, "--name", name, "--data-dir", path.join(env.dataDir, `worker-${name}`)],
    { cwd: ROOT, env: { ...process.env, NODE_ENV: "production", ...(bundle ? BUNDLE_ENV : {}) }, stdio: ["ignore", "pipe", "pipe"] },
  );
  return new Proc(`worker:${name}`, child);
}

export async function api<T>(env: Pick<Env, "url">, method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${env.url}${p}`, {
    method,
    // a browser's mutation: JSON with the dashboard's own Origin (server/http/same-origin.ts)
    headers: method === "GET" ? {} : { "content-type": "application/json", origin: env.url },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

export async function waitHealthy(env: Env, server: Proc): Promise<void> {
  await waitFor(
    `the server on ${env.url}`,
    async () => {
      if (!server.alive()) throw new GiveUp(`server exited\n${server.tail()}`);
      return (await fetch(`${env.url}/api/health`)).ok;
    },
    90_000,
    200,
  );
}

export const getRun = async (env: Pick<Env, "url">, id: string) => (await api<RunDetailDto>(env, "GET", `/api/runs/${id}`)).body;

export async function waitStatus(env: Env, id: string, want: string[], procs: Proc[], timeout = RUN_TIMEOUT): Promise<RunDetailDto> {
  try {
    return await waitFor(`run ${id} to be ${want.join("|")}`, async () => {
      const r = await getRun(env, id);
      return want.includes(r.status) ? r : null;
    }, timeout, 200);
  } catch (e) {
    const r = await getRun(env, id).catch(() => null);
    throw new Error(`${(e as Error).message}; run is ${JSON.stringify(r && { status: r.status, error: r.error, attempt: r.attempt, lastSeq: r.lastSeq })}\n${procs.map((p) => p.tail()).join("\n")}`);
  }
}

// ---- the browser stand-in ------------------------------------------------------------------------

export class UiStream {
  readonly socket: Socket;
  readonly batches = new Map<string, RunBatchMsg[]>();
  readonly violations: string[] = [];
  changed = 0;
  constructor(env: Pick<Env, "url">) {
    this.socket = io(`${env.url}/ui`, { transports: ["websocket"], reconnection: false });
    this.socket.on("run:batch", (b: RunBatchMsg) => {
      const list = this.batches.get(b.runId) ?? [];
      const last = list.at(-1)?.seq ?? this.from.get(b.runId) ?? 0;
      if (b.seq !== last + 1) this.violations.push(`run ${b.runId}: got seq ${b.seq} after ${last}`);
      list.push(b);
      this.batches.set(b.runId, list);
    });
    this.socket.on("runs:state", () => this.changed++);
  }
  private readonly from = new Map<string, number>();
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

export type Pt = { key: string; step: number; value: number };
/** Prisma 6's engine round-trips doubles to about 16 significant digits. */
export const close = (a: number | undefined, b: number) => a !== undefined && Math.abs(a - b) <= 1e-12 * Math.max(1, Math.abs(b));
export const metricsOf = (events: EngineEvent[]): Pt[] => events.flatMap((e) => (e.type === "metric" ? [{ key: e.key, step: e.step, value: e.value }] : []));
export const ptKey = (p: { key: string; step: number }) => `${p.key}@${p.step}`;

export async function storedPoints(env: Env, id: string): Promise<Pt[]> {
  const m = (await api<MetricsDto>(env, "GET", `/api/runs/${id}/metrics?width=20000`)).body;
  return Object.entries(m.series).flatMap(([key, pts]) => pts.map((p) => ({ key, step: p.step, value: p.value })));
}

export function assertIncreasing(points: Pt[], key: string): number[] {
  const steps = points.filter((p) => p.key === key).map((p) => p.step);
  for (let i = 1; i < steps.length; i++) assert.ok(steps[i] > steps[i - 1], `${key} steps increase: ${steps.join(",")}`);
  return steps;
}

