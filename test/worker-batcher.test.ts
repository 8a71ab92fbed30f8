/**
 * EventBatcher against a real socket.io server on a loopback port (the /workers side written here,
 * minimally): batches arrive in seq order without gaps, within the batch window of their events; dropped
 * acks, `ok: false`, a killed transport and a server restart on the same port lose nothing and
 * store every seq exactly once; `stop` acks reach onStop.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Server, type Socket as ServerSocket } from "socket.io";
import { io as connect, type Socket } from "socket.io-client";
import { WORKER_NAMESPACE, type EngineEvent, type EventBatchMsg, type EventsAck } from "../lib/contracts/index.ts";
import { EventBatcher } from "../server/worker/batcher.ts";
import type { LogLevel } from "../server/worker/log.ts";
import { waitFor } from "./platform-helpers.ts";

type AckPolicy = (msg: EventBatchMsg, reception: number) => EventsAck | "drop";

/** The dashboard's /workers side, minimally: an idempotent store on (runId, seq) that survives restarts. */
class Dashboard {
  port = 0;
  private io: Server | null = null;
  /** seq → JSON of the events, per run (the "database"). */
  readonly store = new Map<number, string>();
  readonly receptions: { seq: number; at: number }[] = [];
  readonly violations: string[] = [];
  lastSeq: number;
  policy: AckPolicy = (msg) => ({ ok: true, seq: msg.seq });

  constructor(readonly firstSeq: number) {
    this.lastSeq = firstSeq - 1;
  }

  async start(): Promise<void> {
    const server = http.createServer();
    const io = new Server(server);
    io.of(WORKER_NAMESPACE).on("connection", (socket: ServerSocket) => {
      socket.on("run:events", (msg: EventBatchMsg, ack: (a: EventsAck) => void) => {
        const at = performance.now();
        const n = this.receptions.filter((r) => r.seq === msg.seq).length;
        this.receptions.push({ seq: msg.seq, at });
        const body = JSON.stringify(msg.events);
        if (msg.seq > this.lastSeq + 1) this.violations.push(`seq ${msg.seq} arrived before ${this.lastSeq + 1} was stored`);
        const reply = this.policy(msg, n);
        if (reply === "drop") return;
        if (reply.ok && msg.seq <= this.lastSeq + 1) {
          const prev = this.store.get(msg.seq);
          if (prev !== undefined && prev !== body) this.violations.push(`seq ${msg.seq} resent with different events`);
          this.store.set(msg.seq, body);
          this.lastSeq = Math.max(this.lastSeq, msg.seq);
        }
        ack(reply);
      });
    });
    await new Promise<void>((r) => server.listen(this.port, "127.0.0.1", () => r()));
    this.port = (server.address() as AddressInfo).port;
    this.io = io;
  }

  /** Closes every worker's transport (the client sees "transport close" and reconnects). */
  dropConnections(): void {
    for (const s of this.io!.of(WORKER_NAMESPACE).sockets.values()) s.conn.close();
  }

  async stop(): Promise<void> {
    const io = this.io;
    if (!io) return;
    this.io = null;
    await new Promise<void>((r) => io.close(() => r()));
  }

  /** Stored events in seq order; asserts the stored seqs are gapless from firstSeq. */
  events(): EngineEvent[] {
    const seqs = [...this.store.keys()].sort((a, b) => a - b);
    assert.deepEqual(seqs, seqs.map((_, i) => this.firstSeq + i), "stored seqs gapless from nextSeq");
    return seqs.flatMap((s) => JSON.parse(this.store.get(s)!) as EngineEvent[]);
  }
}

function client(port: number): Socket {
  return connect(`http://127.0.0.1:${port}${WORKER_NAMESPACE}`, {
    transports: ["websocket"],
    reconnectionDelay: 50,
    reconnectionDelayMax: 100,
    randomizationFactor: 0,
  });
}

/** waitFor (platform-helpers.ts) on a condition, polled every 5 ms. */
const until = (cond: () => boolean, ms: number, what: string): Promise<boolean> => waitFor(what, () => cond(), ms, 5);

const logEvent = (i: number): EngineEvent => ({ type: "log", level: "info", message: `event ${i}` });
const runEnd: EngineEvent = { type: "run_end", status: "completed", step: 1, update: 1 };

/** Pushes one event every `everyMs` until stopped; returns the pushed events. */
function producer(b: EventBatcher, everyMs: number) {
  const pushed: EngineEvent[] = [];
  const times: number[] = [];
  const timer = setInterval(() => {
    const e = logEvent(pushed.length);
    pushed.push(e);
    times.push(performance.now());
    b.push(e);
  }, everyMs);
  return { pushed, times, stop: () => clearInterval(timer) };
}

// A wide window makes the cut times measurable on a busy machine; the default is shorter.
const WINDOW = 250;

test("batches arrive in seq order from nextSeq, within the batch window of their events; run_end flushes at once", async () => {
  const dash = new Dashboard(7);
  await dash.start();
  const sock = client(dash.port);
  const b = new EventBatcher({ socket: sock, runId: "r1", nextSeq: 7, batchMs: WINDOW });
  try {
    await until(() => sock.connected, 5_000, "connect");
    const p = producer(b, 15);
    await until(() => p.pushed.length >= 70, 10_000, "70 events");
    p.stop();
    await until(() => b.pendingEvents === 0, 5_000, "all acknowledged");
    // latency: each event reached the server at most WINDOW (+ scheduling slack) after its push
    const slack = 150;
    let k = 0;
    const seqs = [...dash.store.keys()].sort((x, y) => x - y);
    for (const s of seqs) {
      const arrival = dash.receptions.find((r) => r.seq === s)!.at;
      for (let n = (JSON.parse(dash.store.get(s)!) as EngineEvent[]).length; n > 0; n--, k++) {
        const lat = arrival - p.times[k];
        assert.ok(lat <= WINDOW + slack, `event ${k} took ${lat.toFixed(0)} ms to reach the server`);
      }
    }
    // at most one batch per WINDOW: ~70 × 15 ms ≈ 1 s of events → about 4–5 batches
    const span = p.times.at(-1)! - p.times[0];
    assert.ok(seqs.length <= Math.ceil(span / WINDOW) + 2, `${seqs.length} batches for ${span.toFixed(0)} ms of events`);
    assert.ok(seqs.length >= 3, `${seqs.length} batches`);

    const t0 = performance.now();
    b.push(runEnd);
    await b.drain();
    const endArrival = dash.receptions.at(-1)!.at;
    assert.ok(endArrival - t0 < WINDOW / 2, `run_end batch sent after ${(endArrival - t0).toFixed(0)} ms`);
    assert.deepEqual(dash.events(), [...p.pushed, runEnd]);
    assert.deepEqual(dash.violations, []);
    assert.equal(b.lastAckedSeq, dash.lastSeq);
  } finally {
    b.close();
    sock.close();
    await dash.stop();
  }
});

test("dropped acks and ok:false are retried; one batch in flight; each seq stored once", async () => {
  const dash = new Dashboard(1);
  dash.policy = (msg, n) => {
    if (msg.seq === 2 && n < 2) return "drop"; // ack lost twice → resent on ack timeout
    if (msg.seq === 4 && n === 0) return { ok: false, seq: msg.seq, error: "database busy" };
    return { ok: true, seq: msg.seq };
  };
  await dash.start();
  const sock = client(dash.port);
  const logs: string[] = [];
  const b = new EventBatcher({
    socket: sock, runId: "r2", nextSeq: 1, batchMs: 40, ackTimeoutMs: 150, retryDelayMs: 30,
    log: (_l: LogLevel, m: string) => logs.push(m),
  });
  try {
    await until(() => sock.connected, 5_000, "connect");
    const p = producer(b, 10);
    await until(() => dash.lastSeq >= 6, 10_000, "6 batches stored");
    p.stop();
    b.push(runEnd);
    await b.drain();
    assert.deepEqual(dash.events(), [...p.pushed, runEnd]);
    assert.deepEqual(dash.violations, []);
    assert.equal(dash.receptions.filter((r) => r.seq === 2).length, 3, "seq 2 sent three times");
    assert.equal(dash.receptions.filter((r) => r.seq === 4).length, 2, "seq 4 resent after ok:false");
    // strictly one in flight: seq n+1 is first received only after seq n's last reception
    for (let s = 2; s <= dash.lastSeq; s++) {
      const lastOfPrev = Math.max(...dash.receptions.filter((r) => r.seq === s - 1).map((r) => r.at));
      const firstOfThis = Math.min(...dash.receptions.filter((r) => r.seq === s).map((r) => r.at));
      assert.ok(firstOfThis >= lastOfPrev, `seq ${s} sent before seq ${s - 1} was acknowledged`);
    }
    assert.ok(logs.some((m) => /no ack for batch 2/.test(m)), "ack timeout logged");
    assert.ok(logs.some((m) => /database busy/.test(m)), "ok:false logged");
  } finally {
    b.close();
    sock.close();
    await dash.stop();
  }
});

test("a killed transport and a dashboard restart on the same port lose nothing", async () => {
  const dash = new Dashboard(3);
  await dash.start();
  const sock = client(dash.port);
  let connects = 0;
  sock.on("connect", () => connects++);
  const logs: string[] = [];
  const b = new EventBatcher({
    socket: sock, runId: "r3", nextSeq: 3, batchMs: 30, ackTimeoutMs: 2_000, warnBacklogBytes: 800,
    log: (_l: LogLevel, m: string) => logs.push(m),
  });
  try {
    await until(() => connects === 1, 5_000, "connect");
    const p = producer(b, 5);
    await until(() => dash.lastSeq >= 5, 5_000, "3 batches stored");

    dash.dropConnections();
    await until(() => connects === 2, 5_000, "reconnect after transport close");
    const before = dash.lastSeq;
    await until(() => dash.lastSeq >= before + 3, 5_000, "batches after reconnect");

    await dash.stop();
    await until(() => !sock.connected, 5_000, "disconnect on dashboard stop");
    const backlogFrom = p.pushed.length;
    await until(() => p.pushed.length >= backlogFrom + 40, 5_000, "events produced while the dashboard is down");
    p.stop();
    // let the cut timer freeze the tail into a batch; nothing is pushed after this, so only the
    // batcher's reconnect handling can deliver the backlog
    assert.ok(b.pendingEvents >= 40, `backlog kept: ${b.pendingEvents}`);
    // a numbered batch waits (the rest coalesces behind it), no cut timer is armed, and nothing is
    // pushed from here on: only the batcher's reconnect handling can deliver the backlog
    assert.ok(b.pendingEvents > b.bufferedEvents, "an unacknowledged batch is kept");
    await dash.start(); // same port: Dashboard keeps it
    await until(() => connects === 3, 5_000, "reconnect after dashboard restart");
    await until(() => b.pendingEvents === 0, 5_000, "backlog delivered without new events");
    assert.ok(dash.lastSeq > before + 3);

    b.push(runEnd);
    await b.drain();
    assert.deepEqual(dash.events(), [...p.pushed, runEnd]);
    assert.deepEqual(dash.violations, []);
    assert.ok(logs.some((m) => /wait for the dashboard's acknowledgement/.test(m)), "backlog warning logged");
  } finally {
    b.close();
    sock.close();
    await dash.stop();
  }
});

test("a stop ack calls onStop; stop with ok:false discards the rest and drain resolves", async () => {
  const dash = new Dashboard(1);
  let refuse = false;
  dash.policy = (msg) => (refuse ? { ok: false, seq: msg.seq, stop: true, error: "run reassigned" } : { ok: true, seq: msg.seq, stop: true });
  await dash.start();
  const sock = client(dash.port);
  const stops: EventsAck[] = [];
  const b = new EventBatcher({ socket: sock, runId: "r4", nextSeq: 1, batchMs: 20, onStop: (a) => stops.push(a) });
  try {
    await until(() => sock.connected, 5_000, "connect");
    b.push(logEvent(0));
    await b.drain();
    assert.equal(stops.length, 1, "onStop called");
    assert.equal(b.isRejected, false);
    refuse = true;
    b.push(logEvent(1));
    b.push(runEnd);
    await b.drain();
    assert.equal(stops.length, 1, "onStop called once");
    assert.equal(b.isRejected, true);
    assert.equal(b.pendingEvents, 0);
    assert.equal(dash.store.size, 1);
  } finally {
    b.close();
    sock.close();
    await dash.stop();
  }
});
