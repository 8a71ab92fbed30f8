/**
 * An error's message, clipped to 300 characters: some loaders (tfjs-wasm, native addons) put whole
 * source lines, a minified bundle included, into their errors.
 */
export function errorText(e: unknown): string {
  const s = e instanceof Error ? e.message : String(e);
  return s.length > 300 ? s.slice(0, 300) + "…" : s;
}
