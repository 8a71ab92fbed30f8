/**
 * A micro-step's gradients on webgpu as ONE flat float32 tensor: variable i's gradient at element
 * offset `offsets[i]`, the variables' order, each its size at an aligned offset, zeros between (a
 * variable without a gradient holds zeros there and is marked absent).
 *
 * Why: a storage binding a tensor, 16 a program, made the optimizer's programs take few variables
 * each (AdamW 3 with their Polyak targets, the clipping norm's sums of squares 15): 24 programs an
 * update of the reference workload's 56 variables. Packed, the gradients (and AdamW's moments,
 * agent/adamw.ts) take one binding each for all variables. The recorded backwards copy their
 * gradients straight into a pack (recorded-train.ts backwardInto), where they copied each into a
 * tensor of its own anyway.
 */
import * as tf from "@tensorflow/tfjs";
import { joinFlat } from "./join-rows.ts";
import { accumulateFused } from "./accumulate.ts";
import { PART_ALIGN } from "./recorded-encoder.ts";

/** Floats a variable's place in a pack is aligned to: a backward binds each gradient as a part of one buffer (recorded-encoder.ts PART_ALIGN bytes). */
export const PACK_ALIGN = PART_ALIGN / 4;

/**
 * Element offsets of sizes laid end to end, each aligned to PACK_ALIGN (zeros between), and the
 * total (a multiple of it, so packs of two variable lists laid end to end keep their layouts).
 */
export function packLayout(sizes: readonly number[]): { offsets: number[]; total: number } {
  const offsets: number[] = [];
  let total = 0;
  for (const n of sizes) {
    offsets.push(total);
    total += Math.ceil(n / PACK_ALIGN) * PACK_ALIGN;
  }
  return { offsets, total };
}

export class GradPack {
  readonly offsets: readonly number[];

  /** `flat` is owned by the pack; `present[i]`: whether variable i has a gradient (else zeros). */
  constructor(readonly flat: tf.Tensor1D, readonly sizes: readonly number[], readonly present: readonly boolean[]) {
    const { offsets, total } = packLayout(sizes);
    if (flat.size !== total || flat.dtype !== "float32" || present.length !== sizes.length) throw new Error(`GradPack: ${flat.size} ${flat.dtype} values for ${sizes.length} variables of ${total}`);
    this.offsets = offsets;
  }

  /**
   * A pack of a gradient list aligned with variables of `sizes` (the tape's on the device path):
   * the gradients copied end to end in tfjs's command encoder (float32; zeros where absent).
   */
  static fromList(list: readonly (tf.Tensor | null | undefined)[], sizes: readonly number[]): GradPack {
    if (list.length !== sizes.length) throw new Error(`GradPack: ${list.length} gradients for ${sizes.length} variables`);
    const { offsets, total } = packLayout(sizes);
    const flat = tf.tidy(() => joinFlat(list.flatMap((g, i) => {
      if (g && g.size !== sizes[i]) throw new Error(`GradPack: gradient ${i} has ${g.size} values, its variable ${sizes[i]}`);
      const pad = (i + 1 < sizes.length ? offsets[i + 1] : total) - offsets[i] - sizes[i];
      return [!g ? tf.zeros([sizes[i]]) : g.dtype === "float32" ? g : tf.cast(g, "float32"), ...(pad > 0 ? [tf.zeros([pad])] : [])];
    })));
    return new GradPack(flat, sizes, list.map((g) => Boolean(g)));
  }

  dispose(): void {
    this.flat.dispose();
  }
}

/**
 * a + b, consuming both, and with `values` (the passes' losses) their sum too: one program in place
 * into a's buffers (accumulate.ts). The sum has a gradient where either had one.
 */
export function addPacks(a: GradPack, b: GradPack, values?: [tf.Scalar, tf.Scalar]): { pack: GradPack; value?: tf.Scalar } {
  if (a.sizes.length !== b.sizes.length || a.sizes.some((n, i) => n !== b.sizes[i])) throw new Error("addPacks: packs of different variables");
  const [flat, value] = accumulateFused([a.flat, ...(values ? [values[0]] : [])], [b.flat, ...(values ? [values[1]] : [])]);
  return { pack: new GradPack(flat as tf.Tensor1D, a.sizes, a.present.map((p, i) => p || b.present[i])), value: value as tf.Scalar | undefined };
}
