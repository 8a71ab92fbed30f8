/**
 * `--parts dispatch-hf`: dispatches, tfjs kernels, submits and host ms of one hf (BERT) encoder
 * forward without a gradient, the policy's forward of the paper's recipe (batch 64 × 32 tokens;
 * configs/presets/babilong-gpu.yaml: 65 of them per iteration), with the recorded forward
 * (model/webgpu/recorded-bert.ts) off and on, eval and train mode; and one taped forward + backward
 * (the update's encoder: `variableGrads` of the pooled sum, train mode) through bertDense under
 * tfjs autograd and recorded (model/webgpu/recorded-bert-train.ts). Random BERT weights at
 * bert-tiny's sizes and at 12 layers of small width: the counts follow the layers, not the width.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as tf from "@tensorflow/tfjs";
import { countersOn, resetCounters, withPhaseAsync } from "../backend/device.ts";
import { gpuTimingOn, settledCounters } from "../backend/gpu-timing.ts";
import { HfBertEncoder } from "../model/hf/encoder.ts";
import { writeRandomBert, type BertSize } from "../model/hf/random-bert.ts";
import { withRecorder } from "../model/webgpu/recorded-encoder.ts";
import { Rng } from "../util/rng.ts";

const SIZES: (BertSize & { name: string })[] = [
  { name: "bert-tiny sizes (2L, D 32, FFN 64)", hidden: 32, layers: 2, heads: 4, intermediate: 64 },
  { name: "12L, D 64, FFN 256", hidden: 64, layers: 12, heads: 4, intermediate: 256 },
];
const VOCAB = 1000;
const B = 64, T = 32;
/** Forwards counted per mode (each read before the next, as a policy step reads its scores). */
const REPS = 10;
/** Taped forward + backward calls counted per path (each read before the next). */
const UPDATE_REPS = 5;

interface HfCounts {
  dispatches: number;
  tfjsKernels: number;
  submits: number;
  /** Host ms of the call itself (the GPU work runs behind it; the update's: variableGrads, forward and backward), mean over the reps. */
  hostMs: number;
  /** GPU ms inside its compute passes (timestamp queries; null where the adapter has none). */
  gpuMs: number | null;
}

/** `reps` calls of `once` in `phase` (each returns its host ms): counts, host ms and GPU ms per call. */
async function countReps(phase: "encode" | "update", reps: number, once: () => Promise<number>): Promise<HfCounts> {
  const timed = gpuTimingOn();
  resetCounters();
  let ms = 0;
  await withPhaseAsync(phase, async () => {
    for (let i = 0; i < reps; i++) ms += await once();
  });
  const s = await settledCounters(timed);
  const k = s.counts[phase]!;
  const gpuMs = s.timed ? k.gpuMs / reps : null;
  return { dispatches: k.dispatches / reps, tfjsKernels: (k.kernels - k.fused) / reps, submits: k.submits / reps, hostMs: ms / reps, gpuMs };
}

export async function benchHfCounts(log: (m: string) => void): Promise<Record<string, unknown>[]> {
  countersOn();
  const rng = new Rng(5);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-dispatch-hf-"));
  const out: Record<string, unknown>[] = [];
  try {
    for (const s of SIZES) {
      const rel = `bert-${s.hidden}x${s.layers}`;
      const words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ...Array.from({ length: VOCAB - 5 }, (_, i) => `w${i}`)];
      writeRandomBert(path.join(root, rel), s, { words, positions: 64, seed: 9 });
      const enc = HfBertEncoder.load({ type: "hf", path: rel, dim: s.hidden, vocab_size: VOCAB, hidden: s.intermediate, layers: s.layers, heads: s.heads, max_len: 64, dropout: 0.1, init_std: 0.02 }, rng.fork(rel), root);
      const ids = new Int32Array(B * T);
      const mask = new Float32Array(B * T);
      for (let r = 0; r < B; r++) {
        const n = 8 + rng.int(T - 7);
        for (let t = 0; t < n; t++) {
          ids[r * T + t] = 5 + rng.int(VOCAB - 5);
          mask[r * T + t] = 1;
        }
      }
      const batch = { ids, mask, batch: B, len: T };
      const row: Record<string, unknown> = { model: s.name, batch: B, len: T };
      try {
        for (const training of [false, true]) {
          for (const recorded of [false, true]) {
            const once = async (): Promise<number> => {
              const t0 = performance.now();
              const y = tf.tidy(() => enc.forward(batch, training));
              const ms = performance.now() - t0;
              await y.data();
              y.dispose();
              return ms;
            };
            const c = await withRecorder(recorded, async () => {
              await once(); // warm-up: pipelines compiled, plans made
              return countReps("encode", REPS, once);
            });
            const name = `${training ? "train" : "eval"} ${recorded ? "recorded" : "tfjs"}`;
            row[name] = c;
            log(`  dispatch-hf: ${s.name}: ${name}: ${c.dispatches} dispatches, ${c.tfjsKernels} tfjs kernels, ${c.submits} submits, ${c.hostMs.toFixed(2)} host ms, GPU ${c.gpuMs?.toFixed(2) ?? "(untimed)"} ms`);
          }
        }
        // the update's encoder: one taped forward + backward (train mode), the gradients of the
        // pooled sum for every variable, bertDense under tfjs autograd vs recorded-bert-train.ts
        for (const recorded of [false, true]) {
          const once = async (): Promise<number> => {
            const t0 = performance.now();
            const { value, grads } = tf.variableGrads(() => tf.sum(enc.forward(batch, true)) as tf.Scalar, enc.variables);
            const ms = performance.now() - t0;
            await value.data();
            tf.dispose([value, ...Object.values(grads)]);
            return ms;
          };
          const c = await withRecorder(recorded, async () => {
            await once();
            return countReps("update", UPDATE_REPS, once);
          });
          const name = `update ${recorded ? "recorded" : "tfjs"}`;
          row[name] = c;
          log(`  dispatch-hf: ${s.name}: ${name}: ${c.dispatches} dispatches, ${c.tfjsKernels} tfjs kernels, ${c.submits} submits, ${c.hostMs.toFixed(2)} host ms, GPU ${c.gpuMs?.toFixed(2) ?? "(untimed)"} ms`);
        }
      } finally {
        enc.dispose();
      }
      out.push(row);
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
  return out;
}
