/**
 * A lengths field's text ("50, 160 1200") as chunk counts, or the message for a text that is not
 * (the sweep and agent forms; the server checks the bounds).
 */
export function parseChunkLengths(text: string): { list: number[]; error?: string } {
  const list = text.split(/[\s,]+/).filter(Boolean).map(Number);
  return !list.length || list.some((n) => !Number.isInteger(n)) ? { list, error: "whole numbers of chunks, separated by commas" } : { list };
}
