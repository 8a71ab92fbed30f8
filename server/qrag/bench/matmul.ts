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
