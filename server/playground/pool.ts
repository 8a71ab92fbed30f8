/**
 * The playground's engine processes, in the dashboard. The dashboard never loads tfjs, so each
 * checkpoint in use gets one forked engine process (engine-child.ts) that loads it once and is
 * kept warm for the next question: a warm episode over a 10K-token document is well under a
 * second, a cold one pays the process start and the checkpoint load. Bounded: at most
 * `maxProcesses` processes (an idle one is ended to make room for another checkpoint, else the
 * caller hears "busy"), at most `maxWaiting` requests queued on one, each request timed out (the
 * process is killed: a stuck episode never holds the slot), and a process idle for `idleMs` ends.
 * A checkpoint folder rewritten since its process loaded it ("best" after a better eval) gets a
 * fresh process: the key is the folder and its files' modification times.
 */
import { fork, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { EpisodeRecord, PlaygroundInput } from "../../lib/contracts/index.ts";
import { checkpointFiles } from "../qrag/index.ts";
import type { PlaygroundReply, PlaygroundRequest } from "./messages.ts";

const ENTRY = fileURLToPath(new URL(`./engine-child${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url));

export interface PoolOptions {
  maxProcesses?: number;
  maxWaiting?: number;
  /** One request, the checkpoint load of a cold process included. */
  timeoutMs?: number;
  idleMs?: number;
  dataRoot: string;
  log?: (m: string) => void;
}

/** Why a playground request failed: `status` is the HTTP answer (503 busy, 504 timed out, 500 engine). */
export class PlaygroundError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export interface PlaygroundRun {
  record: EpisodeRecord;
  /** The engine's episode alone. */
  ms: number;
  warm: boolean;
}

export interface PlaygroundPool {
  /** A greedy episode of the checkpoint in folder `dir` (resolved and checked by the caller). */
  run(dir: string, input: PlaygroundInput): Promise<PlaygroundRun>;
  /** Engine processes alive now (tests, the bench). */
  size(): number;
  close(): Promise<void>;
}

interface Entry {
  key: string;
  child: ChildProcess;
  ready: Promise<void>;
  /** Rejects when the process exits (it is never expected to on its own). */
  gone: Promise<never>;
  /** Requests queued or running on it. */
  pending: number;
  /** The tail of its request chain (one at a time). */
  chain: Promise<unknown>;
  idle?: NodeJS.Timeout;
  served: number;
  exited: boolean;
}

/** The folder and when its files last changed: a rewritten checkpoint is another key. */
function keyOf(dir: string): string {
  const times = checkpointFiles(dir).map((f) => fs.statSync(path.join(dir, f)).mtimeMs);
  return `${dir}\n${times.join(",")}`;
}

export function createPlaygroundPool(o: PoolOptions): PlaygroundPool {
  const maxProcesses = o.maxProcesses ?? 2;
  const maxWaiting = o.maxWaiting ?? 4;
  const timeoutMs = o.timeoutMs ?? 60_000;
  const idleMs = o.idleMs ?? 5 * 60_000;
  const log = o.log ?? (() => {});
  const entries = new Map<string, Entry>();
  let nextId = 0;
  let closed = false;

  const end = (e: Entry) => {
    clearTimeout(e.idle);
    if (entries.get(e.key) === e) entries.delete(e.key);
    if (!e.exited) e.child.kill("SIGKILL");
  };

  function spawn(key: string, dir: string): Entry {
    const child = fork(ENTRY, [], { stdio: ["ignore", "ignore", "pipe", "ipc"], env: process.env });
    let stderr = "";
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (d: string) => {
      stderr = (stderr + d).slice(-2000);
      for (const line of d.split("\n")) if (line.trim()) log(`[playground] engine ${child.pid}: ${line.slice(0, 300)}`);
    });
    const e = { key, child, pending: 0, chain: Promise.resolve(), served: 0, exited: false } as Entry;
    const gone = (e.gone = new Promise<never>((_, reject) =>
      child.once("exit", (code, signal) => {
        e.exited = true;
        end(e);
        const last = stderr.trim().split("\n").at(-1)?.slice(0, 300) ?? "";
        reject(new PlaygroundError(500, `the playground's engine process ended (${signal ?? code})${last ? `: ${last}` : ""}`));
      }),
    ));
    gone.catch(() => undefined);
    e.ready = new Promise<void>((resolve, reject) => {
      const onReply = (m: PlaygroundReply) => {
        if (m.type === "ready") resolve();
        else if (m.type === "error" && m.id === undefined) reject(new PlaygroundError(500, `the checkpoint did not load: ${m.message}`));
        else return;
        child.off("message", onReply);
      };
      child.on("message", onReply);
      gone.catch(reject);
    });
    e.ready.catch(() => end(e));
    child.send({ type: "open", checkpoint: dir, dataRoot: o.dataRoot } satisfies PlaygroundRequest);
    entries.set(key, e);
    log(`[playground] engine process ${child.pid} for ${dir}`);
    return e;
  }

  /** The entry for `key`, making room by ending the longest-idle entry with nothing pending. */
  function entryFor(key: string, dir: string): Entry {
    const have = entries.get(key);
    if (have) return have;
    if (entries.size >= maxProcesses) {
      const idle = [...entries.values()].find((e) => e.pending === 0);
      if (!idle) throw new PlaygroundError(503, `the playground is busy (${maxProcesses} checkpoints in use): try again in a moment`);
      end(idle);
    }
    return spawn(key, dir);
  }

  function ask(e: Entry, input: PlaygroundInput): Promise<{ record: EpisodeRecord; ms: number }> {
    const id = ++nextId;
    return new Promise((resolve, reject) => {
      if (e.exited) return reject(new PlaygroundError(500, "the playground's engine process ended"));
      // listeners per request, removed with its answer (a warm process serves many)
      const onExit = () => done(() => reject(new PlaygroundError(500, "the playground's engine process ended during the episode")));
      const onReply = (m: PlaygroundReply) => {
        if ((m.type !== "result" && m.type !== "error") || m.id !== id) return;
        done(() => (m.type === "result" ? resolve({ record: m.record, ms: m.ms }) : reject(new PlaygroundError(500, `the episode failed: ${m.message}`))));
      };
      const done = (settle: () => void) => {
        e.child.off("message", onReply);
        e.child.off("exit", onExit);
        settle();
      };
      e.child.on("message", onReply);
      e.child.once("exit", onExit);
      e.child.send({ type: "run", id, input } satisfies PlaygroundRequest, (err) => err && onExit());
    });
  }

  return {
    async run(dir, input) {
      if (closed) throw new PlaygroundError(503, "the server is shutting down");
      const e = entryFor(keyOf(dir), dir);
      if (e.pending >= maxWaiting) throw new PlaygroundError(503, `the playground is busy (${e.pending} requests on this checkpoint): try again in a moment`);
      e.pending++;
      clearTimeout(e.idle);
      const warm = e.served > 0 || e.pending > 1;
      const turn = e.chain.then(
        () => undefined,
        () => undefined,
      );
      const work = turn.then(async () => {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            log(`[playground] request over ${timeoutMs} ms: engine process ${e.child.pid} killed`);
            end(e);
            reject(new PlaygroundError(504, `the playground did not answer within ${Math.round(timeoutMs / 1000)} s`));
          }, timeoutMs);
        });
        try {
          await Promise.race([e.ready, timeout]);
          return await Promise.race([ask(e, input), timeout]);
        } finally {
          clearTimeout(timer);
        }
      });
      e.chain = work;
      try {
        const r = await work;
        e.served++;
        return { ...r, warm };
      } finally {
        e.pending--;
        if (e.pending === 0 && !e.exited) {
          e.idle = setTimeout(() => {
            log(`[playground] engine process ${e.child.pid} idle for ${Math.round(idleMs / 1000)} s: ended`);
            end(e);
          }, idleMs);
          e.idle.unref();
        }
      }
    },
    size: () => entries.size,
    async close() {
      closed = true;
      const all = [...entries.values()];
      const exits = all.map((e) => (e.exited ? Promise.resolve() : new Promise<void>((r) => e.child.once("exit", () => r()))));
      all.forEach(end);
      await Promise.all(exits);
    },
  };
}
