/**
 * The agent's search tool from a trained checkpoint's encoders (tfjs; imported lazily by ./run.ts):
 * - `dense`: single step, as ../baselines/dense.ts scores: the query alone embedded by E_s,
 *   candidates at their initial positions, the top k together;
 * - `qrag`: the checkpoint as Q-RAG runs it: the state is the query with every chunk retrieved so
 *   far (document order when the run sorts by index), candidates rotated to their positions
 *   relative to those chunks, and the k picks made one at a time, each joining the state.
 */
import { embedSampleChunks, disposeCandidates } from "../agent/greedy.ts";
import { embedStatesAsync, type QNetworks } from "../agent/networks.ts";
import { scoreCandidates } from "../model/rotary.ts";
import { positionsFor } from "../env/positions.ts";
import { topkIndices } from "../agent/topk.ts";
import { chunkAt } from "../types.ts";
import type { RunConfig } from "../config/config.ts";
import type { AgentRetriever } from "./search.ts";

/** `dense` or `qrag` over a loaded checkpoint's networks (`nets`, `config`: ../evaluation/evaluate.ts `loadAgent`). */
export function encoderRetriever(kind: "dense" | "qrag", checkpoint: string, nets: QNetworks, config: RunConfig): AgentRetriever {
  const env = config.envs;
  const sortByIndex = "sort_by_index" in env ? Boolean(env.sort_by_index) : false;
  return {
    name: `${kind}:${checkpoint}`,
    async forSample(sample) {
      const n = sample.chunks.length;
      const emb = await embedSampleChunks(nets, sample, config.max_action_length);
      const host = emb instanceof Float32Array ? emb : ((await emb.data()) as Float32Array);
      disposeCandidates(emb);
      const q1 = new Float32Array(n), q2 = new Float32Array(n);
      const best = (avail: Uint8Array): number => {
        let b = -1;
        for (let j = 0; j < n; j++) if (avail[j] && (b < 0 || q1[j] + q2[j] > q1[b] + q2[b])) b = j;
        return b;
      };
      return {
        async search(query, retrieved, k) {
          const avail = new Uint8Array(n).fill(1);
          for (const i of retrieved) avail[i] = 0;
          const order = [...retrieved], picks: number[] = [];
          while (picks.length < k) {
            const idx = kind === "qrag" ? (sortByIndex ? [...order].sort((a, b) => a - b) : order) : [];
            const state = [query, ...idx.map((i) => chunkAt(sample.chunks, i))];
            const s = await embedStatesAsync(nets.state, [state], config.max_action_length_in_memory, false);
            const pos = env.positions_processor === "none" ? new Int32Array(n) : positionsFor(env.positions_processor, n, kind === "qrag" ? order : [], env.step_size);
            scoreCandidates(s.subarray(0, nets.dim), host, pos, q1, q2);
            if (kind === "dense") {
              // one scoring, the top k together (the single-step baseline)
              for (let j = 0; j < n; j++) q1[j] = avail[j] ? q1[j] + q2[j] : -Infinity;
              return topkIndices(q1, k).filter((j) => avail[j]);
            }
            const b = best(avail);
            if (b < 0) break;
            avail[b] = 0;
            order.push(b);
            picks.push(b);
          }
          return picks;
        },
        dispose() {},
      };
    },
    close() { nets.dispose(); },
  };
}
