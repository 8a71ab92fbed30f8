/**
 * Dawn's event polling without a busy loop.
 *
 * dawn.node (the `webgpu` package) learns that GPU work finished (a read's `mapAsync`,
 * `onSubmittedWorkDone`, error scopes) by polling the device: while any such promise is pending it
 * hands the global `setImmediate` a new native callback that polls and schedules itself again
 * (its AsyncRunner). A read awaiting the GPU therefore spins one CPU core. On a CPU adapter
 * (lavapipe, CI's: the "GPU" is this machine's cores) that is a core the GPU work needed: on 2
 * cores, 10 rounds of ten 512² products ran in 5.3 s spinning and 2.6 s without.
 *
 * Here Dawn's callbacks (native, nameless, without parameters: what AsyncRunner passes) keep
 * `setImmediate` during the first milliseconds of a wait, then poll once a millisecond with
 * `setTimeout`: on a CPU adapter after SPIN_MS (every millisecond spun is taken from the GPU
 * work), on a GPU after GPU_SPIN_MS (a read's round trip is ~0.25 ms and the training loop's reads
 * wait a few milliseconds, which a timer would end up to a millisecond late; an encoding of 40,000
 * chunks waits longer). A wait starts where Dawn schedules its poll from outside one (a `mapAsync`
 * with nothing pending before). Every other callback is scheduled as it was. Installed once, with
 * Dawn (webgpu.ts).
 */

/** Milliseconds of a wait polled at once on a CPU adapter (lavapipe), before polling on a 1 ms timer. */
export const SPIN_MS = 2;
/** The same on a GPU. */
export const GPU_SPIN_MS = 50;

/** The spin of a wait on this adapter: short on a CPU adapter, whose GPU work needs the core. */
export function spinMsFor(fallbackAdapter: boolean): number {
  return fallbackAdapter ? SPIN_MS : GPU_SPIN_MS;
}

/** Dawn's polls since installed: scheduled at once (a wait's first milliseconds) and on the timer. */
export const dawnPolls = { immediate: 0, timed: 0 };

let installed = false;

/** Whether `fn` is AsyncRunner's poll: a native function with no name and no parameters (promise resolvers take one). */
function isDawnPoll(fn: unknown): boolean {
  return typeof fn === "function" && fn.length === 0 && fn.name === "" && /\{\s*\[native code\]\s*\}$/.test(Function.prototype.toString.call(fn));
}

/** Puts Dawn's polls of a wait longer than `spinMs` on a 1 ms timer (once per process: the first call's `spinMs` holds). */
export function installDawnPolling(spinMs = SPIN_MS): void {
  if (installed) return;
  installed = true;
  const immediate = globalThis.setImmediate;
  let waitStart = 0;
  // a poll scheduled from inside a poll continues its wait; one scheduled elsewhere (a mapAsync
  // call, with nothing pending before) starts a new one
  let inPoll = false;
  const poll = function (fn: (...a: unknown[]) => void, ...args: unknown[]) {
    if (!isDawnPoll(fn)) return immediate(fn, ...args);
    const now = performance.now();
    if (!inPoll) waitStart = now;
    const run = () => {
      inPoll = true;
      try {
        fn();
      } finally {
        inPoll = false;
      }
    };
    if (now - waitStart < spinMs) {
      dawnPolls.immediate++;
      return immediate(run);
    }
    dawnPolls.timed++;
    return setTimeout(run, 1);
  };
  // util.promisify(setImmediate) reads its custom form from the function
  Object.assign(poll, immediate);
  globalThis.setImmediate = poll as typeof setImmediate;
}
