/**
 * socket.io namespace /workers (trainer workers). A worker connects with `auth: WorkerHello`
 * (a wrong token is refused), is recorded in the Worker table, and while idle is offered queued
 * runs through the atomic claim ("run:assign", acked). Its "run:events" batches are written
 * idempotently and acknowledged after the commit, then published to browsers; "heartbeat"
 * extends its leases. Cancels travel as "run:cancel". After a reconnect the worker resends what
 * was not acknowledged; the (run, seq) idempotency makes that safe.
 */
import crypto from "node:crypto";
import path from "node:path";
import type { Namespace, Socket } from "socket.io";
import { z } from "zod";
import type { EventBatchMsg, EventsAck, RunAssignment } from "../../lib/protocol.ts";
import type { DbHandle } from "../db/client.ts";
import { ingestBatch } from "../runs/ingest.ts";
import { claimRun, expireLeases, heartbeat, queuedRunIds, unclaimRun } from "../runs/lease.ts";
import { parseJson } from "../runs/dto.ts";
import type { UiChannel } from "./ui.ts";

const helloSchema = z.object({
  token: z.string(),
  workerId: z.string().min(1).max(200),
  name: z.string().max(200).default(""),
  host: z.string().max(200).default(""),
  backend: z.string().max(100).default("unknown"),
  device: z.string().max(500).default("unknown"),
  activeRuns: z.array(z.string()).default([]),
});
type Hello = z.infer<typeof helloSchema>;

interface Conn {
  socket: Socket;
  hello: Hello;
  /** Runs this worker executes (as far as this server knows). */
  runs: Set<string>;
  /** An assignment is in flight. */
  offering: boolean;
}

export interface WorkersOptions {
  token: string;
  leaseMs: number;
  /** Where a run's files go: <runsDir>/<runId>. */
  runsDir: string;
  ui: UiChannel;
  onRunsChanged: (ids: string[]) => void;
  log?: (msg: string) => void;
  assignAckMs?: number;
}

export interface WorkersChannel {
  kick(): void;
  cancel(runId: string, workerId: string | null): void;
  connected(): string[];
  /** Runs the lease sweeper once (also on a timer). */
  sweep(): Promise<void>;
  close(): void;
}

function tokenOk(given: string, want: string): boolean {
  const a = crypto.createHash("sha256").update(given).digest();
  const b = crypto.createHash("sha256").update(want).digest();
  return crypto.timingSafeEqual(a, b);
}

export function attachWorkers(nsp: Namespace, h: DbHandle, o: WorkersOptions): WorkersChannel {
  const conns = new Map<string, Conn>();
  const log = o.log ?? ((m: string) => console.log(`[workers] ${m}`));
  const chains = new Map<string, Promise<unknown>>();
  let closed = false;

  /** Serializes work per run, so batches are written and published in order. */
  const perRun = <T>(runId: string, fn: () => Promise<T>): Promise<T> => {
    const prev = chains.get(runId) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    chains.set(runId, tail);
    void tail.then(() => {
      if (chains.get(runId) === tail) chains.delete(runId);
    });
    return next;
  };

  const setWorkerRow = (c: Conn) => {
    const runId = [...c.runs][0] ?? null;
    return h.write((db) =>
      db.worker.updateMany({ where: { id: c.hello.workerId }, data: { status: runId ? "busy" : "idle", runId, lastSeen: new Date() } }),
    );
  };

  // ---- assignment loop -------------------------------------------------------------------
  let assigning = false;
  let again = false;
  const assignLoop = async () => {
    if (assigning) {
      again = true;
      return;
    }
    assigning = true;
    try {
      do {
        again = false;
        for (const c of conns.values()) {
          if (closed || c.offering || c.runs.size || !c.socket.connected) continue;
          const tried: string[] = [];
          for (let k = 0; k < 5; k++) {
            const [id] = await queuedRunIds(h, 1, tried);
            if (!id) break;
            tried.push(id);
            const claimed = await claimRun(h, id, c.hello.workerId, o.leaseMs);
            if (!claimed) continue; // another worker or node won; try the next one
            c.runs.add(id);
            c.offering = true;
            const a: RunAssignment = {
              runId: id,
              config: parseJson<unknown>(claimed.config, null),
              resumeFrom: claimed.resumeFrom,
              nextSeq: claimed.lastSeq + 1,
              attempt: claimed.attempt,
              runDir: path.join(o.runsDir, id),
            };
            log(`run ${id} (attempt ${a.attempt}${a.resumeFrom ? `, resuming from ${a.resumeFrom}` : ""}) → ${c.hello.name || c.hello.workerId}`);
            await setWorkerRow(c).catch(() => undefined);
            o.onRunsChanged([id]);
            offer(c, a);
            break;
          }
        }
      } while (again && !closed);
    } catch (e) {
      log(`assignment failed: ${(e as Error).message}`);
    } finally {
      assigning = false;
    }
  };
  const kick = () => void assignLoop();

  const offer = (c: Conn, a: RunAssignment) => {
    c.socket.timeout(o.assignAckMs ?? 15_000).emit("run:assign", a, (err: Error | null, res: unknown) => {
      c.offering = false;
      const refused = !err && (res === false || (typeof res === "object" && res !== null && (res as { ok?: unknown }).ok === false));
      if (refused) {
        const why = (res as { error?: string })?.error ?? "refused";
        log(`run ${a.runId} refused by ${c.hello.name || c.hello.workerId}: ${why}`);
        c.runs.delete(a.runId);
        void unclaimRun(h, a.runId, c.hello.workerId)
          .then(() => setWorkerRow(c))
          .then(() => {
            o.onRunsChanged([a.runId]);
            kick();
          })
          .catch(() => undefined);
      } else if (err) {
        // no answer: the lease runs out unless the worker heartbeats the run
        log(`run ${a.runId}: no answer to the assignment from ${c.hello.name || c.hello.workerId}`);
      }
    });
  };

  // ---- connections ---------------------------------------------------------------------------
  nsp.use((socket, next) => {
    const p = helloSchema.safeParse(socket.handshake.auth);
    if (!p.success) return next(new Error(`bad hello: ${p.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`));
    if (!tokenOk(p.data.token, o.token)) return next(new Error("unauthorized: wrong worker token"));
    socket.data.hello = p.data;
    next();
  });

  nsp.on("connection", (socket) => {
    const hello = socket.data.hello as Hello;
    const id = hello.workerId;
    const old = conns.get(id);
    if (old && old.socket !== socket) old.socket.disconnect(true);
    const c: Conn = { socket, hello, runs: new Set(hello.activeRuns), offering: false };
    conns.set(id, c);
    log(`worker ${hello.name || id} connected (${hello.backend}, ${hello.device}${hello.activeRuns.length ? `, running ${hello.activeRuns.join(",")}` : ""})`);

    const ready = (async () => {
      const now = new Date();
      const runId = hello.activeRuns[0] ?? null;
      const fields = { name: hello.name || id, backend: hello.backend, device: hello.device, host: hello.host, status: runId ? "busy" : "idle", runId, lastSeen: now };
      await h.write((db) => db.worker.upsert({ where: { id }, create: { id, ...fields }, update: fields }));
      if (hello.activeRuns.length) await onHeartbeat(c, hello.activeRuns);
    })().catch((e: Error) => log(`worker ${id} registration failed: ${e.message}`));

    socket.on("run:events", (msg: EventBatchMsg, ack?: (a: EventsAck) => void) => {
      const reply = typeof ack === "function" ? ack : () => {};
      const runId = typeof msg?.runId === "string" ? msg.runId : "";
      void perRun(runId, async () => {
        await ready;
        const r = await ingestBatch(h, msg, id);
        if (r.stored) {
          o.ui.publish(runId, msg.seq, msg.events);
          o.onRunsChanged([runId]);
        }
        if (r.ended || (r.stop && !r.ok)) {
          if (c.runs.delete(runId)) await setWorkerRow(c).catch(() => undefined);
          kick();
        }
        const a: EventsAck = { ok: r.ok, seq: r.seq };
        if (r.stop) a.stop = true;
        if (r.error) a.error = r.error;
        return a;
      })
        .then(reply)
        .catch((e: Error) => {
          log(`batch ${runId}#${msg?.seq} failed: ${e.message}`);
          reply({ ok: false, seq: typeof msg?.seq === "number" ? msg.seq : 0, error: `server error: ${e.message}` });
        });
    });

    socket.on("heartbeat", (msg: { runs?: unknown }) => {
      const runs = Array.isArray(msg?.runs) ? msg.runs.filter((r): r is string => typeof r === "string") : [];
      void ready.then(() => onHeartbeat(c, runs)).catch((e: Error) => log(`heartbeat from ${id} failed: ${e.message}`));
    });

    socket.on("disconnect", (reason) => {
      if (conns.get(id)?.socket !== socket) return;
      conns.delete(id);
      log(`worker ${hello.name || id} disconnected (${reason})`);
      void h.write((db) => db.worker.updateMany({ where: { id }, data: { status: "offline", lastSeen: new Date() } })).catch(() => undefined);
    });

    void ready.then(kick);
  });

  const onHeartbeat = async (c: Conn, runs: string[]) => {
    const r = await heartbeat(h, c.hello.workerId, runs, o.leaseMs);
    for (const runId of runs) if (!r.stop.includes(runId)) c.runs.add(runId);
    for (const runId of [...r.stop, ...r.cancel]) c.socket.emit("run:cancel", { runId });
    if (r.stop.length) {
      for (const runId of r.stop) c.runs.delete(runId);
      await setWorkerRow(c);
      kick();
    }
  };

  // ---- lease sweeper ---------------------------------------------------------------------------
  let sweeping = false;
  const sweep = async () => {
    if (sweeping || closed) return;
    sweeping = true;
    try {
      const expired = await expireLeases(h);
      for (const e of expired) {
        log(`run ${e.runId}: lease expired on ${e.workerId ?? "?"} → ${e.outcome}${e.resumeFrom ? ` (resume from ${e.resumeFrom})` : ""}`);
        const c = e.workerId ? conns.get(e.workerId) : undefined;
        if (c?.runs.delete(e.runId)) {
          c.socket.emit("run:cancel", { runId: e.runId });
          await setWorkerRow(c).catch(() => undefined);
        }
      }
      if (expired.length) {
        o.onRunsChanged(expired.map((e) => e.runId));
        kick();
      }
    } catch (e) {
      log(`lease sweep failed: ${(e as Error).message}`);
    } finally {
      sweeping = false;
    }
  };

  return {
    kick,
    cancel(runId, workerId) {
      const targets = workerId ? [conns.get(workerId)].filter(Boolean) : [...conns.values()].filter((c) => c.runs.has(runId));
      for (const c of targets) c!.socket.emit("run:cancel", { runId });
    },
    connected: () => [...conns.keys()],
    sweep,
    close() {
      closed = true;
      for (const c of conns.values()) c.socket.disconnect(true);
      conns.clear();
    },
  };
}
