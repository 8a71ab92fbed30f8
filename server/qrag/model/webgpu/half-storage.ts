/**
 * f16 storage of the recorded encoders' activations (run config `gpu_storage: f16`): the no-grad
 * forwards' and those a taped forward keeps for its backward. Each program reads and writes half
 * the bytes and converts every value to f32 where it reads it, so the arithmetic (sums, softmax,
 * LayerNorm statistics, every gradient) stays f32, as do the weights, the optimizer's state, row
 * statistics and the pooled output. Only where the device has `shader-f16` (webgpu.ts requests it
 * when the adapter offers it); elsewhere everything stays f32.
 *
 * Why: on a GPU the encoder's small programs are bound by memory traffic, not arithmetic, and the
 * update's kept activations bound its pass size (BERT-base at 512 tokens: 24 rows per 8 GiB in
 * f32, 45 in f16).
 */
import * as tf from "@tensorflow/tfjs";
import { webgpuBackend } from "./raw-program.ts";

/** The element type of an activation buffer. */
export type Storage = "f32" | "f16";

/** What the run asks for; whether the device can is asked per plan (halfActive). */
let wanted: Storage = "f32";

/** Sets what later plans store their activations as (plans of the other kind stay cached under their own keys). */
export function setGpuStorage(s: Storage): void {
  wanted = s;
}

/** `fn`'s result with storage `s` asked for (a synchronous call: plans are chosen when a forward is recorded), then the setting before. */
export function withGpuStorage<T>(s: Storage, fn: () => T): T {
  const before = wanted;
  wanted = s;
  try {
    return fn();
  } finally {
    wanted = before;
  }
}

/** Whether a plan made now on `device` stores f16: asked for, and the device has shader-f16. */
export function halfActive(device: { features?: { has(f: string): boolean } }): boolean {
  return wanted === "f16" && halfCapable(device);
}

/** Whether `device` was made with shader-f16 (webgpu.ts asks for it where the adapter offers it). */
export function halfCapable(device: { features?: { has(f: string): boolean } }): boolean {
  return Boolean(device.features?.has("shader-f16"));
}

/** The WGSL a program with f16 storage starts with (`enable` must precede every declaration). */
export const enableHalf = (half: boolean): string => (half ? "enable f16;\n" : "");
/** WGSL element type of an activation array (`vec`: its vec4). */
export const actType = (half: boolean, vec = false): string => (vec ? `vec4<${half ? "f16" : "f32"}>` : half ? "f16" : "f32");
/** WGSL: an activation element read as f32. */
export const readAct = (half: boolean, e: string, vec = false): string => (!half ? e : vec ? `vec4<f32>(${e})` : `f32(${e})`);
/** WGSL: an f32 value converted for an activation array. */
export const writeAct = (half: boolean, e: string, vec = false): string => (!half ? e : vec ? `vec4<f16>(${e})` : `f16(${e})`);
/** Program key suffix: the f16 program is another pipeline. */
export const halfKey = (half: boolean): string => (half ? "-h16" : "");
/** Bytes of `n` activation elements. */
export const actBytes = (half: boolean, n: number): number => n * (half ? 2 : 4);

/**
 * Sets what the run asks for (setGpuStorage) and says what its recorded forwards will store on the
 * current tfjs backend: f16 only on webgpu with shader-f16.
 */
export function useGpuStorage(s: Storage): Storage {
  setGpuStorage(s);
  if (s === "f32" || tf.getBackend() !== "webgpu") return "f32";
  return halfActive(webgpuBackend().device) ? "f16" : "f32";
}

/**
 * A run's gpu_storage applied (training, and a checkpoint loaded for evaluation): the device label
 * it runs under ("…, f16 activations" when on) and, where it asked for f16 and stays f32, why.
 * The bag-of-words encoder has no recorded forward: nothing of it is stored as f16.
 */
export function applyRunStorage(want: Storage, encoder: string, at: { backend: string; device: string }): { device: string; why: string | null } {
  const bow = encoder === "bow";
  const got = useGpuStorage(bow ? "f32" : want);
  const why = want === "f16" && got !== "f16"
    ? bow ? "the bow encoder keeps no activations" : at.backend === "webgpu" ? "the GPU has no shader-f16" : `the ${at.backend} backend has no f16 storage`
    : null;
  return { device: got === "f16" ? `${at.device}, f16 activations` : at.device, why };
}
