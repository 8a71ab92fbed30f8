/**
 * A micro-step's gradients on webgpu packed: variable i's gradient in segment `seg[i]` (a flat
 * float32 tensor) at element offset `offsets[i]`, the variables' order, each at an aligned offset,
 * zeros between (a variable without a gradient holds zeros and is marked absent). A segment
 * holds as many variables as one storage binding may cover (the device's
 * maxStorageBufferBindingSize: 128 MiB on lavapipe, so BERT-base's 440 MB of gradients take four).
 *
 * Why: a storage binding a tensor, 16 a program, made the optimizer's programs take few variables
 * each (AdamW 3 with their Polyak targets, the clipping norm's sums of squares 15): 24 programs an
 * update of the reference workload's 56 variables. Packed, the gradients (and AdamW's moments,
 * agent/adamw.ts) take one binding a segment for all its variables. The recorded backwards copy
 * their gradients straight into a pack (recorded-train.ts backwardInto), a copy a segment, where
 * they copied each into a tensor of its own before.
 */
import * as tf from "@tensorflow/tfjs";
import { joinFlat } from "./join-rows.ts";
import { accumulateFused } from "./accumulate.ts";
import { PART_ALIGN } from "./recorded-encoder.ts";
import { webgpuBackend } from "./raw-program.ts";

/** Floats a variable's place in a pack is aligned to: a backward binds each gradient as a part of one buffer (recorded-encoder.ts PART_ALIGN bytes). */
export const PACK_ALIGN = PART_ALIGN / 4;

/** n floats rounded up to PACK_ALIGN: the room a variable (or a part of a scratch buffer) takes. */
export const alignUp = (n: number): number => Math.ceil(n / PACK_ALIGN) * PACK_ALIGN;

/** Where a pack keeps each variable: its segment and offset there (floats), and each segment's floats (a multiple of PACK_ALIGN). */
export interface PackLayout {
  seg: number[];
  offsets: number[];
  totals: number[];
}

/**
 * Variables of `sizes` laid end to end, each at an offset aligned to PACK_ALIGN (zeros between), a
 * new segment where the next would take one past `maxFloats` (a variable larger than that alone).
 * Unsegmented (the default), the layout of a backward's gradient buffer: a run of variables is
 * contiguous in both, so it goes from one into the other in one copy.
 */
export function packLayout(sizes: readonly number[], maxFloats = Infinity): PackLayout {
  const seg: number[] = [], offsets: number[] = [], totals: number[] = [];
  for (const n of sizes) {
    const room = totals.length > 0 && totals[totals.length - 1] + alignUp(n) <= maxFloats;
    if (!room) totals.push(0);
    seg.push(totals.length - 1);
    offsets.push(totals[totals.length - 1]);
    totals[totals.length - 1] += alignUp(n);
  }
  return { seg, offsets, totals };
}

let segmentOverride: number | null = null;
/** Tests: segments of at most this many floats from now on (null: the device's binding limit). */
export function setPackSegmentFloats(floats: number | null): void {
  segmentOverride = floats;
}

/** The floats one segment may hold: the device's maxStorageBufferBindingSize (WebGPU's default 128 MiB where it says none). */
export function packSegmentFloats(): number {
  if (segmentOverride !== null) return segmentOverride;
  const limits = (webgpuBackend().device as { limits: { maxStorageBufferBindingSize?: number } }).limits;
  return Math.floor((limits.maxStorageBufferBindingSize ?? 2 ** 27) / 4 / PACK_ALIGN) * PACK_ALIGN;
}

export class GradPack {
  readonly layout: PackLayout;

  /** `flats` (a segment each) are owned by the pack; `present[i]`: whether variable i has a gradient (else zeros). */
  constructor(readonly flats: readonly tf.Tensor1D[], readonly sizes: readonly number[], readonly present: readonly boolean[], layout?: PackLayout) {
    this.layout = layout ?? packLayout(sizes, packSegmentFloats());
    const { totals } = this.layout;
    if (flats.length !== totals.length || flats.some((f, s) => f.size !== totals[s] || f.dtype !== "float32") || present.length !== sizes.length) {
      throw new Error(`GradPack: segments of ${flats.map((f) => f.size).join(", ")} floats for ${sizes.length} variables laid out in ${totals.join(", ")}`);
    }
  }

  /** A pack for variables of `sizes` whose segments the caller fills (every variable: present). */
  static empty(sizes: readonly number[]): GradPack {
    const layout = packLayout(sizes, packSegmentFloats());
    const be = webgpuBackend();
    const flats = layout.totals.map((n) => tf.engine().makeTensorFromTensorInfo(be.makeTensorInfo([n], "float32")) as tf.Tensor1D);
    return new GradPack(flats, sizes, sizes.map(() => true), layout);
  }

  /**
   * A pack of a gradient list aligned with variables of `sizes` (the tape's on the device path):
   * the gradients copied end to end in tfjs's command encoder (float32; zeros where absent).
   */
  static fromList(list: readonly (tf.Tensor | null | undefined)[], sizes: readonly number[]): GradPack {
    if (list.length !== sizes.length) throw new Error(`GradPack: ${list.length} gradients for ${sizes.length} variables`);
    const layout = packLayout(sizes, packSegmentFloats());
    const flats = layout.totals.map((_, s) => tf.tidy(() => joinFlat(list.flatMap((g, i) => {
      if (layout.seg[i] !== s) return [];
      if (g && g.size !== sizes[i]) throw new Error(`GradPack: gradient ${i} has ${g.size} values, its variable ${sizes[i]}`);
      const pad = alignUp(sizes[i]) - sizes[i];
      return [!g ? tf.zeros([sizes[i]]) : g.dtype === "float32" ? g : tf.cast(g, "float32"), ...(pad > 0 ? [tf.zeros([pad])] : [])];
    }))));
    return new GradPack(flats, sizes, list.map((g) => Boolean(g)), layout);
  }

  dispose(): void {
    tf.dispose([...this.flats]);
  }
}

/**
 * a + b, consuming both, and with `values` (the passes' losses) their sum too: in place into a's
 * buffers (accumulate.ts: one program for a pack of a segment or few). The sum has a gradient
 * where either had one.
 */
export function addPacks(a: GradPack, b: GradPack, values?: [tf.Scalar, tf.Scalar]): { pack: GradPack; value?: tf.Scalar } {
  if (a.sizes.length !== b.sizes.length || a.sizes.some((n, i) => n !== b.sizes[i]) || a.flats.length !== b.flats.length) throw new Error("addPacks: packs of different variables");
  const sum = accumulateFused([...a.flats, ...(values ? [values[0]] : [])], [...b.flats, ...(values ? [values[1]] : [])]);
  const flats = sum.slice(0, a.flats.length) as tf.Tensor1D[];
  return { pack: new GradPack(flats, a.sizes, a.present.map((p, i) => p || b.present[i]), a.layout), value: values ? (sum[a.flats.length] as tf.Scalar) : undefined };
}
