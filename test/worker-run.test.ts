/**
 * The real trainer worker process (a bundle of server/worker/main.ts, test-bundles.ts; on the
 * sources under tsx where the engine's loading phase matters) against a minimal
 * real /workers server written here: hello with backend/device, heartbeats, a tiny real run whose
 * events arrive gapless from nextSeq across a dashboard restart (the reconnecting worker names its
 * run), one run at a time, cancel from the dashboard, a one-run worker's run in the engine process
 * that probed its backend, config, checkpoint and engine failures
 * reported as failed run_ends, a stable worker id, and SIGTERM mid-run
 * (checkpoint, an interrupted run_end — the dashboard queues the run again — clean exit).
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Server, type Socket as ServerSocket } from "socket.io";
import {
  HEARTBEAT_MS,
  WORKER_NAMESPACE,
  type EngineEvent,
  type EventBatchMsg,
  type EventsAck,
  type HeartbeatMsg,
  type RunAssignment,
  type WorkerHello,
  type AssignAck,
} from "../lib/contracts/index.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { engineChildren, waitFor } from "./platform-helpers.ts";
import { USER_CANCEL_GRACE_MS } from "../server/worker/runner.ts";
import { BUNDLE_ENV, workerBundle } from "./test-bundles.ts";

const ROOT = path.resolve(import.meta.dirname, "..");
const TOKEN = "test-token";
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-worker-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

type RunEnd = Extract<EngineEvent, { type: "run_end" }>;

class Dashboard {
  readonly hellos: WorkerHello[] = [];
  /** conn: which connection (hello) it came on. */
  readonly heartbeats: { at: number; conn: number; msg: HeartbeatMsg }[] = [];
  /** runId → seq → events */
  readonly runs = new Map<string, Map<number, EngineEvent[]>>();
  readonly rejected: string[] = [];
  worker: ServerSocket | null = null;
  private io!: Server;
  url = "";
  private port = 0;
  onBatch: (msg: EventBatchMsg) => void = () => {};
  /** A batch this returns true for is neither stored nor acknowledged (a dashboard stuck on that run). */
  withhold: (msg: EventBatchMsg) => boolean = () => false;

  async start(): Promise<void> {
    const server = http.createServer();
    this.io = new Server(server);
    const nsp = this.io.of(WORKER_NAMESPACE);
    nsp.use((socket, next) => {
      const auth = socket.handshake.auth as Partial<WorkerHello>;
      if (auth.token !== TOKEN) {
        this.rejected.push(String(auth.token));
        return next(new Error("invalid worker token"));
      }
      next();
    });
    nsp.on("connection", (socket) => {
      const conn = this.hellos.push(socket.handshake.auth as WorkerHello);
      this.worker = socket;
      socket.on("heartbeat", (msg: HeartbeatMsg) => this.heartbeats.push({ at: Date.now(), conn, msg }));
      socket.on("run:events", (msg: EventBatchMsg, ack: (a: EventsAck) => void) => {
        if (this.withhold(msg)) return;
        let m = this.runs.get(msg.runId);
        if (!m) this.runs.set(msg.runId, (m = new Map()));
        m.set(msg.seq, msg.events);
        this.onBatch(msg);
        ack({ ok: true, seq: msg.seq });
      });
    });
    // a restart listens on the same port again
    await new Promise<void>((r) => server.listen(this.port, "127.0.0.1", () => r()));
    this.port = (server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    this.worker = null;
    await new Promise<void>((r) => this.io.close(() => r()));
  }

  assign(a: RunAssignment): Promise<AssignAck> {
    return this.worker!.timeout(10_000).emitWithAck("run:assign", a) as Promise<AssignAck>;
  }

  /** The run's events in seq order; asserts the seqs are gapless from `from`. */
  events(runId: string, from: number): EngineEvent[] {
    const m = this.runs.get(runId) ?? new Map<number, EngineEvent[]>();
    const seqs = [...m.keys()].sort((a, b) => a - b);
    assert.deepEqual(seqs, seqs.map((_, i) => from + i), `${runId}: seqs gapless from ${from}`);
    return seqs.flatMap((s) => m.get(s)!);
  }

  end(runId: string): RunEnd | undefined {
    for (const evs of this.runs.get(runId)?.values() ?? []) for (const e of evs) if (e.type === "run_end") return e;
    return undefined;
  }
}

interface Worker {
  proc: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
}

/**
 * The worker as a bundle of its sources (test-bundles.ts: it, its backend probe and each engine
 * start ~2.5 s of CPU quicker than under tsx), or on the sources under tsx (`sources`: for the
 * test about the engine's loading phase, which a bundle shortens).
 */
function spawnWorker(url: string, dataDir: string, o: { token?: string; sources?: boolean; oneRun?: boolean; env?: Record<string, string> } = {}): Worker {
  const entry = o.sources ? ["--import", "tsx", "server/worker/main.ts"] : [workerBundle()];
  const proc = spawn(
    process.execPath,
    [...entry, "--url", url, "--token", o.token ?? TOKEN, "--name", "test worker", "--data-dir", dataDir, ...(o.oneRun ? ["--one-run"] : [])],
    { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...(o.sources ? {} : BUNDLE_ENV), ...o.env } },
  );
  let err = "";
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => proc.on("exit", (code) => r(code)));
  return { proc, stderr: () => err, exited };
}

/** waitFor (platform-helpers.ts) on a condition, polled every 20 ms, with the worker's stderr on timeout. */
const until = (cond: () => boolean, ms: number, what: string, w?: Worker): Promise<boolean> =>
  waitFor(what, () => cond(), ms, 20, w && (() => `worker stderr:\n${w.stderr()}`));

async function exitCode(w: Worker, ms: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([w.exited, new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), ms)))]);
  clearTimeout(timer);
  if (code === "timeout") {
    w.proc.kill("SIGKILL");
    throw new Error(`worker did not exit within ${ms} ms\n${w.stderr()}`);
  }
  return code;
}

function assignment(runId: string, overrides: string[], extra: Partial<RunAssignment> = {}): RunAssignment {
  return {
    runId,
    config: resolveConfig({ preset: "tiny", overrides }),
    resumeFrom: null,
    nextSeq: 1,
    attempt: 1,
    runDir: path.join(tmp, runId),
    kind: "train",
    ...extra,
  };
}

/** A data folder of its own for each test (the worker keeps its id file there). */
let dataDirs = 0;
const newDataDir = () => path.join(tmp, `worker-data-${++dataDirs}`);
const idFile = (dataDir: string) => path.join(dataDir, "worker-test_worker.id");

test("worker: hello, heartbeats, a tiny run across a dashboard restart, one run at a time, cancel from the dashboard", async () => {
  const dash = new Dashboard();
  await dash.start();
  const dataDir = newDataDir();
  const SPARE_MS = 1_500;
  const w = spawnWorker(dash.url, dataDir, { env: { QRAG_WORKER_SPARE_ENGINE_MS: String(SPARE_MS) } });
  try {
    await until(() => dash.hellos.length === 1, 30_000, "the worker's hello", w);
    const hello = dash.hellos[0];
    assert.equal(hello.token, TOKEN);
    assert.equal(hello.name, "test worker");
    assert.equal(hello.host, os.hostname());
    assert.ok(hello.backend.length > 0 && hello.device.length > 0, "backend and device in the hello");
    assert.deepEqual(hello.activeRuns, []);
    assert.equal(fs.readFileSync(idFile(dataDir), "utf8").trim(), hello.workerId, "worker id persisted");
    // the backend probe's engine process is kept for a first run, but a long-lived worker may idle
    // for hours: with no run within QRAG_WORKER_SPARE_ENGINE_MS it goes
    assert.equal(engineChildren(w.proc.pid!).length, 1, "the probe's engine kept for a first run");
    await until(() => engineChildren(w.proc.pid!).length === 0, SPARE_MS + 5_000, "the idle engine process to go", w);

    // run A completes, across a dashboard restart mid-run: the worker reconnects naming its run,
    // and nothing is lost
    let restart: Promise<void> | null = null;
    dash.onBatch = (msg) => {
      if (msg.runId === "run-a" && !restart && msg.events.some((e) => e.type === "metric" && e.key === "qf_loss")) {
        restart = (async () => {
          await dash.stop();
          await dash.start();
        })();
      }
    };
    const a = assignment("run-a", ["steps_count=20", "eval_interval=10", "eval_episodes=10"], { nextSeq: 5 });
    assert.deepEqual(await dash.assign(a), { ok: true });
    const busy = await dash.assign(assignment("run-x", []));
    assert.equal(busy.ok, false, "one run at a time");
    assert.match(busy.error ?? "", /busy/);
    await until(() => dash.hellos.length === 2, 30_000, "the worker's hello after the dashboard restart", w);
    assert.deepEqual(dash.hellos[1].activeRuns, ["run-a"], "the reconnecting worker names its active run");
    assert.equal(dash.hellos[1].workerId, hello.workerId);
    await until(() => dash.end("run-a") !== undefined, 60_000, "run-a's run_end", w);
    const evs = dash.events("run-a", 5);
    const start = evs[0];
    assert.ok(start.type === "run_start", "run_start first");
    assert.equal(start.meta.backend, hello.backend);
    assert.ok(start.meta.device.length > 0);
    const metrics = evs.filter((e) => e.type === "metric");
    assert.ok(metrics.some((e) => e.key === "qf_loss") && metrics.some((e) => e.key === "eval_coverage"), "metric points");
    // every metric point the engine wrote to its local metrics.jsonl arrived once, in order
    const local = fs.readFileSync(path.join(tmp, "run-a", "metrics.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as EngineEvent);
    assert.deepEqual(metrics, local);
    assert.ok(evs.some((e) => e.type === "checkpoint" && fs.existsSync(e.path)), "a checkpoint on disk");
    assert.equal(evs.filter((e) => e.type === "run_end").length, 1);
    assert.equal(evs.at(-1)!.type, "run_end");
    assert.equal(dash.end("run-a")!.status, "completed");
    assert.equal(dash.end("run-a")!.update, 20);
    assert.ok(dash.heartbeats.some((h) => h.msg.workerId === hello.workerId && h.msg.runs.includes("run-a")), "heartbeat lists the active run");
    await until(() => dash.heartbeats.at(-1)!.msg.runs.length === 0, 10_000, "an idle heartbeat", w);

    // run B: cancelled from the dashboard once training is under way
    let cancelledAt = -1;
    dash.onBatch = (msg) => {
      if (msg.runId === "run-b" && cancelledAt < 0 && msg.events.some((e) => e.type === "metric" && e.key === "qf_loss")) {
        cancelledAt = msg.seq;
        dash.worker!.emit("run:cancel", { runId: "run-b" });
      }
    };
    assert.deepEqual(await dash.assign(assignment("run-b", ["steps_count=400", "eval_interval=200", "eval_episodes=8"])), { ok: true });
    await until(() => dash.end("run-b") !== undefined, 60_000, "run-b's run_end", w);
    const bEvents = dash.events("run-b", 1);
    const endB = dash.end("run-b")!;
    assert.equal(endB.status, "cancelled");
    assert.ok(endB.update > 0 && endB.update < 400, `cancelled at update ${endB.update}`);
    const lastCk = bEvents.filter((e) => e.type === "checkpoint").at(-1);
    assert.ok(lastCk && lastCk.type === "checkpoint" && lastCk.update === endB.update, "checkpoint saved on cancel");
    assert.ok(fs.existsSync(path.join(lastCk.path, "checkpoint.json")));

    // heartbeats kept coming every HEARTBEAT_MS while the worker trained (plus one per state change)
    assert.ok(dash.heartbeats.length >= 3, `${dash.heartbeats.length} heartbeats`);
    const gaps = dash.heartbeats.slice(1).flatMap((h, i) => (h.conn === dash.heartbeats[i].conn ? [h.at - dash.heartbeats[i].at] : []));
    assert.ok(Math.max(...gaps) <= HEARTBEAT_MS + 1_000, `heartbeat gaps ${gaps.join(", ")} ms`);

    w.proc.kill("SIGTERM");
    assert.equal(await exitCode(w, 15_000), 0, w.stderr());
  } finally {
    if (process.env.SHOW_WORKER_STDERR) process.stderr.write(w.stderr());
    w.proc.kill("SIGKILL");
    await dash.stop();
  }
});

test("worker --one-run (a Slurm job's): its run trains in the engine process that probed the backend, no second one; the worker exits when the run ends", async () => {
  const dash = new Dashboard();
  await dash.start();
  const w = spawnWorker(dash.url, newDataDir(), { oneRun: true });
  try {
    await until(() => dash.hellos.length === 1, 30_000, "the worker's hello", w);
    const probe = engineChildren(w.proc.pid!);
    assert.equal(probe.length, 1, "the probe's engine process kept for the run");
    // once training is under way (400 steps: far from done), the engines are looked at and the run cancelled
    let training: number[] | null = null;
    dash.onBatch = (msg) => {
      if (!training && msg.events.some((e) => e.type === "metric" && e.key === "qf_loss")) {
        training = engineChildren(w.proc.pid!);
        dash.worker!.emit("run:cancel", { runId: "run-one" });
      }
    };
    assert.deepEqual(await dash.assign(assignment("run-one", ["steps_count=400", "eval_interval=200", "eval_episodes=8"])), { ok: true });
    await until(() => dash.end("run-one") !== undefined, 60_000, "the run's run_end", w);
    assert.deepEqual(training, probe, "the run trains in the probe's process, and only there");
    assert.equal(dash.end("run-one")!.status, "cancelled", w.stderr());
    const start = dash.events("run-one", 1)[0];
    assert.ok(start.type === "run_start" && start.meta.backend === dash.hellos[0].backend, "the run on the probed backend");
    assert.equal(await exitCode(w, 15_000), 0, w.stderr());
  } finally {
    w.proc.kill("SIGKILL");
    await dash.stop();
  }
});

test("worker: failures as run_ends, stable id, SIGTERM mid-run checkpoints and exits cleanly", async () => {
  const dash = new Dashboard();
  await dash.start();
  const dataDir = newDataDir();
  // a first worker on this data folder creates the id; the restarted one (used below) keeps it
  const first = spawnWorker(dash.url, dataDir);
  try {
    await until(() => dash.hellos.length === 1, 30_000, "the first worker's hello", first);
    first.proc.kill("SIGTERM");
    assert.equal(await exitCode(first, 15_000), 0, first.stderr());
  } finally {
    first.proc.kill("SIGKILL");
  }
  const firstId = dash.hellos[0].workerId;
  assert.match(firstId, /^[A-Za-z0-9._-]{8,128}$/);
  assert.equal(fs.readFileSync(idFile(dataDir), "utf8").trim(), firstId, "the id is persisted");
  const w = spawnWorker(dash.url, dataDir);
  try {
    await until(() => dash.hellos.length === 2, 30_000, "the restarted worker's hello", w);
    assert.equal(dash.hellos[1].workerId, firstId, "a restarted worker keeps its id");

    // an unreadable resume checkpoint fails the run with the reason
    const missing = path.join(tmp, "nowhere", "checkpoints", "last");
    assert.deepEqual(await dash.assign(assignment("run-d", [], { resumeFrom: missing, nextSeq: 3 })), { ok: true });
    await until(() => dash.end("run-d") !== undefined, 20_000, "run-d's run_end", w);
    assert.equal(dash.end("run-d")!.status, "failed");
    assert.equal(dash.end("run-d")!.error, `checkpoint not reachable on this worker: ${missing}`);
    assert.ok(dash.events("run-d", 3).some((e) => e.type === "log" && e.level === "error"));

    // an invalid config fails the run with the schema's field messages
    const bad = { ...assignment("run-e", []), config: { ...(resolveConfig({ preset: "tiny" }) as object), steps_count: -3 } };
    assert.deepEqual(await dash.assign(bad), { ok: true });
    await until(() => dash.end("run-e") !== undefined, 20_000, "run-e's run_end", w);
    assert.equal(dash.end("run-e")!.status, "failed");
    assert.match(dash.end("run-e")!.error ?? "", /steps_count/);

    // an error inside the engine (a data file missing on this worker) fails the run with its message
    const tiny = resolveConfig({ preset: "tiny" });
    const env = tiny.envs as unknown as Record<string, unknown>;
    // inside the worker's data root (its data dir) but absent; outside the root it would be refused unread
    const missingFile = path.join(dataDir, "missing", "train.jsonl");
    const hotpot = {
      name: "hotpotqa", max_steps: env.max_steps, positions_processor: env.positions_processor, sort_by_index: env.sort_by_index,
      train_path: missingFile, eval_path: missingFile,
    };
    assert.deepEqual(await dash.assign({ ...assignment("run-g", []), config: { ...tiny, envs: hotpot } }), { ok: true });
    await until(() => dash.end("run-g") !== undefined, 30_000, "run-g's run_end", w);
    assert.equal(dash.end("run-g")!.status, "failed");
    assert.match(dash.end("run-g")!.error ?? "", /missing.*not found/);

    // SIGTERM mid-run: checkpoint, interrupted run_end (noting the shutdown: no user's cancel), exit 0
    let signalled = false;
    dash.onBatch = (msg) => {
      if (msg.runId === "run-c" && !signalled && msg.events.some((e) => e.type === "metric" && e.key === "qf_loss")) {
        signalled = true;
        w.proc.kill("SIGTERM");
      }
    };
    assert.deepEqual(await dash.assign(assignment("run-c", ["steps_count=400", "eval_interval=200", "eval_episodes=8"])), { ok: true });
    assert.equal(await exitCode(w, 30_000), 0, w.stderr());
    const endC = dash.end("run-c");
    assert.ok(endC, "run_end delivered before exit");
    assert.equal(endC.status, "interrupted");
    assert.match(endC.error ?? "", /shut down.*queued again/);
    const ck = dash.events("run-c", 1).filter((e) => e.type === "checkpoint").at(-1);
    assert.ok(ck && ck.type === "checkpoint" && ck.update === endC.update, "checkpoint saved on shutdown");
  } finally {
    if (process.env.SHOW_WORKER_STDERR) process.stderr.write(w.stderr());
    w.proc.kill("SIGKILL");
    await dash.stop();
  }
});

const alive = (pid: number) => fs.existsSync(`/proc/${pid}`) && !/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"));

/** Newest modification time under a folder (0 when missing). */
function newestUnder(dir: string): number {
  if (!fs.existsSync(dir)) return 0;
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).reduce((m, e) => Math.max(m, fs.statSync(path.join(e.parentPath, e.name)).mtimeMs), fs.statSync(dir).mtimeMs);
}

test("worker: kill -9 mid-run takes its engine child with it, and no checkpoint is written after", { skip: process.platform !== "linux" ? "reads /proc" : false }, async () => {
  const dash = new Dashboard();
  await dash.start();
  const w = spawnWorker(dash.url, newDataDir());
  let child = 0;
  let killedAt = 0;
  try {
    await until(() => dash.hellos.length === 1, 30_000, "the worker's hello", w);
    const a = assignment("run-k", ["steps_count=2000", "eval_interval=1000", "eval_episodes=8"]);
    dash.onBatch = (msg) => {
      if (killedAt || msg.runId !== "run-k" || !msg.events.some((e) => e.type === "metric" && e.key === "qf_loss")) return;
      child = engineChildren(w.proc.pid!)[0] ?? 0;
      killedAt = Date.now();
      w.proc.kill("SIGKILL");
    };
    assert.deepEqual(await dash.assign(a), { ok: true });
    await until(() => killedAt > 0, 60_000, "the first TD-loss batch", w);
    assert.ok(child > 0, "the engine child was running");
    await until(() => !alive(child), 10_000, "the orphaned engine child to exit");
    assert.ok(newestUnder(path.join(a.runDir, "checkpoints")) < killedAt, "no checkpoint written after the worker died");
  } finally {
    w.proc.kill("SIGKILL");
    if (child && alive(child)) process.kill(child, "SIGKILL");
    await dash.stop();
  }
});

// As Slurm ends a job: every process of it signalled together, the engine before it installed its
// handler. Either may be handled first: the engine's exit can reach the worker before its own signal.
for (const order of ["at once", "the engine reaped first"] as const) {
  test(`worker: SIGTERM to the worker and its engine (${order}) while the engine still loads (scancel, pre-emption) → an interrupted run_end, queued again, not failed`, { skip: process.platform !== "linux" ? "reads /proc" : false }, async () => {
    const dash = new Dashboard();
    await dash.start();
    // no spare engine: the run's engine is forked at the assignment and still loads when signalled
    const w = spawnWorker(dash.url, newDataDir(), { sources: true, env: { QRAG_WORKER_SPARE_ENGINE_MS: "0" } });
    try {
      await until(() => dash.hellos.length === 1, 30_000, "the worker's hello", w);
      assert.deepEqual(await dash.assign(assignment("run-t", ["steps_count=2000", "eval_interval=1000", "eval_episodes=8"])), { ok: true });
      const child = await waitFor("the engine child", () => engineChildren(w.proc.pid!)[0] || null, 10_000, 10);
      process.kill(child, "SIGTERM");
      if (order === "the engine reaped first") await until(() => !fs.existsSync(`/proc/${child}`), 10_000, "the worker to reap its engine", w);
      w.proc.kill("SIGTERM");
      assert.equal(await exitCode(w, 30_000), 0, w.stderr());
      const end = dash.end("run-t");
      assert.ok(end, "run_end delivered before exit");
      assert.equal(end.status, "interrupted", end.error ?? "");
    } finally {
      w.proc.kill("SIGKILL");
      await dash.stop();
    }
  });
}

test("worker: a newer attempt of a run it still holds replaces it: the old attempt is stopped and its undelivered events dropped", async () => {
  const dash = new Dashboard();
  await dash.start();
  const w = spawnWorker(dash.url, newDataDir());
  try {
    await until(() => dash.hellos.length === 1, 30_000, "the worker's hello", w);
    // attempt 1: once training is under way the dashboard stops answering for this run, as a
    // dashboard that gave the attempt up (its lease ran out) and moved on
    let stuck = false;
    let second = false;
    dash.withhold = (msg) => {
      if (msg.runId === "run-s" && msg.events.some((e) => e.type === "metric" && e.key === "qf_loss")) stuck = true;
      return stuck && !second && msg.runId === "run-s";
    };
    assert.deepEqual(await dash.assign(assignment("run-s", ["steps_count=2000", "eval_interval=1000", "eval_episodes=8"])), { ok: true });
    await until(() => stuck, 60_000, "attempt 1's first TD-loss batch", w);

    // attempt 2 is offered (as the scheduler does, again after each refusal) until it is taken
    const next = assignment("run-s", ["steps_count=20", "eval_interval=10", "eval_episodes=8"], { attempt: 2, nextSeq: 1000 });
    const replies: AssignAck[] = [];
    const t0 = Date.now();
    await waitFor("attempt 2 to be taken", async () => {
      replies.push(await dash.assign(next));
      return replies.at(-1)!.ok;
    }, 20_000, 250, () => `last reply: ${JSON.stringify(replies.at(-1))}\n${w.stderr()}`);
    second = true;
    assert.match(replies[0].error ?? "", /still finishing attempt 1 of run run-s \(training; \d+ events unacknowledged\); stopping it/);
    assert.equal(engineChildren(w.proc.pid!).length <= 1, true, "attempt 1's engine is gone");
    assert.match(w.stderr(), /attempt 2 assigned while attempt 1 is training.*dropping attempt 1/);

    // attempt 2 runs to completion with its own gapless seqs; nothing of attempt 1 comes after
    await until(() => dash.end("run-s") !== undefined, 60_000, "attempt 2's run_end", w);
    const seqs = [...dash.runs.get("run-s")!.keys()].filter((s) => s >= 1000).sort((a, b) => a - b);
    assert.deepEqual(seqs, seqs.map((_, i) => 1000 + i), "attempt 2's batches gapless from its nextSeq");
    assert.deepEqual(dash.end("run-s"), { ...dash.end("run-s")!, status: "completed", update: 20 });
    console.log(`# a superseded attempt: attempt 2 taken after ${replies.length - 1} refusal(s), ${Date.now() - t0} ms`);
  } finally {
    if (process.env.SHOW_WORKER_STDERR) process.stderr.write(w.stderr());
    w.proc.kill("SIGKILL");
    await dash.stop();
  }
});

test("worker: a wrong token is refused and the idle worker exits with a message", async () => {
  const dash = new Dashboard();
  await dash.start();
  const w = spawnWorker(dash.url, newDataDir(), { token: "wrong" });
  try {
    assert.equal(await exitCode(w, 30_000), 3);
    assert.ok(dash.rejected.includes("wrong"));
    assert.match(w.stderr(), /rejected this worker/);
  } finally {
    if (process.env.SHOW_WORKER_STDERR) process.stderr.write(w.stderr());
    w.proc.kill("SIGKILL");
    await dash.stop();
  }
});

/** Cancels `runId` from the dashboard 300 ms after its engine logged "starting" (set-up done); returns when it did. */
function cancelOnceStarted(dash: Dashboard, runId: string): () => number {
  let at = 0;
  dash.onBatch = (msg) => {
    if (msg.runId === runId && !at && msg.events.some((e) => e.type === "log" && /^starting/.test(e.message))) {
      at = -1;
      setTimeout(() => {
        at = Date.now();
        dash.worker!.emit("run:cancel", { runId });
      }, 300);
    }
  };
  return () => at;
}

test("worker: cancel inside a long evaluation ends the run within 2 s with a checkpoint; SIGTERM there exits within 5 s", async () => {
  const dash = new Dashboard();
  await dash.start();
  const w = spawnWorker(dash.url, newDataDir());
  try {
    await until(() => dash.hellos.length === 1, 30_000, "the worker's hello", w);
    // the first evaluation (update 0) of 10,000 episodes of 400 chunks takes minutes on this machine
    const long = ["steps_count=100", "eval_interval=50", "eval_episodes=10000", "envs.test_env.num_sentences=400"];
    // the engine is past its setup and inside the first evaluation
    const cancelAt = cancelOnceStarted(dash, "run-ev");
    assert.deepEqual(await dash.assign(assignment("run-ev", long)), { ok: true });
    await until(() => dash.end("run-ev") !== undefined, 120_000, "run-ev's run_end", w);
    const took = Date.now() - cancelAt();
    const end = dash.end("run-ev")!;
    assert.equal(end.status, "cancelled");
    assert.equal(end.update, 0, "cancelled inside the first evaluation");
    assert.ok(took < 2_000, `cancel took ${took} ms`);
    const evs = dash.events("run-ev", 1);
    assert.ok(!evs.some((e) => e.type === "metric" && e.key.startsWith("eval_")), "a cut-short evaluation emits no eval metrics");
    // the engine took the cancel itself (not killed as stuck): a checkpoint at the cancel point
    assert.ok(evs.some((e) => e.type === "checkpoint" && e.update === 0), "checkpoint saved on cancel");

    // SIGTERM in the same situation: the worker is gone within 5 s, its run_end delivered
    let termAt = 0;
    dash.onBatch = (msg) => {
      if (msg.runId === "run-ev2" && !termAt && msg.events.some((e) => e.type === "log" && /^starting/.test(e.message))) {
        setTimeout(() => {
          termAt = Date.now();
          w.proc.kill("SIGTERM");
        }, 300);
      }
    };
    assert.deepEqual(await dash.assign(assignment("run-ev2", long)), { ok: true });
    await until(() => termAt > 0, 60_000, "run-ev2's evaluation", w);
    assert.equal(await exitCode(w, 5_000), 0, w.stderr());
    assert.equal(dash.end("run-ev2")?.status, "interrupted", "run_end delivered before exit");
    console.log(`# inside a 10,000-episode evaluation: cancel → cancelled run_end in ${took} ms; SIGTERM → exit in ${Date.now() - termAt} ms`);
  } finally {
    if (process.env.SHOW_WORKER_STDERR) process.stderr.write(w.stderr());
    w.proc.kill("SIGKILL");
    await dash.stop();
  }
});

test("worker: a user's cancel while the engine is stuck in one long synchronous step ends the run within 1 s, without a checkpoint after the cancel", async () => {
  const dash = new Dashboard();
  await dash.start();
  const w = spawnWorker(dash.url, newDataDir());
  try {
    await until(() => dash.hellos.length === 1, 30_000, "the worker's hello", w);
    // one evaluation episode over a 400,000-chunk haystack: seconds of work that never yields
    const stuck = ["steps_count=100", "eval_interval=50", "eval_episodes=1", "envs.test_env.num_sentences=400000"];
    const cancelAt = cancelOnceStarted(dash, "run-stuck");
    assert.deepEqual(await dash.assign(assignment("run-stuck", stuck)), { ok: true });
    await until(() => dash.end("run-stuck") !== undefined, 120_000, "run-stuck's run_end", w);
    const took = Date.now() - cancelAt();
    const end = dash.end("run-stuck")!;
    assert.equal(end.status, "cancelled");
    assert.match(end.error ?? "", /without a new checkpoint/, "the engine was stopped, not the one that saved");
    assert.ok(took < 1_400, `cancel took ${took} ms (the engine is killed ${USER_CANCEL_GRACE_MS} ms after a cancel it does not read)`);
    assert.ok(!dash.events("run-stuck", 1).some((e) => e.type === "checkpoint"), "no checkpoint at or after the cancel");
    await until(() => engineChildren(w.proc.pid!).length === 0, 5_000, "the stopped engine gone", w);
    console.log(`# an engine stuck in one long step: cancel → cancelled run_end in ${took} ms`);
  } finally {
    w.proc.kill("SIGKILL");
    await dash.stop();
  }
});
