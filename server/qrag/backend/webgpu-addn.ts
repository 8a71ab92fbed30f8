/**
 * tfjs-backend-webgpu 4.22 runs AddN as one shader with a storage buffer per input: with more
 * inputs than `maxStorageBuffersPerShaderStage − 1` (15 on the H100 and on lavapipe) it returns a
 * wrong sum without an error (the 16th and later inputs are dropped). Concat splits its inputs;
 * AddN does not. This re-registers the webgpu AddN kernel to add in groups that fit.
 */
import * as tf from "@tensorflow/tfjs";

interface WebgpuBackendLike {
  device: { limits: Record<string, number> };
  disposeData(id: unknown): boolean;
}

let patched = false;

export function patchWebgpuAddN(): void {
  if (patched) return;
  const orig = tf.getKernel("AddN", "webgpu");
  if (!orig) return;
  const run = orig.kernelFunc;
  tf.unregisterKernel("AddN", "webgpu");
  tf.registerKernel({
    kernelName: "AddN",
    backendName: "webgpu",
    kernelFunc: (args) => {
      const backend = args.backend as unknown as WebgpuBackendLike;
      const max = Math.max(2, (backend.device.limits.maxStorageBuffersPerShaderStage ?? 8) - 1);
      let parts = args.inputs as unknown as tf.TensorInfo[];
      if (parts.length <= max) return run(args);
      const temps: tf.TensorInfo[] = [];
      while (parts.length > max) {
        const next: tf.TensorInfo[] = [];
        for (let i = 0; i < parts.length; i += max) {
          const group = parts.slice(i, i + max);
          if (group.length === 1) next.push(group[0]);
          else {
            const r = run({ ...args, inputs: group as unknown as tf.NamedTensorInfoMap }) as tf.TensorInfo;
            temps.push(r);
            next.push(r);
          }
        }
        parts = next;
      }
      const out = run({ ...args, inputs: parts as unknown as tf.NamedTensorInfoMap });
      for (const t of temps) backend.disposeData(t.dataId);
      return out;
    },
  });
  patched = true;
}
