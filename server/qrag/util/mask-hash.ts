/**
 * The counter-based generator behind dropout masks: value j of a mask is a hash of (key, j), so
 * the host (ops.ts `dropoutMask`) and the GPU (model/webgpu/dropout.ts, the same arithmetic in
 * WGSL) draw identical masks, each element on its own. The mixer is lowbias32 (Wellons), a
 * well-tested 32-bit integer hash; two rounds around the counter decorrelate neighbouring j and
 * neighbouring keys.
 */
import type { Rng } from "./rng.ts";

/** A mask's key: two 32-bit words drawn from the engine's Rng (so masks stay seeded and resumable). */
export type MaskKey = readonly [number, number];

export function maskKey(rng: Rng): MaskKey {
  return [rng.nextU32() >>> 0, rng.nextU32() >>> 0];
}

/** lowbias32: x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16 (mod 2^32). */
export function lowbias32(x: number): number {
  x = (x ^ (x >>> 16)) >>> 0;
  x = Math.imul(x, 0x7feb352d) >>> 0;
  x = (x ^ (x >>> 15)) >>> 0;
  x = Math.imul(x, 0x846ca68b) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

/** A value is dropped when its 16 random bits are below this: p rounded to a multiple of 1/65536. */
export function dropThreshold(rate: number): number {
  return Math.round(rate * 65536);
}

/** The value of kept entries: 1/(1 − p) with p rounded as `dropThreshold` rounds it (0 when all drop). */
export function dropoutKeepScale(rate: number): number {
  const thr = dropThreshold(rate);
  return thr >= 65536 ? 0 : 65536 / (65536 - thr);
}

/** 32 random bits for counter j under `key`. */
export function maskBits(key: MaskKey, j: number): number {
  return lowbias32((lowbias32((j ^ key[0]) >>> 0) + key[1]) >>> 0);
}

/** The same two functions in WGSL (u32 arithmetic wraps as Math.imul / >>> 0 do). */
export const MASK_HASH_WGSL = `fn lowbias32(v: u32) -> u32 {
  var x = v;
  x = x ^ (x >> 16u); x = x * 0x7feb352du; x = x ^ (x >> 15u); x = x * 0x846ca68bu;
  return x ^ (x >> 16u);
}
fn maskBits(k0: u32, k1: u32, j: u32) -> u32 { return lowbias32(lowbias32(j ^ k0) + k1); }`;
