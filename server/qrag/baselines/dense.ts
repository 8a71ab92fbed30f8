/**
 * Single-step dense baseline: the same trained encoders, but one retrieval step — the question's
 * embedding scores every candidate once (initial positions) and the top-k are taken together.
 * Comparing it with Q-RAG isolates what multi-step retrieval adds.
 */
import { scoreCandidates } from "../model/rotary.ts";
import { embedStatesAsync, type QNetworks } from "../agent/networks.ts";
import { topkIndices } from "../agent/topk.ts";
import { positionsFor, type PositionsMode } from "../env/positions.ts";

export async function denseSingleStep(
  nets: QNetworks,
  question: string,
  candidates: Float32Array,
  n: number,
  k: number,
  opts: { maxInMemory: number; positions: PositionsMode; stepSize: number },
): Promise<number[]> {
  const s = await embedStatesAsync(nets.state, [[question]], opts.maxInMemory, false);
  const pos = opts.positions === "none" ? new Int32Array(n) : positionsFor(opts.positions, n, [], opts.stepSize);
  const q1 = new Float32Array(n);
  const q2 = new Float32Array(n);
  scoreCandidates(s, candidates, pos, q1, q2);
  for (let j = 0; j < n; j++) q1[j] += q2[j];
  return topkIndices(q1, k);
}
