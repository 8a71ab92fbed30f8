/**
 * Long synchronous loops (evaluation, sweeps) call `breathe()` between items: every `everyMs` it
 * yields to the event loop, so a cancel arriving over IPC can trip the abort signal the loop
 * checks. Without it an eval of thousands of episodes ignores cancel until it is done.
 */
export function breather(everyMs = 50): () => Promise<void> {
  let last = performance.now();
  return async () => {
    if (performance.now() - last < everyMs) return;
    await new Promise<void>((r) => setImmediate(r));
    last = performance.now();
  };
}
