/**
 * Row gathers and segment means on the device (plain tfjs ops, tfjs autograd): the two device ops
 * that both the host-path ops (ops.ts `embedScatter`, `embedBag`, `segmentMean` on the device) and
 * the device path's attention/transformer blocks (device-ops.ts) use. Kept apart so ops.ts and
 * device-ops.ts need not import each other.
 *
 * - `gatherRows`: tf.gather (its gradient is UnsortedSegmentSum, on the device).
 * - `segmentMeanDevice`: means of row groups by UnsortedSegmentSum (gradient: a gather).
 */
import * as tf from "@tensorflow/tfjs";

/** Rows `table[ids[i]]` → [n, D]. */
export function gatherRows(table: tf.Tensor2D, ids: Int32Array): tf.Tensor2D {
  return tf.gather(table, tf.tensor1d(ids, "int32")) as tf.Tensor2D;
}

/**
 * out[g] = Σ_{i: seg[i] = g} x[i] · scale[g] → [groups, D]. `seg` may be unsorted and groups may be
 * empty (scale 0 gives 0 rows).
 */
export function segmentMeanDevice(x: tf.Tensor2D, seg: Int32Array, scale: Float32Array): tf.Tensor2D {
  const G = scale.length;
  const segT = tf.tensor1d(seg, "int32");
  const w = tf.tensor2d(scale, [G, 1]);
  // Own gradient (a gather of dy·scale): tfjs's UnsortedSegmentSum gradient masks negative ids
  // with extra kernels, one of which aborts the process on lavapipe; our ids are never negative.
  const f = tf.customGrad(((xi: tf.Tensor, save: tf.GradSaveFunc) => {
    save([segT, w]);
    return {
      value: tf.mul(tf.unsortedSegmentSum(xi, segT, G), w),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.gather(tf.mul(dy, saved[1]), saved[0]),
    };
  }) as Parameters<typeof tf.customGrad>[0]);
  return f(x) as tf.Tensor2D;
}
