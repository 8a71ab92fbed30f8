/**
 * The engine side of a run: a child process the worker forks per run (and once at start to probe
 * the tfjs backend; a one-run worker's probe process stays and takes its run, see `stay`). Training runs here, not in the worker's main process, so the socket,
 * heartbeats and acks stay responsive while the engine computes synchronously for seconds (data
 * loading, evaluation), and a crash of the backend (a wasm abort, a native fault, running out of
 * memory) fails one run instead of the worker. Each run also starts from a fresh tfjs state.
 *
 * IPC (JSON over the fork channel), parent → child: EngineRequest; child → parent: EngineReply.
 * If the parent goes away, the child exits at once (no checkpoint: see the "disconnect" handler).
 */
import { exitWithParent } from "./exit-with-parent.ts";
import { configureEngine, readerUrl, type EngineEvent, type ReaderSpec, type RunConfig } from "../qrag/index.ts";
import { settings } from "../settings.ts";
import type { SweepReader, SweepSpec } from "../../lib/contracts/index.ts";
import { errorMessage } from "./log.ts";

export type EngineRequest =
  /**
   * `stay`: after the reply, wait for a run's request instead of exiting: the worker's first run
   * (a Slurm job's right after connecting) then starts in this process, with tfjs and the backend
   * already loaded, instead of a second process loading them again. The worker disconnects an
   * engine it no longer keeps, which ends it.
   */
  | { type: "probe"; stay?: boolean }
  /** `config` was validated by the worker (runner.ts) before the engine process was forked. */
  | { type: "start"; config: RunConfig; resumeFrom?: string; runDir?: string; dataRoot: string }
  /** A sweep job; `checkpoint` is resolved and checked readable by the worker. */
  | { type: "sweep"; spec: SweepSpec; checkpoint: string; skipLengths: number[]; dataRoot: string }
  /** An agent evaluation job (spec.agentRun); `checkpoint`: the run's, resolved and checked by the worker (none: bm25 on the preset's samples). */
  | { type: "agent"; spec: SweepSpec; checkpoint?: string; skipLengths: number[]; dataRoot: string }
  | { type: "cancel" }
  /** Answer to a "barrier": `ok` once every event sent before it was acknowledged by the dashboard. */
  | { type: "barrier_ok"; id: number; ok: boolean };

export type EngineReply =
  /** `skipped`: on auto, why the backends before it were not used (one line each). */
  | { type: "backend"; backend: string; device: string; skipped?: string[] }
  | { type: "event"; event: EngineEvent }
  | { type: "done"; status: "completed" | "cancelled"; step: number; updates: number }
  | { type: "error"; message: string }
  /** The cancel request arrived (the event loop is free, so the abort will be seen at once). */
  | { type: "cancel_seen" }
  /** Asks the worker to confirm that everything sent so far is stored, before a checkpoint. */
  | { type: "barrier"; id: number };

const ac = new AbortController();
let busy = false;
const barriers = new Map<number, (ok: boolean) => void>();
let barrierIds = 0;

/** Resolves true once the worker confirmed that the dashboard stored every event sent before. */
function barrier(): Promise<boolean> {
  const id = ++barrierIds;
  return new Promise((resolve) => {
    barriers.set(id, resolve);
    void send({ type: "barrier", id });
  });
}

function send(m: EngineReply): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    try {
      process.send(m, undefined, {}, () => resolve());
    } catch {
      resolve();
    }
  });
}

/** Sends the last reply, waits until it (and everything before it) left, and exits. */
async function finish(m: EngineReply, code: number): Promise<never> {
  await send(m);
  process.exit(code);
}

/** A dashboard sweep's reader as the engine opens it; the endpoint's URL is this worker's setting. */
function readerSpec(r: SweepReader): ReaderSpec {
  if (r.provider === "gguf") return { spec: `gguf:${r.file}` };
  const url = readerUrl();
  if (!url) throw new Error(`the sweep's reader is the OpenAI-compatible endpoint, but this worker has no QRAG_READER_URL (set it to the endpoint's base URL, e.g. http://127.0.0.1:8000/v1)`);
  return { spec: `openai:${r.model}`, url };
}

async function handle(msg: EngineRequest): Promise<void> {
  if (msg.type === "cancel") {
    ac.abort();
    void send({ type: "cancel_seen" });
    return;
  }
  if (msg.type === "barrier_ok") {
    barriers.get(msg.id)?.(msg.ok);
    barriers.delete(msg.id);
    return;
  }
  if (busy) return;
  busy = true;
  try {
    if (msg.type === "probe") {
      const { pickBackend } = await import("../qrag/runtime.ts");
      const info = await pickBackend();
      const reply: EngineReply = { type: "backend", backend: info.backend, device: info.device, ...(info.skipped ? { skipped: info.skipped } : {}) };
      if (!msg.stay) return await finish(reply, 0);
      busy = false; // the run's request comes next
      return await send(reply);
    }
    if (msg.type === "sweep") {
      const { sweep } = await import("../qrag/runtime.ts");
      const { spec } = msg;
      await sweep({
        checkpoint: msg.checkpoint, lengths: spec.lengths, samples: spec.samples, threshold: spec.threshold, baselines: spec.baselines,
        neverTerminate: !spec.oracleStop, skipLengths: msg.skipLengths, emitEpisodes: true, dataRoot: msg.dataRoot, reader: spec.reader && readerSpec(spec.reader),
        onEvent: (event) => void send({ type: "event", event }), signal: ac.signal,
      });
      return await finish({ type: "done", status: ac.signal.aborted ? "cancelled" : "completed", step: 0, updates: 0 }, 0);
    }
    if (msg.type === "agent") {
      const { runAgent } = await import("../qrag/index.ts");
      const a = msg.spec.agentRun!;
      // qrag: the checkpoint is the retriever; dense and bm25 take the run's test samples from it
      await runAgent({
        model: readerSpec(a.model), retriever: a.retriever === "qrag" ? msg.checkpoint! : a.retriever, checkpoint: a.retriever === "qrag" ? undefined : msg.checkpoint,
        task: msg.checkpoint ? undefined : a.task, lengths: msg.spec.lengths.filter((l) => !msg.skipLengths.includes(l)), samples: msg.spec.samples,
        format: a.format, maxCalls: a.maxCalls, maxTokens: a.maxTokens, dataRoot: msg.dataRoot, onEvent: (event) => void send({ type: "event", event }), signal: ac.signal,
      });
      return await finish({ type: "done", status: ac.signal.aborted ? "cancelled" : "completed", step: 0, updates: 0 }, 0);
    }
    const { train } = await import("../qrag/runtime.ts");
    const res = await train(msg.config, {
      onEvent: (event) => void send({ type: "event", event }),
      signal: ac.signal,
      resumeFrom: msg.resumeFrom,
      runDir: msg.runDir,
      beforeCheckpoint: barrier,
      dataRoot: msg.dataRoot,
    });
    await finish({ type: "done", status: res.status, step: res.step, updates: res.updates }, 0);
  } catch (e) {
    await finish({ type: "error", message: errorMessage(e) }, 1);
  }
}

if (!process.send) {
  process.stderr.write("engine-process.ts is started by the trainer worker (server/worker/main.ts), not directly\n");
  process.exit(2);
}
// the engine's settings from the environment the worker handed down (QRAG_BACKEND: the probed backend)
configureEngine(settings().engine);
// ...and within 0.1 s when a long computation holds the event loop (the disconnect below waits for
// it); requests wait until the watcher runs
const watching = exitWithParent();
process.on("message", (m: EngineRequest) => void watching.then(() => handle(m), (e: unknown) => finish({ type: "error", message: errorMessage(e) }, 1)));
// The worker went away (killed, crashed): exit now, without the checkpoint an abort would save.
// Events it had not yet delivered died with it, so a checkpoint now would run ahead of what the
// dashboard stored, and the next attempt would resume past points it never received.
process.on("disconnect", () => process.exit(70));
// Report crashes concisely: Node would print the throwing source line, which for tfjs-wasm is its
// whole minified bundle.
process.on("uncaughtException", (e) => void finish({ type: "error", message: errorMessage(e) }, 1));
process.on("unhandledRejection", (e) => void finish({ type: "error", message: errorMessage(e) }, 1));
// the worker handles SIGINT/SIGTERM (it cancels through IPC); a terminal's Ctrl-C reaches us too
process.on("SIGINT", () => ac.abort());
process.on("SIGTERM", () => ac.abort());
