/**
 * Several dashboard processes on one PostgreSQL database ("nodes" behind one port-forward or load
 * balancer): `@socket.io/postgres-adapter` carries socket.io traffic between them over the
 * database's LISTEN/NOTIFY, so any node serves any browser and workers may connect to any node.
 *
 * What crosses nodes, and how:
 * - "runs:state" is a namespace broadcast: the adapter delivers it to browsers on every node.
 * - Run batches are not broadcasts (each /ui subscriber gets them one by one, gapless, see
 *   realtime/ui.ts), so the node that ingests a batch relays it with serverSideEmit and each node
 *   hands it to its own subscribers. NOTIFY may reorder or (while a node's LISTEN connection
 *   reconnects) lose one; ui.ts already fills any hole from the database, so order and
 *   completeness do not depend on this relay, only latency does.
 * - cancel and kick (new or resumed work) come from REST on any node but concern workers connected
 *   to one: relayed the same way, so they act at once. Workers' heartbeats stay the fallback: a
 *   heartbeat answers a pending cancel from the database, and every node offers queued work to
 *   its workers each HEARTBEAT_MS.
 * The database stays the single source of truth (claims are conditional updates), so a lost
 * message delays, never corrupts.
 */
import { createAdapter } from "@socket.io/postgres-adapter";
import pg from "pg";
import type { Namespace, Server } from "socket.io";
import type { RunBatchMsg } from "../../lib/contracts/index.ts";
import type { RunNotifier } from "../runs/notifier.ts";
import type { Scheduler } from "../runs/scheduler.ts";

/** Messages between nodes (never seen by browsers or workers). */
interface NodeEvents {
  "run:batch": (msg: RunBatchMsg) => void;
  "runs:changed": (runIds: string[], kind: "status" | "progress") => void;
  kick: () => void;
  cancel: (runId: string, workerId: string | null) => void;
}
type NodesNamespace = Namespace<Record<string, never>, Record<string, never>, NodeEvents>;

/** A namespace no client may join: only the adapter's server-to-server messages use it. */
const NODES_NAMESPACE = "/nodes";
const ATTACHMENTS_TABLE = "socket_io_attachments";
const LOCK_KEY = 727_140_002;

export interface Cluster {
  /** `local` plus relaying: batches and changes this node publishes reach the other nodes' browsers. */
  notifier(local: RunNotifier & { changedElsewhere?: (runIds: readonly string[]) => void }): RunNotifier;
  /** Relays REST's kick and cancel to every node's scheduler (the worker may be on another). */
  scheduler(local: Scheduler): Pick<Scheduler, "kick" | "cancel">;
  /** Nodes this one currently hears from, itself included. */
  nodes(): Promise<number>;
  close(): Promise<void>;
}

/**
 * The adapter keeps payloads over NOTIFY's 8000-byte limit in this table. Created here rather than
 * in a migration: it belongs to the adapter (only on PostgreSQL, only when the adapter is on), not
 * to the app's schema. The advisory lock keeps nodes starting together from racing on CREATE.
 */
async function ensureAttachmentsTable(pool: pg.Pool): Promise<void> {
  const c = await pool.connect();
  try {
    await c.query("BEGIN");
    await c.query("SELECT pg_advisory_xact_lock($1)", [LOCK_KEY]);
    await c.query(`CREATE TABLE IF NOT EXISTS ${ATTACHMENTS_TABLE} (id bigserial UNIQUE, created_at timestamptz DEFAULT now(), payload bytea)`);
    await c.query("COMMIT");
  } catch (e) {
    await c.query("ROLLBACK").catch(() => undefined);
    throw e;
  } finally {
    c.release();
  }
}

/** Attaches the PostgreSQL adapter to `io` (call before the namespaces are used). */
export async function attachPostgresAdapter(io: Server, databaseUrl: string, log: (msg: string) => void): Promise<Cluster> {
  // one LISTEN connection plus NOTIFY/attachment queries; kept apart from Prisma's pool
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  pool.on("error", (e) => log(`[nodes] database connection: ${e.message}`));
  await ensureAttachmentsTable(pool);
  io.adapter(createAdapter(pool, { errorHandler: (e) => log(`[nodes] adapter: ${e.message}`) }));

  const nsp = io.of(NODES_NAMESPACE) as NodesNamespace;
  nsp.use((_socket, next) => next(new Error("not a client namespace")));
  const relay = <E extends keyof NodeEvents>(ev: E, ...args: Parameters<NodeEvents[E]>) => {
    try {
      nsp.serverSideEmit(ev, ...args);
    } catch (e) {
      log(`[nodes] relay of ${ev} failed: ${(e as Error).message}`);
    }
  };

  return {
    notifier(local) {
      nsp.on("run:batch", (msg) => local.batch(msg));
      // another node's change: its browsers-wide "runs:state" is published by that node; here only
      // what this node derives from run state (e.g. cached lists) needs to hear of it
      nsp.on("runs:changed", (ids) => local.changedElsewhere?.(ids));
      return {
        batch(msg) {
          local.batch(msg);
          relay("run:batch", msg);
        },
        changed(runIds, kind = "status") {
          local.changed(runIds, kind);
          // progress alone (every batch) is not worth a NOTIFY: other nodes' lists may lag it ≤ 1 s
          if (local.changedElsewhere && kind !== "progress") relay("runs:changed", [...runIds], kind);
        },
      };
    },
    scheduler(local) {
      nsp.on("kick", () => local.kick());
      nsp.on("cancel", (runId, workerId) => local.cancel(runId, workerId));
      return {
        kick() {
          local.kick();
          relay("kick");
        },
        cancel(runId, workerId) {
          local.cancel(runId, workerId);
          relay("cancel", runId, workerId);
        },
      };
    },
    nodes: () => nsp.adapter.serverCount(),
    async close() {
      // io.close() closes the adapters (and their LISTEN client) first
      await pool.end().catch(() => undefined);
    },
  };
}
