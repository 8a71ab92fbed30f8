/**
 * socket.io namespace /workers: authenticates trainer workers and relays their messages to the
 * scheduler (server/runs/scheduler.ts), which decides everything else. A worker connects with
 * `auth: WorkerHello` (a wrong token is refused); "run:events" batches and "heartbeat"s go to the
 * scheduler; the scheduler reaches the worker through the WorkerLink given here.
 */
import crypto from "node:crypto";
import type { Namespace } from "socket.io";
import type { AssignAck, EventsAck, ServerToWorker, WorkerHello, WorkerToServer } from "../../lib/contracts/index.ts";
import { assignAckSchema, heartbeatSchema, issuesText, workerHelloSchema } from "../../lib/contracts/index.ts";
import type { JobBinding, Scheduler, WorkerLink } from "../runs/scheduler.ts";

/** workerTokenId: the per-worker token (server/auth) it signed in with; absent for the shared token. */
export type WorkersNamespace = Namespace<WorkerToServer, ServerToWorker, Record<string, never>, { hello: WorkerHello; workerTokenId?: number; job?: JobBinding }>;

/** The name of the worker token an executor makes for one job of `runId`: its worker may take that run only. */
export const jobTokenName = (runId: string) => `${JOB_TOKEN_PREFIX}${runId}`;
const JOB_TOKEN_PREFIX = "job-of-run:";

/** The room of the sockets that signed in with one worker token (revoking it disconnects them). */
export const workerTokenRoom = (id: number) => `worker-token:${id}`;

function tokenOk(given: string, want: string): boolean {
  const a = crypto.createHash("sha256").update(given).digest();
  const b = crypto.createHash("sha256").update(want).digest();
  return crypto.timingSafeEqual(a, b);
}

/**
 * o.token is the server's own shared token: the local worker it spawns gets it through the
 * environment and it never leaves this machine. Remote workers use per-worker tokens, which
 * o.checkWorkerToken looks up (unrevoked only; stored as sha256).
 */
export function attachWorkers(
  nsp: WorkersNamespace,
  scheduler: Scheduler,
  o: { token: string; checkWorkerToken?: (token: string) => Promise<{ id: number; name: string } | null>; assignAckMs?: number; log?: (m: string) => void },
): void {
  const log = o.log ?? ((m: string) => console.log(`[workers] ${m}`));

  nsp.use((socket, next) => {
    const p = workerHelloSchema.safeParse(socket.handshake.auth);
    if (!p.success) return next(new Error(`bad hello: ${issuesText(p.error)}`));
    socket.data.hello = p.data;
    if (tokenOk(p.data.token, o.token)) return next();
    if (!o.checkWorkerToken) return next(new Error("unauthorized: wrong worker token"));
    o.checkWorkerToken(p.data.token).then(
      (t) => {
        if (!t) return next(new Error("unauthorized: wrong worker token"));
        socket.data.workerTokenId = t.id;
        if (t.name.startsWith(JOB_TOKEN_PREFIX)) socket.data.job = { runId: t.name.slice(JOB_TOKEN_PREFIX.length), tokenId: t.id };
        next();
      },
      () => next(new Error("unauthorized: worker token check failed")),
    );
  });

  // after authentication: one live connection per worker id (see Scheduler.refusal)
  nsp.use((socket, next) => {
    const why = scheduler.refusal(socket.data.hello);
    next(why ? new Error(why) : undefined);
  });

  nsp.on("connection", (socket) => {
    const hello = socket.data.hello;
    if (socket.data.workerTokenId !== undefined) void socket.join(workerTokenRoom(socket.data.workerTokenId));
    const link: WorkerLink = {
      assign: (a) =>
        new Promise<AssignAck | null>((resolve) => {
          socket.timeout(o.assignAckMs ?? 15_000).emit("run:assign", a, (err: Error | null, res: unknown) => {
            if (err) return resolve(null);
            const p = assignAckSchema.safeParse(res);
            resolve(p.success ? p.data : { ok: false, error: "malformed answer to run:assign" });
          });
        }),
      cancel: (runId) => void socket.emit("run:cancel", { runId }),
      disconnect: () => void socket.disconnect(true),
    };
    // registered before any message of this socket is handled (they wait for it)
    void scheduler.connected(hello, link, socket.data.job);

    socket.on("run:events", (msg, ack) => {
      const reply = typeof ack === "function" ? ack : () => {};
      scheduler.receiveBatch(hello.workerId, msg).then(reply, (e: Error) => {
        log(`batch ${String(msg?.runId)}#${String(msg?.seq)} failed: ${e.message}`);
        reply({ ok: false, seq: typeof msg?.seq === "number" ? msg.seq : 0, error: `server error: ${e.message}` } satisfies EventsAck);
      });
    });
    socket.on("heartbeat", (msg) => {
      const p = heartbeatSchema.safeParse(msg);
      if (!p.success) return log(`bad heartbeat from ${hello.workerId}: ${issuesText(p.error)}`);
      scheduler.heartbeat(hello.workerId, p.data.runs).catch((e: Error) => log(`heartbeat from ${hello.workerId} failed: ${e.message}`));
    });
    socket.on("disconnect", (reason) => {
      log(`worker ${hello.name || hello.workerId} socket closed (${reason})`);
      scheduler.disconnected(hello.workerId, link);
    });
  });
}
