/**
 * EventBatcher: turns one run's engine events into numbered batches on the /workers socket.
 *
 * - Events are buffered and cut into a batch at most every `batchMs` (BATCH_MS) after the first
 *   buffered event, at once on `run_end` or `drain()`, and whenever the buffer reaches
 *   `maxBatchBytes` (socket.io servers drop messages over `maxHttpBufferSize`, 1 MB by default).
 * - Batches are numbered with consecutive `seq` from the assignment's `nextSeq`. A batch is frozen
 *   once numbered: a resend carries exactly the same events, so the server's idempotent write on
 *   (runId, seq) sees identical content.
 * - In-flight policy: strictly ONE batch in flight. seq n+1 is sent only after n was acknowledged
 *   with `ok`. The server therefore never sees a gap or an out-of-order batch, whatever its handler
 *   concurrency. While a batch is in flight, new events keep accumulating in the buffer and are
 *   cut into the next batch when the ack comes (coalescing), so a slow link or a long outage makes
 *   fewer, larger batches rather than a long queue; only the size cap cuts batches while waiting.
 * - Unacknowledged batches are kept. A disconnect fails the pending ack (socket.io calls timed acks
 *   with an error); the batch is resent when the socket emits `connect` again. An ack timeout
 *   resends at once; `ok: false` resends after a growing delay (1 s … 10 s).
 * - An ack with `stop` calls `onStop` (the runner aborts the engine, which checkpoints and ends with
 *   a cancelled run_end, still delivered). `stop` with `ok: false` means the server refuses this
 *   run's events altogether (unknown or reassigned run): the rest is discarded and drain resolves
 *   (abandon(), which the worker also calls when the dashboard assigns a newer attempt of the run).
 * - Nothing is ever dropped otherwise; a backlog that grows large (dashboard down for long) is
 *   reported through `log` at doubling thresholds.
 */
import type { EngineEvent, EventBatchMsg, EventsAck } from "../../lib/contracts/index.ts";
import { BATCH_MS } from "../../lib/contracts/index.ts";
import { errorMessage, silentLogger, type Logger } from "./log.ts";
import type { WorkerSocket } from "./socket.ts";

export interface BatcherOptions {
  socket: WorkerSocket;
  runId: string;
  /** First seq to use (RunAssignment.nextSeq). */
  nextSeq: number;
  batchMs?: number;
  /** How long to wait for an EventsAck before resending (ms). */
  ackTimeoutMs?: number;
  /** Size cap of one batch, estimated as the JSON length of its events. */
  maxBatchBytes?: number;
  /** First backlog size (JSON bytes not yet acknowledged) that logs a warning; doubles after. */
  warnBacklogBytes?: number;
  /** First delay before resending a batch the server answered with ok: false (ms). */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** Called once, on the first ack with `stop`. */
  onStop?: (ack: EventsAck) => void;
  log?: Logger;
}

interface Batch {
  seq: number;
  events: EngineEvent[];
  bytes: number;
}

export class EventBatcher {
  readonly runId: string;
  private readonly socket: WorkerSocket;
  private readonly batchMs: number;
  private readonly ackTimeoutMs: number;
  private readonly maxBatchBytes: number;
  private readonly warnBase: number;
  private readonly retryBase: number;
  private readonly retryMax: number;
  private readonly onStop?: (ack: EventsAck) => void;
  private readonly log: Logger;

  private buffer: EngineEvent[] = [];
  private bufferSizes: number[] = [];
  private bufferBytes = 0;
  private bufferSince = 0;
  /** Frozen batches in seq order; queue[0] is the one sent (or to send) next. */
  private readonly queue: Batch[] = [];
  private seq: number;
  private ackedSeq: number;
  private inFlight: { seq: number; attempt: number } | null = null;
  private attempts = 0;
  private cutTimer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private retryDelay: number;
  private flushNow = false;
  private stopped = false;
  private rejected = false;
  private closed = false;
  private warnAt: number;
  private drainWaiters: (() => void)[] = [];
  private readonly onConnect = () => {
    // acks of the old connection were failed by socket.io on disconnect; forget any leftover
    if (this.inFlight) this.inFlight = null;
    this.pump();
  };

  constructor(opts: BatcherOptions) {
    if (!Number.isInteger(opts.nextSeq)) throw new Error(`nextSeq must be an integer, got ${opts.nextSeq}`);
    this.socket = opts.socket;
    this.runId = opts.runId;
    this.seq = opts.nextSeq;
    this.ackedSeq = opts.nextSeq - 1;
    this.batchMs = opts.batchMs ?? BATCH_MS;
    this.ackTimeoutMs = opts.ackTimeoutMs ?? 10_000;
    this.maxBatchBytes = opts.maxBatchBytes ?? 512 * 1024;
    this.warnBase = opts.warnBacklogBytes ?? 32 * 1024 * 1024;
    this.warnAt = this.warnBase;
    this.retryBase = opts.retryDelayMs ?? 1_000;
    this.retryMax = opts.maxRetryDelayMs ?? 10_000;
    this.retryDelay = this.retryBase;
    this.onStop = opts.onStop;
    this.log = opts.log ?? silentLogger;
    this.socket.on("connect", this.onConnect);
  }

  /** Last seq the server acknowledged (nextSeq - 1 before the first ack). */
  get lastAckedSeq(): number {
    return this.ackedSeq;
  }

  /** Events not yet acknowledged (buffered or in unacknowledged batches). */
  get pendingEvents(): number {
    return this.buffer.length + this.queue.reduce((n, b) => n + b.events.length, 0);
  }

  /** Events not yet numbered into a batch. */
  get bufferedEvents(): number {
    return this.buffer.length;
  }

  /** Estimated JSON bytes not yet acknowledged. */
  get pendingBytes(): number {
    return this.bufferBytes + this.queue.reduce((n, b) => n + b.bytes, 0);
  }

  /** True once the server refused this run's events (ack with stop and not ok). */
  get isRejected(): boolean {
    return this.rejected;
  }

  push(e: EngineEvent): void {
    if (this.closed || this.rejected) return;
    const size = JSON.stringify(e).length;
    if (this.buffer.length === 0) this.bufferSince = performance.now();
    this.buffer.push(e);
    this.bufferSizes.push(size);
    this.bufferBytes += size;
    if (e.type === "run_end") this.flushNow = true;
    this.checkBacklog();
    this.pump();
  }

  /** Flushes what is buffered and resolves when every event has been acknowledged. */
  drain(): Promise<void> {
    this.flushNow = true;
    return new Promise((resolve) => {
      this.drainWaiters.push(resolve);
      this.pump();
    });
  }

  /**
   * Gives up delivery: what is not acknowledged is discarded, later events are ignored and drain()
   * resolves (isRejected turns true). For a run the dashboard no longer takes from this worker;
   * the next attempt resumes from a checkpoint behind every acknowledged event and re-sends the
   * rest. Returns how many events were discarded.
   */
  abandon(): number {
    if (this.rejected) return 0;
    this.rejected = true;
    const lost = this.pendingEvents;
    this.buffer = [];
    this.bufferSizes = [];
    this.bufferBytes = 0;
    this.queue.length = 0;
    this.inFlight = null;
    this.clearCutTimer();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.resolveDrains();
    return lost;
  }

  /** Stops timers and socket listeners. Pending drain() promises stay unresolved. */
  close(): void {
    this.closed = true;
    this.socket.off("connect", this.onConnect);
    this.clearCutTimer();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  // ---------------------------------------------------------------------------------------------

  private pump(): void {
    if (this.closed) return;
    if (this.rejected) return this.resolveDrains();
    this.cut();
    if (this.buffer.length > 0 && this.queue.length === 0 && !this.cutTimer) {
      const wait = this.bufferSince + this.batchMs - performance.now();
      if (wait > 0) {
        this.cutTimer = setTimeout(() => {
          this.cutTimer = null;
          this.pump();
        }, Math.ceil(wait));
      }
    }
    if (this.queue.length > 0 && !this.inFlight && !this.retryTimer && this.socket.connected) this.send(this.queue[0]);
    if (this.queue.length === 0 && this.buffer.length === 0) {
      // a drain is over: later events batch normally again (unless a run_end is pushed)
      this.flushNow = false;
      this.resolveDrains();
    }
  }

  /** Freezes buffered events into numbered batches where the rules above say so. */
  private cut(): void {
    while (this.buffer.length > 0) {
      const full = this.bufferBytes >= this.maxBatchBytes;
      const due = this.flushNow || performance.now() - this.bufferSince >= this.batchMs;
      // coalesce while a batch is unacknowledged; only the size cap cuts then
      if (!(full || (due && this.queue.length === 0))) break;
      let n = 0;
      let bytes = 0;
      while (n < this.buffer.length && (n === 0 || bytes + this.bufferSizes[n] <= this.maxBatchBytes)) bytes += this.bufferSizes[n++];
      const events = this.buffer.splice(0, n);
      this.bufferSizes.splice(0, n);
      this.bufferBytes -= bytes;
      this.bufferSince = performance.now();
      this.queue.push({ seq: this.seq++, events, bytes });
      this.clearCutTimer();
    }
  }

  private send(batch: Batch): void {
    const attempt = ++this.attempts;
    this.inFlight = { seq: batch.seq, attempt };
    const msg: EventBatchMsg = { runId: this.runId, seq: batch.seq, events: batch.events };
    this.socket.timeout(this.ackTimeoutMs).emit("run:events", msg, (err: Error | null, ack: EventsAck) => {
      this.onAck(batch, attempt, err, ack);
    });
  }

  private onAck(batch: Batch, attempt: number, err: Error | null, ack: EventsAck | undefined): void {
    if (!this.inFlight || this.inFlight.attempt !== attempt || this.closed) return;
    this.inFlight = null;
    if (err) {
      if (this.socket.connected) {
        this.log("warn", `run ${this.runId}: no ack for batch ${batch.seq} within ${this.ackTimeoutMs} ms; resending`);
        this.pump();
      }
      // disconnected: the `connect` listener resends
      return;
    }
    if (!ack || typeof ack !== "object") {
      this.retryLater(`run ${this.runId}: batch ${batch.seq}: malformed ack ${errorMessage(ack)}`);
      return;
    }
    if (ack.stop && !this.stopped) {
      this.stopped = true;
      try {
        this.onStop?.(ack);
      } catch (e) {
        this.log("error", `run ${this.runId}: stop handler failed: ${errorMessage(e)}`);
      }
    }
    if (!ack.ok) {
      if (ack.stop) {
        const lost = this.abandon();
        this.log("warn", `run ${this.runId}: the dashboard refused batch ${batch.seq} and asked to stop (${ack.error ?? "no reason given"}); ${lost} undelivered events discarded`);
        return;
      }
      this.retryLater(`run ${this.runId}: the dashboard did not store batch ${batch.seq} (${ack.error ?? "no reason given"})`);
      return;
    }
    if (ack.seq !== batch.seq) {
      this.retryLater(`run ${this.runId}: ack names seq ${ack.seq} for batch ${batch.seq}`);
      return;
    }
    this.queue.shift();
    this.ackedSeq = batch.seq;
    this.retryDelay = this.retryBase;
    this.checkBacklog();
    this.pump();
  }

  private retryLater(why: string): void {
    const delay = this.retryDelay;
    this.retryDelay = Math.min(this.retryMax, this.retryDelay * 2);
    this.log("warn", `${why}; resending in ${(delay / 1000).toFixed(1)} s`);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.pump();
    }, delay);
  }

  private checkBacklog(): void {
    const bytes = this.pendingBytes;
    if (bytes >= this.warnAt) {
      this.log(
        "warn",
        `run ${this.runId}: ${(bytes / 1048576).toFixed(1)} MB of events (${this.pendingEvents}) wait for the dashboard's acknowledgement; kept in memory until it answers`,
      );
      while (this.warnAt <= bytes) this.warnAt *= 2;
    } else if (this.warnAt > this.warnBase && bytes < this.warnBase / 2) {
      this.warnAt = this.warnBase;
      this.log("info", `run ${this.runId}: event backlog delivered`);
    }
  }

  private clearCutTimer(): void {
    if (this.cutTimer) clearTimeout(this.cutTimer);
    this.cutTimer = null;
  }

  private resolveDrains(): void {
    const ws = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of ws) w();
  }
}
