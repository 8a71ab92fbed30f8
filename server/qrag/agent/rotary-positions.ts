/**
 * Positions as the rotary embedding sees them. With positions_processor "none" the reference's
 * action embedder ignores positions (EmbedderNone); rotating by position 0 is the identity, so
 * zeros give exactly that without a separate code path.
 */
import type { RetrievalEpisode } from "../env/episode.ts";

const zeros = new Map<number, Int32Array>();

export function rotaryPositions(ep: RetrievalEpisode): Int32Array {
  if (ep.mode !== "none") return ep.positions;
  let z = zeros.get(ep.numChunks);
  if (!z) {
    z = new Int32Array(ep.numChunks);
    if (ep.numChunks <= 100_000) zeros.set(ep.numChunks, z);
  }
  return z;
}
