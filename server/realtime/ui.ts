/**
 * socket.io namespace /ui (browsers), the dashboard's RunNotifier. "subscribe" {runId, afterSeq}
 * catches the subscriber up on the stored batches after afterSeq in order, then streams live ones ("run:batch").
 * "runs:state" is broadcast (coalesced) whenever runs change, carrying the runs as the server
 * derived them (status, summary, progress, worker), so browsers merge instead of deriving.
 * Delivery is gapless per subscriber: a batch is emitted only when it is the next sequence number
 * the subscriber has; a hole is filled from the database first, so a browser never receives seq
 * n+1 before n.
 */
import type { Namespace, Socket } from "socket.io";
import type { RunBatchMsg, RunsStateMsg, ServerToUi, UiToServer } from "../../lib/contracts/index.ts";
import { issuesText, subscribeSchema, unsubscribeSchema } from "../../lib/contracts/index.ts";
import type { DbHandle } from "../db/client.ts";
import { batchesAfter } from "../runs/ingest.ts";
import type { RunNotifier } from "../runs/notifier.ts";
import { runDtos } from "../runs/service.ts";

export type UiNamespace = Namespace<UiToServer, ServerToUi>;
type UiSocket = Socket<UiToServer, ServerToUi>;

interface Sub {
  socket: UiSocket;
  runId: string;
  lastSent: number;
  busy: boolean;
  pending: RunBatchMsg[];
  closed: boolean;
}

export interface UiChannel extends RunNotifier {
  close(): void;
}

type Log = (msg: string) => void;

const sendBatch = (s: Sub, b: RunBatchMsg) => {
  s.socket.emit("run:batch", b);
  s.lastSent = b.seq;
};

/** Emits what can be emitted in order from `pending`; false when a hole remains. */
function drain(s: Sub): boolean {
  s.pending.sort((a, b) => a.seq - b.seq);
  while (s.pending.length) {
    const b = s.pending[0];
    if (b.seq <= s.lastSent) s.pending.shift();
    else if (b.seq === s.lastSent + 1) sendBatch(s, s.pending.shift()!);
    else return false;
  }
  return true;
}

/** Catch-up: sends from the database until the subscriber is level with what is stored and pending. */
async function catchUp(h: DbHandle, log: Log, s: Sub): Promise<void> {
  if (s.busy) return;
  s.busy = true;
  const startSent = s.lastSent;
  try {
    for (;;) {
      if (s.closed) return;
      const rows = await batchesAfter(h, s.runId, s.lastSent, 200);
      for (const r of rows) if (!s.closed && r.seq === s.lastSent + 1) sendBatch(s, { runId: s.runId, seq: r.seq, events: r.events });
      if (rows.length === 200) continue;
      if (drain(s)) break;
      // a hole between what is stored and what is pending: it is committed by now, read again
      if (!rows.length) {
        // nothing new stored yet: the missing batch is still being written; wait for publish
        break;
      }
    }
  } catch (e) {
    log(`catch-up of ${s.runId} failed: ${(e as Error).message}`);
  } finally {
    s.busy = false;
  }
  // batches published during the last read: deliver them, or read again if a hole remains and
  // this pass made progress (a hole that is not stored yet is filled by its own publish)
  if (!s.closed && s.pending.length && !drain(s) && s.lastSent > startSent) void catchUp(h, log, s);
}

/**
 * The run-batch subscriptions of every /ui socket, each delivered gaplessly: live batches in seq
 * order, a hole filled from the database first.
 */
function runStreams(h: DbHandle, log: Log) {
  const subs = new Map<string, Set<Sub>>();

  const unsubscribe = (socket: UiSocket, runId: string) => {
    const set = subs.get(runId);
    if (!set) return;
    for (const s of set) {
      if (s.socket === socket) {
        s.closed = true;
        set.delete(s);
      }
    }
    if (!set.size) subs.delete(runId);
    void socket.leave(`run:${runId}`);
  };

  return {
    /** Subscribes the socket to the run after `afterSeq` (replacing an earlier subscription); resolves once caught up. */
    subscribe(socket: UiSocket, runId: string, afterSeq: number): Promise<void> {
      unsubscribe(socket, runId);
      const s: Sub = { socket, runId, lastSent: afterSeq, busy: false, pending: [], closed: false };
      let set = subs.get(s.runId);
      if (!set) subs.set(s.runId, (set = new Set()));
      set.add(s);
      void socket.join(`run:${s.runId}`);
      return catchUp(h, log, s);
    },
    unsubscribe,
    /** Every subscription of a socket that went away. */
    drop(socket: UiSocket): void {
      for (const runId of [...subs.keys()]) unsubscribe(socket, runId);
    },
    /** A stored batch, to each subscriber it is new to. */
    batch({ runId, seq, events }: RunBatchMsg): void {
      const set = subs.get(runId);
      if (!set) return;
      for (const s of set) {
        if (seq <= s.lastSent) continue;
        s.pending.push({ runId, seq, events });
        if (s.busy) continue;
        if (!drain(s)) void catchUp(h, log, s);
      }
    },
    close(): void {
      for (const set of subs.values()) for (const s of set) s.closed = true;
      subs.clear();
    },
  };
}

/**
 * "runs:state" broadcasts. Changed runs are read once per window and published in the order they
 * were read. Status changes go out within `coalesceMs`; progress of streaming runs within
 * `progressMs` (every batch brings some, and a read per batch would cost the live charts' tail
 * latency).
 */
function runsState(nsp: UiNamespace, h: DbHandle, opts: { coalesceMs?: number; progressMs?: number }, log: Log) {
  let changed = new Set<string>();
  let timer: NodeJS.Timeout | null = null;
  let due = Infinity;
  let publishing: Promise<void> = Promise.resolve();
  const flushChanged = () => {
    timer = null;
    due = Infinity;
    if (!changed.size) return;
    const ids = [...changed];
    changed = new Set();
    publishing = publishing.then(async () => {
      try {
        const runs = await runDtos(h, ids);
        const found = new Set(runs.map((r) => r.id));
        const msg: RunsStateMsg = { runs, gone: ids.filter((id) => !found.has(id)) };
        nsp.emit("runs:state", msg);
      } catch (e) {
        log(`runs:state failed: ${(e as Error).message}`);
      }
    });
  };
  const flushWithin = (ms: number) => {
    const at = Date.now() + ms;
    if (at >= due) return;
    if (timer) clearTimeout(timer);
    due = at;
    timer = setTimeout(flushChanged, ms);
  };
  return {
    changed(runIds: readonly string[], kind: "status" | "progress" = "status"): void {
      for (const id of runIds) changed.add(id);
      flushWithin(kind === "status" ? (opts.coalesceMs ?? 150) : (opts.progressMs ?? 1_000));
    },
    /** Publishes what is waiting now. */
    close(): void {
      if (timer) clearTimeout(timer);
      flushChanged();
    },
  };
}

export function attachUi(nsp: UiNamespace, h: DbHandle, opts: { coalesceMs?: number; progressMs?: number } = {}): UiChannel {
  const log = (msg: string) => console.error(`[ui] ${msg}`);
  const streams = runStreams(h, log);
  const state = runsState(nsp, h, opts, log);

  nsp.on("connection", (socket) => {
    socket.on("subscribe", (raw, ack) => {
      const p = subscribeSchema.safeParse(raw);
      if (!p.success) {
        if (typeof ack === "function") ack({ ok: false, error: issuesText(p.error) });
        return;
      }
      void streams.subscribe(socket, p.data.runId, p.data.afterSeq).then(() => {
        if (typeof ack === "function") ack({ ok: true });
      });
    });
    socket.on("unsubscribe", (raw) => {
      const p = unsubscribeSchema.safeParse(raw);
      if (p.success) streams.unsubscribe(socket, p.data.runId);
    });
    socket.on("disconnect", () => streams.drop(socket));
  });

  return {
    batch: (b) => streams.batch(b),
    changed: (runIds, kind) => state.changed(runIds, kind),
    close() {
      state.close();
      streams.close();
    },
  };
}
