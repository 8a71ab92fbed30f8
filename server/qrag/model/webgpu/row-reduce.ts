/**
 * Row programs with a group of threads per row (LayerNorm and its gradient): the row's columns
 * spread over `lanes` threads, its sums reduced in workgroup memory, instead of one thread per row
 * looping over all n columns (768 in BERT-base) while the other threads of the GPU idle.
 *
 * Layout: `@workgroup_size(lanes, 64 / lanes)`, one row per y slot; lanes grow with n (8 … 64)
 * so short rows do not leave most of a workgroup idle. Rows past the last are carried through
 * every barrier with no columns (`cols` = 0), as barriers need the whole workgroup.
 */
import { MAX_GROUPS, WG } from "./raw-program.ts";

/** Threads per row for rows of n columns: about 4 columns each, 8 to WG. */
export function rowLanes(n: number): number {
  let lanes = 8;
  while (lanes < WG && lanes * 4 < n) lanes *= 2;
  return lanes;
}

/** The workgroups covering `rows` rows of n columns (folded into y past 65535). */
export function rowWorkgroups(rows: number, n: number): [number, number, number] {
  const groups = Math.max(1, Math.ceil(rows / (WG / rowLanes(n))));
  const gx = Math.min(groups, MAX_GROUPS);
  return [gx, Math.ceil(groups / gx), 1];
}

/**
 * WGSL for a row program of `lanes` threads per row: the workgroup-memory reduction
 * `rowSum(v)` (the row's sum of v over its lanes, every lane gets it; call it in uniform control
 * flow) and the entry point's head, which defines `r` (row), `lane`, `o` (row offset) and
 * `cols` (u.n, or 0 past the last row). Needs uniforms `rows` and `n`.
 */
export function rowProgramHead(lanes: number): string {
  const perGroup = WG / lanes;
  return `const LANES: u32 = ${lanes}u;
var<workgroup> red: array<vec2<f32>, ${WG}>;
var<private> lane: u32;
var<private> slot: u32;
fn rowSum(v: vec2<f32>) -> vec2<f32> {
  red[slot + lane] = v;
  workgroupBarrier();
  for (var w = ${lanes / 2}u; w > 0u; w = w / 2u) {
    if (lane < w) { red[slot + lane] += red[slot + lane + w]; }
    workgroupBarrier();
  }
  let s = red[slot];
  workgroupBarrier();
  return s;
}
@compute @workgroup_size(${lanes}, ${perGroup})
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  lane = lid.x;
  slot = lid.y * ${lanes}u;
  let r = (wid.y * nwg.x + wid.x) * ${perGroup}u + lid.y;
  let cols = select(0u, u.n, r < u.rows);
  let o = r * u.n;
  let nf = f32(u.n);`;
}

/** Loop header over this lane's columns k of the row (inside `rowProgramHead`'s main). */
export const EACH_COL = "for (var k = lane; k < cols; k += LANES)";
