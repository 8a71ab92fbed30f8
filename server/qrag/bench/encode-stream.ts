/**
 * `--parts encode-stream [--lengths N]`: the reference workload's eval encode of 40,000 chunks (the workload
 * part's encode figure) two ways on the active backend: packed first, every text tokenized before
 * the first program (embedDevice(packActions(texts)), the path before 2026-11-27), and streamed
 * (embedTextsDevice: a slice packed while the GPU runs the one before); the host's packing alone
 * beside them; and streamed with f16 activations (gpu_storage f16) where the GPU has shader-f16.
 * On a GPU the streamed encode hides the packing behind the GPU's work; on lavapipe the "GPU" is
 * these same 2 cores, so expect little there.
 */
import * as tf from "@tensorflow/tfjs";
import { QNetworks } from "../agent/networks.ts";
import { onDevice } from "../backend/device.ts";
import { chunkAt } from "../types.ts";
import { Rng } from "../util/rng.ts";
import { measure, stats, timeRepeat } from "./harness.ts";
import { materialized, workloadSource } from "./workload.ts";
import { settled, workloadConfig } from "./workload-bench.ts";
import { programTimes, topPrograms } from "./program-times.ts";
import { halfCapable, withGpuStorage } from "../model/webgpu/half-storage.ts";
import { webgpuBackend } from "../model/webgpu/raw-program.ts";

async function read(y: tf.Tensor): Promise<Float32Array> {
  const v = (await y.data()) as Float32Array;
  y.dispose();
  return v;
}

/** max |a − b| over the largest |b|. */
function relDiff(a: Float32Array, b: Float32Array): number {
  let scale = 1e-12, m = 0;
  for (let i = 0; i < b.length; i++) {
    scale = Math.max(scale, Math.abs(b[i]));
    m = Math.max(m, Math.abs(a[i] - b[i]));
  }
  return m / scale;
}

/** `chunks`: 40,000 as the workload part (`--lengths N` sets it: lavapipe takes minutes per 40,000). */
export async function benchEncodeStream(log: (m: string) => void, chunks = 40_000, rounds = 3): Promise<Record<string, unknown>> {
  if (!onDevice()) throw new Error(`bench part encode-stream needs the webgpu backend (active: ${tf.getBackend()})`);
  const config = workloadConfig("transformer");
  const enc = new QNetworks(config.algo.encoder, new Rng(1)).action;
  const sample = materialized(workloadSource(chunks, 3).sample(0));
  const texts = Array.from({ length: sample.chunks.length }, (_, i) => chunkAt(sample.chunks, i));
  const maxTokens = config.max_action_length;
  // gpu_storage f16 (half-storage.ts): the streamed encode with f16 activations, where the GPU has shader-f16
  const half = halfCapable(webgpuBackend().device);
  const f32 = <T>(fn: () => T): (() => T) => () => withGpuStorage("f32", fn);
  const streamedF16 = (): tf.Tensor2D => withGpuStorage("f16", () => enc.embedTextsDevice(texts, maxTokens));
  const ways: Record<string, () => tf.Tensor2D> = {
    packedFirst: f32(() => enc.embedDevice(enc.packActions(texts, maxTokens), false)),
    streamed: f32(() => enc.embedTextsDevice(texts, maxTokens)),
    ...(half ? { streamedF16 } : {}),
  };
  // warm-up (pipelines and plans made); its streamed outputs say how far f16 storage moves the
  // embeddings (relative to the largest |value|)
  const warm: Record<string, Float32Array> = {};
  for (const [name, run] of Object.entries(ways)) warm[name] = await read(run());
  const f16Diff = half ? relDiff(warm.streamedF16, warm.streamed) : null;
  const pack = await measure(() => void enc.packActions(texts, maxTokens), 5);
  // alternated, so all see the same machine
  const seconds: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
  const busy: Record<string, number> = Object.fromEntries(Object.keys(ways).map((k) => [k, 0]));
  for (let r = 0; r < rounds; r++) {
    for (const [name, run] of Object.entries(ways)) {
      const rep = await timeRepeat(async () => settled(run()));
      seconds[name].push(rep.wall);
      if (!rep.clean) busy[name]++;
    }
  }
  // which programs the streamed encode's GPU time goes to (one more run, each program timed apart)
  const gpuByProgram = await programTimes(async () => settled(ways.streamed()));
  const out = Object.fromEntries(Object.entries(seconds).map(([k, v]) => [k, { seconds: v, chunksPerSecond: Math.round(texts.length / stats(v).median), busyRepeats: busy[k] }]));
  const f16Line = half ? `, streamed with f16 activations ${out.streamedF16.chunksPerSecond} (max |Δ| ${f16Diff!.toExponential(1)} of the largest value)` : "; no shader-f16: f16 storage not timed";
  log(`  encode-stream: pack ${(pack.stats.median * 1000).toFixed(1)} ms; packed first ${out.packedFirst.chunksPerSecond} chunks/s, streamed ${out.streamed.chunksPerSecond}${f16Line}; GPU per program ${topPrograms(gpuByProgram)}`);
  return { chunks: texts.length, packMs: Math.round(pack.stats.median * 10000) / 10, ...out, f16RelDiff: f16Diff, gpuByProgram };
}
