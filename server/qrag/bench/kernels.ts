/**
 * `--parts kernels` (webgpu only): the fused row and attention programs (model/webgpu/) timed on
 * the reference workload's shapes (LayerNorm [64·256, 128], attention B 64 T 256 H 4 d_head 32)
 * and BERT-base's (LayerNorm [16·512, 768], attention B 16 T 512 H 12 d_head 64). Per op: the
 * forward alone (one program) and forward + backward (`tf.grads` with a given dy; backward =
 * the difference: LayerNorm's dx and dγ/dβ programs, attention's dQ and dK/dV), median ms per
 * call. A repeat runs `calls` calls and waits for the queue once (a 1×1 slice of the last output),
 * so per-dispatch host overhead is spread, not hidden. Attention is packed (the fused QKV
 * output, as the transformer calls it) and without dropout (its mask program is timed elsewhere).
 */
import * as tf from "@tensorflow/tfjs";
import { measure } from "./harness.ts";
import { layerNormDevice } from "../model/webgpu/gelu-layernorm.ts";
import { residualLayerNormDevice } from "../model/webgpu/residual-layernorm.ts";
import { attentionFusedPacked } from "../model/webgpu/attention.ts";
import { dropoutKeepScale, dropThreshold } from "../util/mask-hash.ts";

export interface KernelTiming {
  op: string;
  shape: string;
  calls: number;
  forwardMs: number;
  forwardBackwardMs: number;
  backwardMs: number;
}

interface Case {
  op: string;
  shape: string;
  /** Inputs (created once), the op on them, and dy for its output. */
  make: () => { inputs: tf.Tensor[]; f: (...xs: tf.Tensor[]) => tf.Tensor; dy: tf.Tensor };
}

function lnCases(rows: number, n: number, label: string): Case[] {
  const shape = `[${label}, ${n}]`;
  const common = () => [tf.randomNormal([rows, n]), tf.randomNormal([n]), tf.randomNormal([n])];
  return [
    { op: "layerNorm", shape, make: () => ({ inputs: common(), f: (x, g, b) => layerNormDevice(x, g as tf.Tensor1D, b as tf.Tensor1D, 1e-12), dy: tf.randomNormal([rows, n]) }) },
    {
      op: "residualLayerNorm (dropout 0.1)",
      shape,
      make: () => {
        const mask = { thr: dropThreshold(0.1), keep: dropoutKeepScale(0.1), k0: 12345, k1: 678 };
        return { inputs: [tf.randomNormal([rows, n]), ...common()], f: (h, x, g, b) => residualLayerNormDevice(x, h, g as tf.Tensor1D, b as tf.Tensor1D, 1e-12, mask), dy: tf.randomNormal([rows, n]) };
      },
    },
  ];
}

function attentionCase(B: number, T: number, H: number, dh: number): Case {
  const d = H * dh;
  const mask = new Float32Array(B * T).fill(1);
  return {
    op: "attention (packed, no dropout)",
    shape: `B ${B} T ${T} H ${H} d_head ${dh}`,
    make: () => ({
      inputs: [tf.randomNormal([B * T, 3 * d])],
      f: (qkv) => attentionFusedPacked(qkv as tf.Tensor2D, { batch: B, len: T, heads: H, mask, dropout: 0, training: false }),
      dy: tf.randomNormal([B * T, d]),
    }),
  };
}

/** Waits for the GPU queue: reads one element of `t`. */
async function settle(t: tf.Tensor): Promise<void> {
  const corner = tf.tidy(() => tf.slice(tf.reshape(t, [-1]), [0], [1]));
  await corner.data();
  corner.dispose();
}

/** Median ms per call of `run` (which returns its outputs, disposed here), `calls` per repeat. */
async function perCall(run: () => tf.Tensor[], calls: number, repeats: number): Promise<number> {
  const once = async () => {
    let outs: tf.Tensor[] = [];
    for (let i = 0; i < calls; i++) {
      tf.dispose(outs);
      outs = run();
    }
    await settle(outs.at(-1)!);
    tf.dispose(outs);
  };
  await once(); // warm-up: pipelines, buffer pools
  const m = await measure(once, repeats);
  return (m.stats.median * 1000) / calls;
}

export async function benchKernels(log: (m: string) => void, opts: { shapes?: "workload" | "all"; repeats?: number } = {}): Promise<KernelTiming[]> {
  if (tf.getBackend() !== "webgpu") throw new Error(`bench part kernels needs the webgpu backend (active: ${tf.getBackend()})`);
  const cases = [...lnCases(64 * 256, 128, "64·256"), attentionCase(64, 256, 4, 32)];
  if (opts.shapes !== "workload") cases.push(...lnCases(16 * 512, 768, "16·512"), attentionCase(16, 512, 12, 64));
  const out: KernelTiming[] = [];
  for (const c of cases) {
    const { inputs, f, dy } = c.make();
    // calls per repeat: about 0.2 s of forwards (1 to 20), from one timed call
    const t0 = performance.now();
    const first = f(...inputs);
    await settle(first);
    first.dispose();
    const calls = Math.max(1, Math.min(20, Math.round(200 / Math.max(1e-3, performance.now() - t0))));
    const forwardMs = await perCall(() => [f(...inputs)], calls, opts.repeats ?? 3);
    const forwardBackwardMs = await perCall(() => tf.grads(f)(inputs, dy), calls, opts.repeats ?? 3);
    tf.dispose([...inputs, dy]);
    const t: KernelTiming = { op: c.op, shape: c.shape, calls, forwardMs, forwardBackwardMs, backwardMs: forwardBackwardMs - forwardMs };
    log(`  kernels ${t.op} ${t.shape}: forward ${forwardMs.toFixed(2)} ms, backward ${t.backwardMs.toFixed(2)} ms`);
    out.push(t);
  }
  return out;
}
