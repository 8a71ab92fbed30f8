/**
 * Errors the WebGPU device reports on its own (a buffer it could not create, a binding over a
 * limit, memory exhausted). WebGPU does not throw at the call: a failed buffer makes every later
 * program that uses it invalid, and the computation goes on with garbage until something far away
 * fails (BERT-base on an H100 ended "boltzmannTop5: no available candidate" two updates after its
 * first error). The device's listener (backend-webgpu.ts) keeps the first error; the training
 * iteration and the greedy episode end by raising it, so the run fails naming the cause.
 */
export class WebgpuDeviceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebgpuDeviceError";
  }
}

let first: string | null = null;

/** Called by the device's "uncapturederror" listener: keeps the first error (later ones follow from it). */
export function recordDeviceError(error: { message?: unknown; constructor?: { name?: string } } | undefined): void {
  if (first !== null) return;
  // Dawn's own text (no user content): its first line, which names the failed call
  const line = String(error?.message ?? "unknown error").split("\n")[0].slice(0, 300);
  first =
    error?.constructor?.name === "GPUOutOfMemoryError"
      ? `the GPU ran out of memory (${line}); set pass_batch_size (e.g. 16) to run the update in smaller passes, or lower batch_size or algo.encoder.max_length`
      : `WebGPU error: ${line}`;
}

/** Raises the device's first error since the last call, if any. */
export function throwIfDeviceError(): void {
  if (first === null) return;
  const message = first;
  first = null;
  throw new WebgpuDeviceError(message);
}

/**
 * Runs `fn` and raises the device's first error after it, or instead of the error `fn` threw:
 * that one is usually a consequence (garbage from an invalid buffer), the device's the cause.
 */
export async function deviceErrorsFirst<T>(fn: () => Promise<T>): Promise<T> {
  let out: T;
  try {
    out = await fn();
  } catch (e) {
    throwIfDeviceError();
    throw e;
  }
  throwIfDeviceError();
  return out;
}
