/**
 * tfjs matMul GFLOP/s on the active backend, n×n×n for each size. Each repeat runs enough
 * products (`flopPerRepeat`, ≤ 200) and then waits with `await data()` (webgpu in Node has no
 * synchronous read) on a 1×1 slice of the last one, which waits for the GPU queue without timing
 * the read-back of an n×n result; that read-back is timed once on its own (`readbackSeconds`).
 */
import * as tf from "@tensorflow/tfjs";
import { measure } from "./harness.ts";

export interface MatmulResult {
  shape: string;
  products: number;
  gflops: number;
  seconds: { median: number; min: number; max: number; n: number; attempts: number };
  /** One `await data()` of an n×n float32 product (its computation included). */
  readbackSeconds: number;
}

/** Products per repeat: about `flopPerRepeat` FLOP of n×n×n products, 1 to 200 of them. */
export function productsPerRepeat(n: number, flopPerRepeat: number): number {
  return Math.max(1, Math.min(200, Math.ceil(flopPerRepeat / (2 * n ** 3))));
}

/** `product` defaults to tf.matMul; the webgpu bench also times our tiled programs through it. */
export async function benchMatmul(sizes: number[], flopPerRepeat = 2e9, repeats = 5, product: (a: tf.Tensor, b: tf.Tensor) => tf.Tensor = (a, b) => tf.matMul(a as tf.Tensor2D, b as tf.Tensor2D)): Promise<MatmulResult[]> {
  const out: MatmulResult[] = [];
  for (const n of sizes) {
    const a = tf.randomNormal([n, n]);
    const b = tf.randomNormal([n, n]);
    const products = productsPerRepeat(n, flopPerRepeat);
    const run = async () => {
      let last: tf.Tensor | undefined;
      for (let i = 0; i < products; i++) {
        last?.dispose();
        last = product(a, b);
      }
      const corner = tf.slice(last!, [0, 0], [1, 1]);
      await corner.data();
      tf.dispose([corner, last!]);
    };
    await run(); // warm-up: shader compile, buffer pools
    const m = await measure(run, repeats);
    const t0 = performance.now();
    const c = product(a, b);
    await c.data();
    const readbackSeconds = (performance.now() - t0) / 1000;
    tf.dispose([a, b, c]);
    const flops = 2 * n ** 3 * products;
    out.push({ shape: `${n}x${n}x${n}`, products, gflops: flops / m.stats.median / 1e9, seconds: m.stats, readbackSeconds });
  }
  return out;
}

/**
 * Products the size of a rollout step's (one state's rows by the encoder's width), timed as a
 * forward runs them: each reads the one before (x·W1 [m, n], then ·W2 back to [m, k]), so the GPU
 * cannot overlap them and a product of few workgroups shows what it costs. Cubic sizes hide this:
 * independent products fill the GPU together.
 */
export const CHAIN_SHAPES: readonly (readonly [number, number, number])[] = [
  [128, 768, 3072], // BERT-base fc1 then fc2, a state of 128 tokens
  [128, 768, 768], // BERT-base's attention output, twice
  [256, 768, 3072],
  [256, 128, 512], // the reference workload's fc1 and fc2, 4 states of 64 tokens
];

export interface ChainResult {
  /** m×k×n: A [m, k]·W1 [k, n], then ·W2 [n, k]. */
  shape: string;
  products: number;
  /** Wall time per product (host recording and GPU together) and the GFLOP/s it makes. */
  usPerProduct: number;
  gflops: number;
  /** GPU time per product inside its pass (timestamp queries; null without them). */
  gpuUsPerProduct: number | null;
}

/** Each shape of `shapes` as `pairs` dependent pairs of products, `repeats` times (plus a warm-up and a GPU-timed run). */
export async function benchChains(product: (a: tf.Tensor, b: tf.Tensor) => tf.Tensor, gpuMs: (fn: () => Promise<void>) => Promise<number | null>, shapes = CHAIN_SHAPES, pairs = 16, repeats = 5): Promise<ChainResult[]> {
  const out: ChainResult[] = [];
  for (const [m, k, n] of shapes) {
    const x0 = tf.randomNormal([m, k]), w1 = tf.randomNormal([k, n], 0, 1 / Math.sqrt(k)), w2 = tf.randomNormal([n, k], 0, 1 / Math.sqrt(n));
    const run = async () => {
      let x = x0;
      for (let i = 0; i < pairs; i++) {
        const y = product(x, w1);
        if (x !== x0) x.dispose();
        x = product(y, w2);
        y.dispose();
      }
      const corner = tf.slice(x, [0, 0], [1, 1]);
      await corner.data();
      tf.dispose([corner, x]);
    };
    await run(); // warm-up: shader compile, buffer pools
    const t = await measure(run, repeats);
    const gpu = await gpuMs(run);
    tf.dispose([x0, w1, w2]);
    const products = 2 * pairs;
    const s = t.stats.median;
    out.push({ shape: `${m}x${k}x${n}`, products, usPerProduct: (s / products) * 1e6, gflops: (2 * m * k * n * products) / s / 1e9, gpuUsPerProduct: gpu === null ? null : (gpu / products) * 1000 });
  }
  return out;
}
