/**
 * GPU time per phase from timestamp queries (issue 27 part 1: GPU time against host time). Once
 * `gpuTimingOn()` ran, every compute pass begun on the device, ours (model/webgpu/) and tfjs's,
 * writes a timestamp where it begins and where it ends, tagged with the phase active when it was
 * recorded (device.ts withPhase; while timing, a phase change ends tfjs's open pass, so each pass
 * belongs to one phase). `settleGpuTimes()` submits tfjs's pending commands, resolves the
 * timestamps and sums each pass's end − begin per phase.
 *
 * What the sum means: the GPU's time inside passes. Wall time far above it says the GPU waits on
 * the host (recording, reads' round trips), not on its kernels.
 *
 * `gpuTimingOn({ byProgram: true })` also times each of our programs apart (device.ts gives every
 * one a pass of its own while it is on): `settleGpuTimes().byProgram`, which kernel the GPU spends
 * its time in. A pass each adds the passes' own cost, so the phases' sums then run a little high;
 * the benches time per program in a run of its own.
 *
 * Why a hook on createCommandEncoder: tfjs opens its compute passes itself; giving every encoder's
 * passes timestampWrites times both kinds without touching either's code. Dawn quantizes
 * timestamps unless told not to (webgpu.ts creates the instance without it).
 */
import { activePhase, counterSnapshot, onePassPerProgram, setPhaseHook, setProgramTiming, zeroCounters, type Phase, type PhaseCounters } from "./device.ts";
import * as tf from "@tensorflow/tfjs";

/** WebGPU's bound on a query set's size: 2,048 timed passes per set. */
const CAPACITY = 4096;
/**
 * Query sets made on demand, one after another as each fills: up to 32,768 timed passes between
 * two settles (a BERT-base training iteration, each program in a pass of its own, is ~11,400).
 */
const MAX_SETS = 16;
const QUERY_RESOLVE = 0x200, COPY_SRC = 0x4, COPY_DST = 0x8, MAP_READ = 0x1;

interface PassDesc {
  timestampWrites?: unknown;
}
interface EncoderLike {
  beginComputePass(d?: PassDesc): unknown;
  resolveQuerySet(q: unknown, first: number, count: number, dst: unknown, offset: number): void;
  copyBufferToBuffer(src: unknown, so: number, dst: unknown, d0: number, size: number): void;
  finish(): unknown;
}
interface MappableBuffer {
  mapAsync(mode: number): Promise<void>;
  getMappedRange(): ArrayBuffer;
  unmap(): void;
}
interface TimingDevice {
  features: { has(f: string): boolean };
  createCommandEncoder(d?: object): EncoderLike;
  createQuerySet(d: { type: "timestamp"; count: number }): unknown;
  createBuffer(d: { size: number; usage: number }): MappableBuffer;
  queue: { submit(c: unknown[]): void };
}
interface BackendLike {
  device: TimingDevice;
  commandEncoder: unknown;
  endComputePassEncoder(): void;
  submitQueue(): void;
}

/** A timed pass: its phase and, timing by program, the keys of our programs in it (none: tfjs's kernels). */
interface TimedPass {
  phase: Phase;
  programs: string[] | null;
}

/** A query set and the buffers its timestamps are resolved into and read from. */
interface QuerySlots {
  querySet: unknown;
  resolve: MappableBuffer;
  read: MappableBuffer;
}

interface Timing {
  on: boolean;
  /** The query sets made so far (the first with the timing, more as passes fill them). */
  sets: QuerySlots[];
  /** Each timed pass since the last settle (pass j wrote queries 2j, 2j + 1 of all sets end to end). */
  passes: TimedPass[];
  /** The pass being recorded, if timed: our programs dispatched now belong to it. */
  open: TimedPass | null;
  /** Passes begun while the query set was full (not timed) since timing began. */
  untimed: number;
  /** The unpatched createCommandEncoder (settle's own encoder writes no timestamps). */
  plainEncoder: (d?: object) => EncoderLike;
}

const timings = new WeakMap<TimingDevice, Timing>();

function backend(): BackendLike | null {
  return tf.getBackend() === "webgpu" ? (tf.backend() as unknown as BackendLike) : null;
}

/**
 * Starts timing compute passes on the webgpu backend's device; false (nothing timed) on another
 * backend or an adapter without timestamp queries. Passes already open are not timed: tfjs's
 * pending commands are submitted first. `byProgram`: each of our programs in a pass of its own.
 */
export function gpuTimingOn(opts: { byProgram?: boolean } = {}): boolean {
  const be = backend();
  if (!be || !be.device.features.has("timestamp-query")) return false;
  const device = be.device;
  let t = timings.get(device);
  if (!t) {
    const plainEncoder = device.createCommandEncoder.bind(device);
    const newSet = (): QuerySlots => ({
      querySet: device.createQuerySet({ type: "timestamp", count: CAPACITY }),
      resolve: device.createBuffer({ size: CAPACITY * 8, usage: QUERY_RESOLVE | COPY_SRC }),
      read: device.createBuffer({ size: CAPACITY * 8, usage: MAP_READ | COPY_DST }),
    });
    t = {
      on: false,
      sets: [newSet()],
      passes: [],
      open: null,
      untimed: 0,
      plainEncoder,
    };
    const timing = t;
    device.createCommandEncoder = (d?: object) => {
      const enc = plainEncoder(d);
      const begin = enc.beginComputePass.bind(enc);
      enc.beginComputePass = (pd: PassDesc = {}) => {
        timing.open = null;
        if (!timing.on || pd.timestampWrites) return begin(pd);
        const q = 2 * timing.passes.length;
        const set = Math.floor(q / CAPACITY);
        if (set >= MAX_SETS) {
          timing.untimed++;
          return begin(pd);
        }
        if (set === timing.sets.length) timing.sets.push(newSet());
        const i = q % CAPACITY;
        timing.open = { phase: activePhase(), programs: onePassPerProgram() ? [] : null };
        timing.passes.push(timing.open);
        return begin({ ...pd, timestampWrites: { querySet: timing.sets[set].querySet, beginningOfPassWriteIndex: i, endOfPassWriteIndex: i + 1 } });
      };
      return enc;
    };
    timings.set(device, t);
  }
  flush(be);
  t.on = true;
  t.passes = [];
  t.open = null;
  // tfjs keeps one compute pass open across its programs: end it where the phase changes
  setPhaseHook(() => backend()?.endComputePassEncoder());
  const timing = t;
  setProgramTiming(opts.byProgram ? (key) => timing.open?.programs?.push(key) : null);
  return true;
}

/** Stops timing (passes begun from now on write no timestamps); call settleGpuTimes for the last ones. */
export function gpuTimingOff(): void {
  const be = backend();
  const t = be && timings.get(be.device);
  if (t) t.on = false;
  setPhaseHook(null);
  setProgramTiming(null);
}

/** GPU milliseconds per phase of the passes timed since the last settle, and the passes left untimed (query set full). */
export interface GpuTimes {
  ms: Partial<Record<Phase, number>>;
  /**
   * Timing `byProgram` (else empty), per pass content: a program's key (our programs get a pass
   * each), "(tfjs kernels)" where none of ours. Milliseconds and passes.
   */
  byProgram: Record<string, { ms: number; passes: number }>;
  passes: number;
  untimed: number;
}

/**
 * The GPU time of the passes timed since the last settle (waits for the GPU to finish them). Call
 * it outside what is being counted: it submits tfjs's pending commands (one submit).
 */
export async function settleGpuTimes(): Promise<GpuTimes> {
  const be = backend();
  const t = be && timings.get(be.device);
  if (!be || !t) return { ms: {}, byProgram: {}, passes: 0, untimed: 0 };
  const passes = t.passes;
  const untimed = t.untimed;
  t.passes = [];
  t.open = null;
  t.untimed = 0;
  const ms: Partial<Record<Phase, number>> = {};
  const byProgram: GpuTimes["byProgram"] = {};
  if (passes.length === 0) return { ms, byProgram, passes: 0, untimed };
  flush(be); // the timed passes go first: the resolve reads what they wrote
  const n = 2 * passes.length;
  const used = t.sets.slice(0, Math.ceil(n / CAPACITY));
  const count = (k: number) => Math.min(CAPACITY, n - k * CAPACITY);
  const enc = t.plainEncoder();
  used.forEach((s, k) => {
    enc.resolveQuerySet(s.querySet, 0, count(k), s.resolve, 0);
    enc.copyBufferToBuffer(s.resolve, 0, s.read, 0, count(k) * 8);
  });
  be.device.queue.submit([enc.finish()]);
  const ts = new BigUint64Array(n);
  for (const [k, s] of used.entries()) {
    await s.read.mapAsync(MAP_READ);
    ts.set(new BigUint64Array(s.read.getMappedRange().slice(0, count(k) * 8)), k * CAPACITY);
    s.read.unmap();
  }
  passes.forEach((p, j) => {
    const begin = ts[2 * j], end = ts[2 * j + 1];
    const d = end > begin ? Number(end - begin) / 1e6 : 0;
    if (d > 0) ms[p.phase] = (ms[p.phase] ?? 0) + d;
    if (!p.programs) return;
    const key = p.programs.length ? p.programs.join("+") : "(tfjs kernels)";
    const b = (byProgram[key] ??= { ms: 0, passes: 0 });
    b.ms += d;
    b.passes++;
  });
  return { ms, byProgram, passes: passes.length, untimed };
}

/** Submits tfjs's pending command encoder, if any. */
function flush(be: BackendLike): void {
  if (be.commandEncoder === null) return;
  be.endComputePassEncoder();
  be.submitQueue();
}

/** Per-phase counters with settled GPU times in their `gpuMs` (a phase only timed gets zeroed counters). */
export function withGpuTimes(counts: Partial<Record<Phase, PhaseCounters>>, times: GpuTimes): Partial<Record<Phase, PhaseCounters>> {
  const out: Partial<Record<Phase, PhaseCounters>> = {};
  for (const [p, c] of Object.entries(counts) as [Phase, PhaseCounters][]) out[p] = { ...c };
  for (const [p, ms] of Object.entries(times.ms) as [Phase, number][]) {
    out[p] ??= zeroCounters();
    out[p].gpuMs += ms;
  }
  return out;
}

/**
 * Stops timing and returns the counters since their reset, with the GPU time of their passes in
 * `gpuMs` where `gpuTimed` (gpuTimingOn ran before the reset). `timed`: the GPU times are in (none
 * untimed); `untimed`: passes the query set had no room for. The counters are read before the
 * settle's own submit.
 */
export async function settledCounters(gpuTimed: boolean): Promise<{ counts: Partial<Record<Phase, PhaseCounters>>; timed: boolean; untimed: number }> {
  gpuTimingOff();
  const snap = counterSnapshot();
  const times = gpuTimed ? await settleGpuTimes() : null;
  const timed = times !== null && times.untimed === 0;
  return { counts: timed ? withGpuTimes(snap, times) : snap, timed, untimed: times?.untimed ?? 0 };
}
