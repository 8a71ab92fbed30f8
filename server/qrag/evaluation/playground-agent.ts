/**
 * A checkpoint kept loaded for the playground: greedy episodes over a pasted document, as the
 * evaluation runs them (greedy.ts with the run's evaluation options), to max_steps (no oracle
 * stop: a pasted document has no ground truth to stop at) and with leave-one-out Q, so the
 * replay's prune toggle works. The record carries every chunk's text (nothing regenerates it).
 */
import type { EpisodeRecord } from "../events.ts";
import type { Sample } from "../types.ts";
import { greedyEpisode } from "../agent/greedy.ts";
import { evalOptions } from "../training/eval.ts";
import { loadAgent } from "./evaluate.ts";
import type { PlaygroundInput } from "../../../lib/contracts/playground.ts";

export interface PlaygroundAgent {
  backend: string;
  /** The checkpoint's run config's task label, for the page. */
  run(input: PlaygroundInput): Promise<{ record: EpisodeRecord; ms: number }>;
  dispose(): void;
}

export function playgroundEpisodeSample(input: PlaygroundInput): Sample {
  return { id: input.id, question: input.question, answer: input.answer, chunks: input.chunks, supportIdx: input.supportIdx };
}

export async function openPlaygroundAgent(checkpoint: string, dataRoot?: string): Promise<PlaygroundAgent> {
  const { nets, config, alpha, backend } = await loadAgent(checkpoint, undefined, dataRoot);
  return {
    backend,
    async run(input) {
      const t0 = performance.now();
      const opts = evalOptions(config, { neverTerminate: true, threshold: input.threshold, alpha, leaveOneOut: true });
      const rec = await greedyEpisode(nets, playgroundEpisodeSample(input), opts);
      return { record: { ...rec, text_len: input.tokens, chunks: input.chunks }, ms: performance.now() - t0 };
    },
    dispose: () => nets.dispose(),
  };
}
