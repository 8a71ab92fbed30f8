/**
 * Where the engine's tensors live, and what it costs to talk to them.
 *
 * - `onDevice()`: the one switch between the two model paths. On a GPU backend (webgpu) the engine
 *   keeps activations on the device: dense batched attention with tfjs autograd, tf.gather
 *   embeddings, top-k on the device, async reads only. Elsewhere (wasm, cpu, tfjs-node) it takes
 *   the CPU-tuned path (JS attention kernels, synchronous reads, which cost nothing there).
 * - Counters per phase (encode, rollout, target, update, eval): tensor reads (`data`/`dataSync`
 *   calls, and how many of them were synchronous), kernels run by the tfjs engine (and fused
 *   programs, `noteDispatch`), and GPU program dispatches (webgpu only; other backends dispatch one
 *   kernel per kernel). Installed on
 *   first use of `countersOn()`; a `withPhase` scope attributes everything inside it.
 */
import * as tf from "@tensorflow/tfjs";

/** True when the active backend keeps tensors on a GPU (the device path). */
export function onDevice(): boolean {
  return tf.getBackend() === "webgpu";
}

export type Phase = "encode" | "rollout" | "target" | "update" | "eval" | "other";

export interface PhaseCounters {
  /** Tensor reads to the host: data() + dataSync() calls. */
  reads: number;
  /** Of those, synchronous (dataSync). The device path must make none. */
  syncReads: number;
  /** Kernels run through the tfjs engine (ops), plus our fused programs (model/webgpu/). */
  kernels: number;
  /** GPU programs recorded (webgpu); equals `kernels` elsewhere. */
  dispatches: number;
  /** Of `kernels`, our own fused programs (model/webgpu/), recorded outside the tfjs engine. */
  fused: number;
  /** Command buffers submitted to the GPU queue (webgpu; 0 elsewhere). */
  submits: number;
  /** Milliseconds spent awaiting reads (`data()`): the host waiting for the GPU. */
  readWaitMs: number;
  /** Wall milliseconds the phase was the active one (its host work is wallMs − readWaitMs). */
  wallMs: number;
  /** GPU programs of ours compiled (a pipeline made: new code), and the host ms their compiles took. */
  compiles: number;
  compileMs: number;
  /** GPU milliseconds inside the phase's compute passes (timestamp queries: the benches fill it from gpu-timing.ts; 0 untimed). */
  gpuMs: number;
}

const counters = new Map<Phase, PhaseCounters>();
/** Kernels by name (tfjs kernel names, fused programs by their key), all phases together. */
const kernelNames = new Map<string, number>();
let phase: Phase = "other";
/** When `phase` became the active one: its wall time is charged at the next change (chargePhase). */
let phaseSince = performance.now();
let installedEngine = false;
/** Kernels the tfjs engine ran, all phases together (tests: none inside a recorded op). */
let engineKernels = 0;

/** The tfjs engine's kernels so far (counted once countersOn ran). */
export function tfjsKernelCount(): number {
  return engineKernels;
}
const patchedBackends = new WeakSet<object>();

/** A phase's counters before anything was counted. */
export const zeroCounters = (): PhaseCounters => ({ reads: 0, syncReads: 0, kernels: 0, dispatches: 0, fused: 0, submits: 0, readWaitMs: 0, wallMs: 0, compiles: 0, compileMs: 0, gpuMs: 0 });

function bump(field: keyof PhaseCounters, by = 1): void {
  let c = counters.get(phase);
  if (!c) counters.set(phase, (c = zeroCounters()));
  c[field] += by;
}

interface EngineLike {
  runKernelFunc: (p: unknown) => unknown;
  backend: object;
}
interface WebgpuLike {
  recordAndSubmit: (...a: unknown[]) => unknown;
  submitQueue: () => void;
}

/** Hooks the tfjs engine (once) and the active webgpu backend (once per instance). */
function install(): void {
  if (!installedEngine) {
    installedEngine = true;
    const eng = tf.engine() as unknown as EngineLike;
    const run = eng.runKernelFunc.bind(eng);
    eng.runKernelFunc = (p: unknown) => {
      engineKernels++;
      bump("kernels");
      const name = (p as { kernelName?: string }).kernelName ?? "(custom op)";
      kernelNames.set(name, (kernelNames.get(name) ?? 0) + 1);
      if (tf.getBackend() !== "webgpu") bump("dispatches");
      return run(p);
    };
    // Reads are counted at the Tensor API the engine uses (array() calls data() itself).
    const proto = tf.Tensor.prototype as unknown as { data: () => Promise<unknown>; dataSync: () => unknown };
    const data = proto.data;
    const dataSync = proto.dataSync;
    proto.data = async function (this: tf.Tensor) {
      bump("reads");
      const at = phase;
      const t0 = performance.now();
      try {
        return await data.call(this);
      } finally {
        // the phase the read began in pays for the wait, even if another phase began meanwhile
        const outer = phase;
        phase = at;
        bump("readWaitMs", performance.now() - t0);
        phase = outer;
      }
    };
    proto.dataSync = function (this: tf.Tensor) {
      bump("reads");
      bump("syncReads");
      return dataSync.call(this);
    };
  }
  if (tf.getBackend() === "webgpu") {
    const be = tf.backend() as unknown as WebgpuLike;
    if (!patchedBackends.has(be)) {
      patchedBackends.add(be);
      const rec = be.recordAndSubmit.bind(be);
      be.recordAndSubmit = (...a: unknown[]) => {
        bump("dispatches");
        return rec(...a);
      };
      const submit = be.submitQueue.bind(be);
      be.submitQueue = () => {
        bump("submits");
        submit();
      };
    }
  }
}

/**
 * Counts one GPU program recorded outside the tfjs engine (the fused kernels of model/webgpu/,
 * which record their own multi-output programs): one kernel and one dispatch.
 */
export function noteDispatch(key: string): void {
  dispatchHook?.(key);
  if (!installedEngine) return;
  const name = `fused ${key}`;
  kernelNames.set(name, (kernelNames.get(name) ?? 0) + 1);
  bump("kernels");
  bump("fused");
  bump("dispatches");
}

/** Counts one pipeline of ours compiled (raw-program.ts cachedPipeline), which took `ms` of the host's time. */
export function noteCompile(ms: number): void {
  if (!installedEngine) return;
  bump("compiles");
  bump("compileMs", ms);
}

/** Counts one command buffer submitted outside tfjs's queue (model/webgpu/recorded-encoder.ts). */
export function noteSubmit(): void {
  if (installedEngine) bump("submits");
}

/** The phase work is attributed to now (withPhase's). */
export function activePhase(): Phase {
  return phase;
}

/** Starts counting (idempotent; call after the backend is picked). */
export function countersOn(): void {
  install();
}

/** Counters since the last reset, per phase (phases with no activity are absent). */
export function counterSnapshot(): Partial<Record<Phase, PhaseCounters>> {
  install();
  chargePhase();
  const out: Partial<Record<Phase, PhaseCounters>> = {};
  for (const [p, c] of counters) out[p] = { ...c };
  return out;
}

export function resetCounters(): void {
  install();
  counters.clear();
  kernelNames.clear();
  phaseSince = performance.now();
}

/** Whether wall time is charged to the phases (phaseClock: a bench stops it between the iterations it times). */
let clockOn = true;

/** Charges the active phase its wall time since it became active (or since the reset, or the last charge). */
function chargePhase(): void {
  const now = performance.now();
  if (installedEngine && clockOn) bump("wallMs", now - phaseSince);
  phaseSince = now;
}

/**
 * Starts or stops charging wall time to the phases (on by default): a bench times its iterations
 * and not its own work between them, which would land in "other".
 */
export function phaseClock(on: boolean): void {
  chargePhase();
  clockOn = on;
}

/** Kernels run since the last reset by name, most frequent first. */
export function kernelNameCounts(): [string, number][] {
  return [...kernelNames].sort((a, b) => b[1] - a[1]);
}

/**
 * Per-program GPU timing (gpu-timing.ts `byProgram`): while on, every program of ours gets a
 * compute pass of its own (a pass is what a timestamp query times) and the hook hears its key.
 */
let dispatchHook: ((key: string) => void) | null = null;

/** True while each of our programs must be recorded in a compute pass of its own (a timing hook is set). */
export function onePassPerProgram(): boolean {
  return dispatchHook !== null;
}

export function setProgramTiming(hook: ((key: string) => void) | null): void {
  dispatchHook = hook;
}

/** Called when the phase changes (gpu-timing.ts ends tfjs's open compute pass: a pass is timed for one phase). */
let phaseHook: (() => void) | null = null;

export function setPhaseHook(hook: (() => void) | null): void {
  phaseHook = hook;
}

function enter(p: Phase): Phase {
  const outer = phase;
  if (p !== outer) {
    phaseHook?.();
    chargePhase();
  }
  phase = p;
  return outer;
}

function leave(outer: Phase): void {
  if (phase !== outer) {
    phaseHook?.();
    chargePhase();
  }
  phase = outer;
}

/** Runs `fn` with its reads/kernels attributed to `p` (restores the outer phase after). */
export function withPhase<T>(p: Phase, fn: () => T): T {
  const outer = enter(p);
  try {
    return fn();
  } finally {
    leave(outer);
  }
}

/** Async form of withPhase: the phase holds until the promise settles (the engine runs one loop at a time). */
export async function withPhaseAsync<T>(p: Phase, fn: () => Promise<T>): Promise<T> {
  const outer = enter(p);
  try {
    return await fn();
  } finally {
    leave(outer);
  }
}
