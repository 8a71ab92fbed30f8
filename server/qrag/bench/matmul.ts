/**
 * tfjs matMul GFLOP/s on the active backend, n×n×n for each size. Results are read back with
 * `await data()` (webgpu in Node has no synchronous read), so each repeat includes one read of the
 * last product; a repeat runs enough products (`flopPerRepeat`, ≤ 200 products) to keep that small.
 */
import * as tf from "@tensorflow/tfjs";
import { measure } from "./harness.ts";

export interface MatmulResult {
  shape: string;
  products: number;
  gflops: number;
  seconds: { median: number; min: number; max: number; n: number; attempts: number };
}

export async function benchMatmul(sizes: number[], flopPerRepeat = 2e9, repeats = 5): Promise<MatmulResult[]> {
  const out: MatmulResult[] = [];
  for (const n of sizes) {
    const a = tf.randomNormal([n, n]);
    const b = tf.randomNormal([n, n]);
    const products = Math.max(1, Math.min(200, Math.ceil(flopPerRepeat / (2 * n ** 3))));
    const run = async () => {
      let last: tf.Tensor | undefined;
      for (let i = 0; i < products; i++) {
        last?.dispose();
        last = tf.matMul(a, b);
      }
      await last!.data();
      last!.dispose();
    };
    await run(); // warm-up: shader compile, buffer pools
    const m = await measure(run, repeats);
    tf.dispose([a, b]);
    const flops = 2 * n ** 3 * products;
    out.push({ shape: `${n}x${n}x${n}`, products, gflops: flops / m.stats.median / 1e9, seconds: m.stats });
  }
  return out;
}

/** GPU memory the backend holds (webgpu: tf.memory()'s numBytesInGPU / numBytesAllocatedInGPU), in MiB. */
export function gpuMemoryMiB(): { usedMiB: number; allocatedMiB: number } | undefined {
  const m = tf.memory() as tf.MemoryInfo & { numBytesInGPU?: number; numBytesAllocatedInGPU?: number };
  if (m.numBytesInGPU === undefined) return undefined;
  const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;
  return { usedMiB: mib(m.numBytesInGPU), allocatedMiB: mib(m.numBytesAllocatedInGPU ?? m.numBytesInGPU) };
}
