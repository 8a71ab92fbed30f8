/** How long to wait before retrying an endpoint: what the server asks, else exponential backoff. */

/** `retry-after-ms` (OpenAI's), then `retry-after` in seconds or as an HTTP date, else base · 2^retry. */
export function retryDelayMs(headers: Headers | undefined, retry: number, baseMs: number): number {
  const ms = Number.parseFloat(headers?.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const after = headers?.get("retry-after");
  if (after) {
    const s = Number.parseFloat(after);
    if (Number.isFinite(s) && s >= 0) return s * 1000;
    const date = Date.parse(after);
    if (Number.isFinite(date)) return Math.max(0, date - Date.now());
  }
  return baseMs * 2 ** retry;
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const onAbort = (): void => { clearTimeout(t); reject(signal?.reason as Error); };
    const t = setTimeout(() => { signal?.removeEventListener("abort", onAbort); resolve(); }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
