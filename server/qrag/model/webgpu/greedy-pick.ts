/**
 * A greedy step's pick as two fused programs over rows of candidates (any length; one row per
 * episode, batched evaluation's several): per row the top-K of q1 + q2 over available candidates
 * with their q1 and q2, and the soft value V(s), written as the row the step reads,
 * [index(K), q(K), q1(K), q2(K), V].
 *
 * Why: agent/greedy.ts built it from ~17 tfjs ops a step (masking, tfjs's topk, gathers, the soft
 * value's per-head top-k past twin-q.ts's one-thread-per-row bound, the casts and concat of the
 * joined read), several dispatches each for top-k over 40,000+ candidates.
 *
 * Top-k in two stages: every thread of the first program keeps its own top lists over a strided
 * share of its row (workgroups along y: the rows); the second program (one workgroup per row) merges them, its threads first a share of
 * the lists each, then thread 0 all of theirs. Order: value descending, ties to the lower index
 * (tfjs's topk), so the result does not depend on how the row was split.
 */
import * as tf from "@tensorflow/tfjs";
import { runRawProgram, storageDecls, uniformStruct, webgpuBackend, WG } from "./raw-program.ts";

/** The largest K and soft-value k the programs keep in registers; larger ones take the tfjs path. */
const PICK_MAX_K = 32;
/** Threads of the first program at most (each then scans ⌈n / this⌉ candidates). */
const PART_THREADS = 64 * 256;

export interface PickSpec {
  /** Candidates logged (the top-K of q1 + q2 over available ones). */
  K: number;
  /** The soft value's top-k and temperature, and how it combines the heads; null: no V (0). */
  value: { k: number; alpha: number; heads: "per_head" | "joint" } | null;
}

/** Whether the fused programs take `spec` (K and the soft value's k within 1..PICK_MAX_K). */
export function pickFits(spec: PickSpec): boolean {
  const within = (k: number) => k >= 1 && k <= PICK_MAX_K;
  return within(spec.K) && (!spec.value || within(spec.value.k));
}

/** WGSL: insert (x, j) into the descending list `v`/`ix` (`n` entries, capacity `cap`); ties to the lower index. */
const INSERT_FN = (name: string, cap: string) => `fn ${name}(v: ptr<function, array<f32, ${cap}>>, ix: ptr<function, array<u32, ${cap}>>, n: ptr<function, u32>, x: f32, j: u32) {
  let c = ${cap};
  if (*n == c && !((x > (*v)[c - 1u]) || (x == (*v)[c - 1u] && j < (*ix)[c - 1u]))) { return; }
  var p = min(*n, c - 1u);
  while (p > 0u && ((*v)[p - 1u] < x || ((*v)[p - 1u] == x && (*ix)[p - 1u] > j))) { (*v)[p] = (*v)[p - 1u]; (*ix)[p] = (*ix)[p - 1u]; p--; }
  (*v)[p] = x;
  (*ix)[p] = j;
  *n = min(*n + 1u, c);
}`;

/** Per thread: lists A (K), B and C (kV each); stored as (value, bitcast index) pairs, −∞ past each list's count. */
function layout(spec: PickSpec): { kv: number; lists: number; width: number } {
  const kv = spec.value ? spec.value.k : 0;
  const lists = spec.value ? (spec.value.heads === "joint" ? 1 : 2) : 0;
  return { kv, lists, width: 2 * (spec.K + lists * kv) };
}

function commonCode(spec: PickSpec): string {
  const { kv } = layout(spec);
  return `const K: u32 = ${spec.K}u;
const KV: u32 = ${Math.max(1, kv)}u;
${INSERT_FN("insK", "K")}
${INSERT_FN("insV", "KV")}`;
}

/** WGSL statements: write list `v`/`ix` (`n` entries, capacity `cap`) at `o` of `dst` as pairs. */
function storeList(dst: string, o: string, v: string, ix: string, n: string, cap: string): string {
  return `for (var i = 0u; i < ${cap}; i++) {
    ${dst}[${o} + 2u * i] = select(u.negInf, ${v}[i], i < ${n});
    ${dst}[${o} + 2u * i + 1u] = bitcast<f32>(select(0u, ${ix}[i], i < ${n}));
  }`;
}

function partCode(spec: PickSpec): string {
  const { lists, width } = layout(spec);
  const joint = spec.value?.heads === "joint";
  const scanB = lists > 0 ? `let xb = ${joint ? "s" : "a"}; if (bitcast<u32>(xb) != 0xff800000u) { insV(&bv, &bi, &bn, xb, j); }` : "";
  const scanC = lists > 1 ? `if (bitcast<u32>(b) != 0xff800000u) { insV(&cv, &ci, &cn, b, j); }` : "";
  return `${uniformStruct(["n: u32", "threads: u32", "negInf: f32"])}
${storageDecls(["q1", "q2", "avail"], ["part"])}
${commonCode(spec)}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let t = gid.x;
  let row = gid.y;
  if (t >= u.threads) { return; }
  let base = row * u.n;
  var av: array<f32, K>; var ai: array<u32, K>; var an = 0u;
  var bv: array<f32, KV>; var bi: array<u32, KV>; var bn = 0u;
  var cv: array<f32, KV>; var ci: array<u32, KV>; var cn = 0u;
  for (var j = t; j < u.n; j += u.threads) {
    let a = q1[base + j];
    let b = q2[base + j];
    let s = a + b;
    if (avail[base + j] > 0.0) { insK(&av, &ai, &an, s, j); }
    ${scanB}
    ${scanC}
  }
  let o = (row * u.threads + t) * ${width}u;
  ${storeList("part", "o", "av", "ai", "an", "K")}
  ${lists > 0 ? storeList("part", `o + ${2 * spec.K}u`, "bv", "bi", "bn", "KV") : ""}
  ${lists > 1 ? storeList("part", `o + ${2 * (spec.K + (spec.value?.k ?? 0))}u`, "cv", "ci", "cn", "KV") : ""}
}`;
}

/** WGSL: merge the stored list at `o` (capacity `cap`) of `src` into `v`/`ix`/`n` with `ins`. */
function mergeList(src: string, o: string, cap: string, ins: string, v: string, ix: string, n: string): string {
  return `for (var i = 0u; i < ${cap}; i++) {
      let x = ${src}[${o} + 2u * i];
      if (bitcast<u32>(x) == 0xff800000u) { break; }
      ${ins}(&${v}, &${ix}, &${n}, x, bitcast<u32>(${src}[${o} + 2u * i + 1u]));
    }`;
}

/** WGSL: V of one head from its top list, as softValueFused's headCode (−∞ with no entry). */
function headValue(v: string, ix: string, n: string, soft: boolean): string {
  const body = soft
    ? `var s = 0.0;
      for (var i = 0u; i < ${n}; i++) {
        let w = avail[base + ${ix}[i]];
        if (w > 0.0) { s += w * exp((${v}[i] - m) / u.alpha); }
      }
      h = m + log(max(s, 1e-10)) * u.alpha;`
    : `var best = m;
      var found = false;
      for (var i = 0u; i < ${n}; i++) {
        if (avail[base + ${ix}[i]] > 0.0 && (!found || ${v}[i] > best)) { best = ${v}[i]; found = true; }
      }
      h = best;`;
  return `{
    var h = u.negInf;
    if (${n} > 0u) {
      let m = ${v}[0];
      ${body}
    }
    vsum += h;
  }`;
}

function mergeCode(spec: PickSpec): string {
  const { lists, width, kv } = layout(spec);
  const soft = (spec.value?.alpha ?? 0) > 0;
  const lists3 = (src: string, o: string) => `${mergeList(src, o, "K", "insK", "av", "ai", "an")}
    ${lists > 0 ? mergeList(src, `${o} + ${2 * spec.K}u`, "KV", "insV", "bv", "bi", "bn") : ""}
    ${lists > 1 ? mergeList(src, `${o} + ${2 * (spec.K + kv)}u`, "KV", "insV", "cv", "ci", "cn") : ""}`;
  return `${uniformStruct(["n: u32", "threads: u32", "alpha: f32", "negInf: f32"])}
${storageDecls(["part", "q1", "q2", "avail"], ["mid", "out"])}
${commonCode(spec)}
@compute @workgroup_size(${WG})
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let row = wid.y;
  let base = row * u.n;
  var av: array<f32, K>; var ai: array<u32, K>; var an = 0u;
  var bv: array<f32, KV>; var bi: array<u32, KV>; var bn = 0u;
  var cv: array<f32, KV>; var ci: array<u32, KV>; var cn = 0u;
  for (var t = lid.x; t < u.threads; t += ${WG}u) {
    ${lists3("part", `(row * u.threads + t) * ${width}u`)}
  }
  let o = (row * ${WG}u + lid.x) * ${width}u;
  ${storeList("mid", "o", "av", "ai", "an", "K")}
  ${lists > 0 ? storeList("mid", `o + ${2 * spec.K}u`, "bv", "bi", "bn", "KV") : ""}
  ${lists > 1 ? storeList("mid", `o + ${2 * (spec.K + kv)}u`, "cv", "ci", "cn", "KV") : ""}
  storageBarrier();
  workgroupBarrier();
  if (lid.x != 0u) { return; }
  an = 0u; bn = 0u; cn = 0u;
  for (var t = 0u; t < ${WG}u; t++) {
    ${lists3("mid", `(row * ${WG}u + t) * ${width}u`)}
  }
  let ro = row * (4u * K + 1u);
  for (var i = 0u; i < K; i++) {
    let j = select(0u, ai[i], i < an);
    out[ro + i] = f32(j);
    out[ro + K + i] = select(u.negInf, av[i], i < an);
    out[ro + 2u * K + i] = q1[base + j];
    out[ro + 3u * K + i] = q2[base + j];
  }
  var vsum = 0.0;
  ${lists > 0 ? headValue("bv", "bi", "bn", soft) : ""}
  ${lists > 1 ? headValue("cv", "ci", "cn", soft) : ""}
  // avail is read (statically) even without V: an unused binding would invalidate the bind group
  out[ro + 4u * K] = select(vsum, 0.0, avail[0] > 2.0);
}`;
}

/**
 * The greedy step's joined rows for q1, q2 and avail [E, n] (avail 0/1), one per row of the input:
 * indices, q1 + q2, q1 and q2 of the top-K available candidates (past the available ones: index 0
 * and q −∞), then V (0 without spec.value; −∞ when a head has no candidate) → [E, 4K + 1].
 */
export function greedyPickFused(q1: tf.Tensor2D, q2: tf.Tensor2D, avail: tf.Tensor2D, spec: PickSpec): tf.Tensor2D {
  const [E, n] = q1.shape;
  if (!pickFits(spec)) throw new Error(`greedyPickFused: K ${spec.K} / k ${spec.value?.k} outside 1..${PICK_MAX_K}`);
  const { width } = layout(spec);
  const threads = Math.max(1, Math.min(PART_THREADS, Math.ceil(n / 16)));
  const be = webgpuBackend();
  const key = `${spec.K}_${spec.value ? `${spec.value.k}_${spec.value.heads}` : "none"}`;
  const [part] = runRawProgram(be, {
    key: `qrag_pick_part_${key}`,
    code: () => partCode(spec),
    inputs: [q1, q2, avail],
    outputs: [{ shape: [E * threads * width] }],
    uniforms: [{ type: "uint32", data: [n] }, { type: "uint32", data: [threads] }, { type: "float32", data: [-Infinity] }],
    threads,
    workgroups: [Math.ceil(threads / WG), E, 1],
  });
  const partT = tf.engine().makeTensorFromTensorInfo(part);
  const soft = (spec.value?.alpha ?? 0) > 0;
  const [mid, out] = runRawProgram(be, {
    key: `qrag_pick_merge_${key}_${soft ? "soft" : "max"}`,
    code: () => mergeCode(spec),
    inputs: [partT, q1, q2, avail],
    outputs: [{ shape: [E * WG * width] }, { shape: [E, 4 * spec.K + 1] }],
    uniforms: [{ type: "uint32", data: [n] }, { type: "uint32", data: [threads] }, { type: "float32", data: [soft ? spec.value!.alpha : 1] }, { type: "float32", data: [-Infinity] }],
    threads: WG,
    workgroups: [1, E, 1],
  });
  partT.dispose();
  tf.engine().makeTensorFromTensorInfo(mid).dispose();
  return tf.engine().makeTensorFromTensorInfo(out) as tf.Tensor2D;
}
