/**
 * Executes one RunAssignment on this worker: validates the config with the engine's schema,
 * checks the resume checkpoint is readable here, runs `train()` in a forked engine process
 * (engine-process.ts) whose AbortController the cancel message trips, routes every event through
 * an EventBatcher, and finishes once the dashboard acknowledged everything.
 *
 * Whatever happens, the run ends with exactly one `run_end` event: the engine's own, or a failed
 * one built here from the error or from the engine process's exit (messages are clipped:
 * tfjs-wasm errors can carry whole minified source lines).
 */
import { fork, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { EngineEvent, EventsAck, RunAssignment, RunEndStatus } from "../../lib/contracts/index.ts";
import { sweepSpecSchema, issuesText } from "../../lib/contracts/index.ts";
import { checkEncoderPath, checkEnvPaths, checkpointFiles, findCheckpoint, validateConfig, type RunConfig } from "../qrag/index.ts";
import { settings } from "../settings.ts";
import type { EngineReply, EngineRequest } from "./engine-process.ts";
import { EventBatcher, type BatcherOptions } from "./batcher.ts";
import { clip, errorMessage, silentLogger, type Logger } from "./log.ts";
import type { WorkerSocket } from "./socket.ts";

export type RunOutcome = {
  status: RunEndStatus;
  error?: string;
  /** false when the dashboard refused the run's events (ack with stop, not ok). */
  delivered: boolean;
};

export interface RunnerOptions {
  socket: WorkerSocket;
  log?: Logger;
  /** Batcher tuning (tests); socket, runId and nextSeq come from the assignment. */
  batcher?: Omit<BatcherOptions, "socket" | "runId" | "nextSeq" | "onStop" | "log">;
  /** Base folder for a relative `runDir` (default: the current directory). */
  baseDir?: string;
  /** The only folder a config's files may come from (default QRAG_DATA_ROOT, else the data folder). */
  dataRoot?: string;
  /** An engine process already started and idle (a one-run worker's probe, probeBackend's `keep`): the run uses it if it is still alive, else forks one. */
  engine?: EngineProcess;
}

/** Checks that a resume path holds a checkpoint this process can read. */
export function checkpointReachable(p: string): boolean {
  try {
    const dir = findCheckpoint(p);
    if (!dir) return false;
    for (const f of checkpointFiles(dir)) fs.accessSync(path.join(dir, f), fs.constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * A cancelled engine that has not even read the cancel request after this long is stuck in
 * synchronous work (building a huge dataset, one long step): it is killed and the run ends
 * cancelled without a new checkpoint (the next attempt resumes from the previous one). A worker
 * shutting down or a superseded attempt waits this long: the checkpoint lets the run resume where
 * it was.
 */
const CANCEL_GRACE_MS = 1_500;
/**
 * A user's cancel waits less: a cancel must read `cancelled` within a second (issue 26), and an
 * engine that has not read it by then is inside one long update pass or encoding (a transformer on
 * wasm: seconds). It is stopped without a new checkpoint; the run keeps every acknowledged point
 * and its last periodic checkpoint. An engine that reads the cancel in time saves one as before.
 */
export const USER_CANCEL_GRACE_MS = 500;
/** How long a checkpoint waits for the dashboard to acknowledge the events before it; then it is skipped. */
const BARRIER_TIMEOUT_MS = 10_000;
/**
 * A batch scheduler signals every process of a job together, and the engine's exit can reach the
 * worker before the worker's own signal does. An engine killed by one of these signals is
 * therefore given this long for the worker's shutdown to arrive before the run is failed.
 */
const JOB_SIGNALS: ReadonlySet<NodeJS.Signals> = new Set(["SIGTERM", "SIGINT", "SIGHUP"]);
const JOB_SIGNAL_WAIT_MS = 2_000;

/** engine-process.ts beside this file; engine-process.mjs in the device pack's bundles (scripts/device/pack.ts). */
const ENGINE_ENTRY = fileURLToPath(new URL(`./engine-process${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url));

/** A forked engine process: typed IPC, its output's last lines, and its exit. */
export interface EngineProcess {
  child: ChildProcess;
  send(m: EngineRequest): void;
  onReply(fn: (m: EngineReply) => void): void;
  /** The last lines it printed (stdout and stderr), each clipped. */
  tail(): string[];
  /** From now on logs its output under `tag` (a kept probe engine taken by a run; quiet no more); the lines so far are dropped. */
  retag(tag: string): void;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Forks engine-process.ts with this process's Node flags (so `--import tsx` carries over). Its
 * output is forwarded to `log` line by line, clipped, and the last lines are kept for error reports.
 */
export function spawnEngine(log: Logger, tag: string, o: { quiet?: boolean } = {}): EngineProcess {
  const child = fork(ENGINE_ENTRY, [], { stdio: ["ignore", "pipe", "pipe", "ipc"], env: process.env });
  const lines: string[] = [];
  let quiet = o.quiet ?? false;
  const collect = (stream: NodeJS.ReadableStream | null) => {
    let rest = "";
    stream?.setEncoding("utf8");
    stream?.on("data", (d: string) => {
      const parts = (rest + d).split("\n");
      rest = parts.pop()!;
      if (rest.length > 4096) rest = rest.slice(0, 4096); // a minified bundle on one line
      for (const raw of parts) {
        const line = clip(raw.trimEnd());
        if (!line) continue;
        lines.push(line);
        if (lines.length > 20) lines.shift();
        if (!quiet) log("warn", `${tag}: engine: ${line}`);
      }
    });
  };
  collect(child.stdout);
  collect(child.stderr);
  // resolves once the process exited AND its IPC channel closed, so every message it sent has
  // been delivered ("exit" alone can come before the last messages are read)
  const channelClosed = new Promise<void>((resolve) => {
    if (!child.connected) return resolve();
    child.once("disconnect", () => resolve());
    child.once("error", () => resolve());
  });
  const processExited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", () => resolve({ code: child.exitCode, signal: child.signalCode }));
  });
  const exited = Promise.all([processExited, channelClosed]).then(([r]) => r);
  return {
    child,
    send: (m) => {
      if (child.connected) child.send(m, (err) => err && log("warn", `${tag}: engine IPC: ${errorMessage(err)}`));
    },
    onReply: (fn) => child.on("message", (m) => fn(m as EngineReply)),
    tail: () => [...lines],
    retag: (t) => {
      tag = t;
      quiet = false;
      lines.length = 0;
    },
    exited,
  };
}

/** An engine process alive and connected: one a run can still take. */
const usable = (e: EngineProcess) => e.child.connected && e.child.exitCode === null && e.child.signalCode === null;

/**
 * Picks the tfjs backend the runs will get (in an engine process) and reports it. `keep`: the
 * process stays, waiting for a run's request, and comes back as `engine` (the worker hands it to
 * its first run: one engine start instead of two); otherwise it exits after answering.
 */
export async function probeBackend(log: Logger = silentLogger, o: { keep?: boolean } = {}): Promise<{ backend: string; device: string; skipped: string[]; engine?: EngineProcess }> {
  // quiet: Dawn prints its Vulkan diagnostics on stderr while it looks for an adapter; the reason
  // a backend was not used comes back in `skipped` instead
  const p = spawnEngine(log, "backend probe", { quiet: true });
  // the first reply; none if the process exits first (`exited` waits for every message sent)
  const first = new Promise<EngineReply | undefined>((resolve) => {
    p.onReply(resolve);
    void p.exited.then(() => resolve(undefined));
  });
  p.send({ type: "probe", ...(o.keep ? { stay: true } : {}) });
  const reply = await first;
  if (reply?.type === "backend") {
    const found = { backend: reply.backend, device: reply.device, skipped: reply.skipped ?? [] };
    if (o.keep && usable(p)) return { ...found, engine: p };
    await p.exited;
    return found;
  }
  if (usable(p)) p.child.kill("SIGKILL");
  const { code, signal } = await p.exited;
  const why = reply?.type === "error" ? reply.message : `engine process exited with ${signal ?? `code ${code}`}${p.tail().length ? `: ${p.tail().at(-1)}` : ""}`;
  throw new Error(`no tfjs backend: ${why}`);
}

export class RunExecution {
  readonly runId: string;
  readonly attempt: number;
  /** Resolves (never rejects) when the run ended and its events were acknowledged. */
  readonly done: Promise<RunOutcome>;
  private cancelRequested = false;
  private engine: EngineProcess | null = null;
  private readonly batcher: EventBatcher;
  private readonly log: Logger;
  private get dataRoot(): string {
    return this.opts.dataRoot ?? settings().dataRoot;
  }
  private endEvent: Extract<EngineEvent, { type: "run_end" }> | null = null;
  private endNote: string | null = null;
  /** Set by interrupt(): the engine's cancelled run_end goes out as `interrupted` (queued again). */
  private interrupted = false;
  private onInterrupt: (() => void) | null = null;
  private lastLogged = "";
  private step = 0;
  private update = 0;
  private cancelSeen = false;
  private killedStuck = false;
  private graceTimer: NodeJS.Timeout | null = null;
  private superseded = false;

  constructor(
    private readonly assignment: RunAssignment,
    private readonly opts: RunnerOptions,
  ) {
    this.runId = assignment.runId;
    this.attempt = assignment.attempt;
    this.log = opts.log ?? silentLogger;
    this.batcher = new EventBatcher({
      ...opts.batcher,
      socket: opts.socket,
      runId: assignment.runId,
      nextSeq: assignment.nextSeq,
      log: this.log,
      onStop: (ack: EventsAck) => this.cancel(`the dashboard asked to stop${ack.error ? ` (${ack.error})` : ""}`),
    });
    this.done = this.execute();
  }

  /** True once the run emitted its run_end (training is over; events may still be in delivery). */
  get ended(): boolean {
    return this.endEvent !== null;
  }

  /** True once cancel() was called (or the dashboard asked to stop). */
  get cancelled(): boolean {
    return this.cancelRequested;
  }

  /**
   * Aborts the engine: it saves a checkpoint and ends with a cancelled run_end. `note`, if given,
   * is put on that run_end's `error` field (e.g. why a worker shut down).
   */
  cancel(reason: string, note?: string): void {
    if (this.cancelRequested || this.endEvent) return;
    this.cancelRequested = true;
    if (note) this.endNote = note;
    this.log("info", `run ${this.runId}: cancelling (${reason})`);
    if (this.engine) this.sendCancel(this.engine);
  }

  /**
   * Stops the engine because this worker shuts down: as cancel() (a checkpoint, the events
   * delivered), but the run_end says `interrupted`, so the dashboard queues the run again instead
   * of marking it cancelled.
   */
  interrupt(reason: string, note: string): void {
    if (this.cancelRequested || this.endEvent) return;
    this.interrupted = true;
    this.onInterrupt?.();
    this.cancel(reason, note);
  }

  /** Resolves once interrupt() is called, or after `ms`. */
  private interruptWithin(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.onInterrupt = done;
    }).finally(() => (this.onInterrupt = null));
  }

  private sendCancel(engine: EngineProcess): void {
    engine.send({ type: "cancel" });
    const grace = this.interrupted || this.superseded ? CANCEL_GRACE_MS : USER_CANCEL_GRACE_MS;
    this.graceTimer ??= setTimeout(() => {
      if (this.cancelSeen || this.engine !== engine || this.endEvent) return;
      this.killedStuck = true;
      this.log("info", `run ${this.runId}: the engine did not take the cancel within ${grace} ms (busy in one long step); stopping it without a new checkpoint`);
      engine.child.kill("SIGKILL");
    }, grace);
  }

  /** What this attempt is doing, for logs and refusals. */
  get state(): string {
    const phase = this.endEvent ? `ended ${this.endEvent.status}` : this.engine ? `training${this.cancelRequested ? ", cancel requested" : ""}` : "starting";
    return `${phase}; ${this.batcher.pendingEvents} events unacknowledged`;
  }

  /**
   * The dashboard assigned attempt `by` of this run, so it has given this attempt up (its lease ran
   * out): nothing of it will be stored any more. Its undelivered events are dropped (the next
   * attempt resumes from a checkpoint behind every acknowledged event and produces them again),
   * so no checkpoint passes the barrier; the engine is cancelled and killed if it has not exited
   * within CANCEL_GRACE_MS, whatever it is waiting for. `done` then resolves and the worker takes
   * the new attempt when it is offered again.
   */
  supersede(by: number): void {
    if (this.superseded) return;
    this.superseded = true;
    this.log("warn", `run ${this.runId}: attempt ${by} assigned while attempt ${this.attempt} is ${this.state}; dropping attempt ${this.attempt}`);
    this.batcher.abandon();
    this.cancel(`attempt ${by} supersedes it`);
    const engine = this.engine;
    if (engine) {
      const timer = setTimeout(() => {
        if (this.engine === engine) engine.child.kill("SIGKILL");
      }, CANCEL_GRACE_MS);
      void engine.exited.then(() => clearTimeout(timer));
    }
  }

  /** Answers the engine's pre-checkpoint barrier once the dashboard acknowledged every event so far. */
  private async answerBarrier(engine: EngineProcess, id: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const ok = await Promise.race([
      this.batcher.drain().then(() => !this.batcher.isRejected),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), BARRIER_TIMEOUT_MS))),
    ]);
    clearTimeout(timer);
    engine.send({ type: "barrier_ok", id, ok });
  }

  private emit = (e: EngineEvent): void => {
    if (this.endEvent) return; // one run_end per run, and nothing after it
    if (e.type === "metric" || e.type === "checkpoint" || e.type === "run_end") {
      this.step = e.step;
      this.update = e.update;
    }
    switch (e.type) {
      case "run_start":
        this.log("info", `run ${this.runId}: ${e.meta.resumedFrom ? "resumed" : "started"} ${e.meta.name} on ${e.meta.device}`);
        break;
      case "log":
        if (e.level !== "info" || /^eval @/.test(e.message)) {
          this.log(e.level, `run ${this.runId}: ${clip(e.message)}`);
          this.lastLogged = e.message;
        }
        break;
      case "run_end": {
        const error = e.error !== undefined ? clip(e.error) : this.endNote && e.status === "cancelled" ? this.endNote : undefined;
        // a shutdown's stop is no user's cancel: the dashboard queues the run again
        const status = this.interrupted && e.status === "cancelled" ? "interrupted" : e.status;
        e = { ...e, status, ...(error !== undefined ? { error } : {}) };
        this.endEvent = e as Extract<EngineEvent, { type: "run_end" }>;
        const why = error && error !== this.lastLogged ? `: ${error}` : "";
        this.log(e.status === "failed" ? "error" : "info", `run ${this.runId}: ${e.status} at update ${e.update}${why}`);
        break;
      }
    }
    this.batcher.push(e);
  };

  private fail(message: string): void {
    this.emit({ type: "log", level: "error", message });
    this.emit({ type: "run_end", status: "failed", step: this.step, update: this.update, error: message });
  }

  private async execute(): Promise<RunOutcome> {
    const a = this.assignment;
    try {
      await this.train(a);
    } catch (e) {
      if (!this.endEvent) this.fail(errorMessage(e));
    }
    if (!this.endEvent) this.fail("the engine returned without a run_end event");
    try {
      await this.batcher.drain();
    } finally {
      this.batcher.close();
    }
    const end = this.endEvent!;
    return { status: end.status, ...(end.error ? { error: end.error } : {}), delivered: !this.batcher.isRejected };
  }

  /** A sweep job: its spec checked here, its checkpoint readable on this worker. */
  private async sweep(a: RunAssignment): Promise<void> {
    const spec = sweepSpecSchema.safeParse(a.config);
    if (!spec.success) return this.fail(`invalid sweep spec: ${issuesText(spec.error)}`);
    // an agent evaluation (server/runs/agent-jobs.ts): bm25 on a run without checkpoints needs none
    const agent = spec.data.agentRun;
    const needed = !agent || spec.data.checkpoint !== "none";
    const checkpoint = path.resolve(this.opts.baseDir ?? process.cwd(), spec.data.checkpoint);
    if (needed && !checkpointReachable(checkpoint)) return this.fail(`checkpoint not reachable on this worker: ${spec.data.checkpoint}`);
    if (agent) return this.runEngine({ type: "agent", spec: spec.data, checkpoint: needed ? checkpoint : undefined, skipLengths: a.skipLengths ?? [], dataRoot: this.dataRoot });
    await this.runEngine({ type: "sweep", spec: spec.data, checkpoint, skipLengths: a.skipLengths ?? [], dataRoot: this.dataRoot });
  }

  private async train(a: RunAssignment): Promise<void> {
    if (a.kind === "sweep") return this.sweep(a);
    let config: RunConfig;
    try {
      // the worker's one check of the config, with its own engine version; the engine process trusts it
      config = validateConfig(a.config);
    } catch (e) {
      return this.fail(errorMessage(e));
    }
    // defence in depth: the dashboard checked the paths against its root; this worker reads only from its own
    const paths = checkEnvPaths(config.envs, this.dataRoot);
    const issues = [...paths.issues, ...checkEncoderPath(config.algo.encoder, this.dataRoot).issues]; // an hf folder, word vectors
    if (issues.length) return this.fail(issues.map((i) => `config.${i.path}: ${i.message}`).join("; "));
    const base = this.opts.baseDir ?? process.cwd();
    let resumeFrom: string | undefined;
    if (a.resumeFrom) {
      resumeFrom = path.resolve(base, a.resumeFrom);
      if (!checkpointReachable(resumeFrom)) return this.fail(`checkpoint not reachable on this worker: ${a.resumeFrom}`);
    }
    const runDir = a.runDir ? path.resolve(base, a.runDir) : undefined;
    await this.runEngine({ type: "start", config, resumeFrom, runDir, dataRoot: this.dataRoot });
  }

  private async runEngine(request: Extract<EngineRequest, { type: "start" | "sweep" | "agent" }>): Promise<void> {
    const kept = this.opts.engine;
    const engine = kept && usable(kept) ? kept : spawnEngine(this.log, `run ${this.runId}`);
    if (engine === kept) engine.retag(`run ${this.runId}`);
    else if (kept) this.log("warn", `run ${this.runId}: the engine kept from the backend probe has exited; starting another`);
    this.engine = engine;
    let error: string | undefined;
    let done: Extract<EngineReply, { type: "done" }> | undefined;
    engine.onReply((m) => {
      if (m.type === "event") this.emit(m.event);
      else if (m.type === "error") error = m.message;
      else if (m.type === "done") done = m;
      else if (m.type === "cancel_seen") this.cancelSeen = true;
      else if (m.type === "barrier") void this.answerBarrier(engine, m.id);
    });
    engine.send(request);
    if (this.cancelRequested) this.sendCancel(engine);
    const { code, signal } = await engine.exited;
    this.engine = null;
    if (this.graceTimer) clearTimeout(this.graceTimer);
    if (this.endEvent) return;
    if (done) return this.emit({ type: "run_end", status: done.status, step: done.step, update: done.updates });
    if (this.killedStuck) {
      const note = this.endNote ?? `cancelled; the engine was busy and was stopped without a new checkpoint (resume starts from the previous one)`;
      return this.emit({ type: "run_end", status: "cancelled", step: this.step, update: this.update, error: note });
    }
    if (signal && !error && !this.cancelRequested && JOB_SIGNALS.has(signal)) await this.interruptWithin(JOB_SIGNAL_WAIT_MS);
    if (this.interrupted && signal && !error) {
      // the worker shuts down and its engine died of a signal before it could save: a batch
      // scheduler's scancel, pre-emption or time limit signals every process of the job, and an
      // engine still loading has no handler yet. The run goes back to the queue (its previous
      // checkpoint), as an interrupted run does, rather than failing.
      const note = this.endNote ?? `interrupted; the engine was stopped by ${signal} before it saved a checkpoint`;
      return this.emit({ type: "run_end", status: "cancelled", step: this.step, update: this.update, error: note });
    }
    const last = engine.tail().at(-1);
    this.fail(error ?? `the engine process exited with ${signal ? `signal ${signal}` : `code ${code}`}${last ? ` (${last})` : ""}`);
  }
}

/** Starts executing an assignment; see RunExecution. */
export function startRun(assignment: RunAssignment, opts: RunnerOptions): RunExecution {
  return new RunExecution(assignment, opts);
}
