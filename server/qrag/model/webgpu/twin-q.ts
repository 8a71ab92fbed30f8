/**
 * Candidate scoring of the device path as fused WebGPU programs: the twin-head Q of every
 * candidate (rotary rotation included) in one program, and the soft value V(s) = v1 + v2 of both
 * heads (top-k, availability, α·logsumexp) in another.
 *
 * Why: agent/device-scoring.ts builds them from ~15 and ~25 tfjs ops (rotation, gathers, padding,
 * per-head top-k, exp/log), one dispatch each, at every environment step of every rollout; the
 * arithmetic is tiny. Same formulas and the same op order: scorePadded's q1, q2 [E, nMax] with
 * −∞ past each environment's candidates, softValueDevice's heads (top-k by value, ties to the
 * lower index, like tfjs's topk).
 */
import * as tf from "@tensorflow/tfjs";
import { rotaryRows } from "../device-ops.ts";
import { runRawProgram, storageDecls, uniformStruct, webgpuBackend, WG, type Uniform } from "./raw-program.ts";
import { ROTATE_WGSL } from "./rotary.ts";

/**
 * WGSL loop body: insert value `x` of candidate `j` into the descending top-K list (`vals`, `inds`,
 * `cnt` entries so far); a value that does not beat the K-th is skipped, ties keep the earlier index.
 */
function insertTopK(vals: string, inds: string, x: string): string {
  return `      if (cnt == K && !(${x} > ${vals}[K - 1u])) { continue; }
      var p = min(cnt, K - 1u);
      while (p > 0u && ${vals}[p - 1u] < ${x}) { ${vals}[p] = ${vals}[p - 1u]; ${inds}[p] = ${inds}[p - 1u]; p--; }
      ${vals}[p] = ${x};
      ${inds}[p] = j;
      cnt = min(cnt + 1u, K);`;
}

/** −∞ comes in as a uniform: WGSL rejects a constant infinity. */
const NEG_INF = "u.negInf";

export const SCORE_FIELDS = ["E: u32", "nMax: u32", "R: u32", "D: u32", "negInf: f32"];
export const scoreReads = (rotary: boolean): string[] => ["st", "cand", "padIdx:i32", ...(rotary ? ["rows:i32", "ct", "sn"] : [])];

/**
 * WGSL `fn scoreSlot(idx)`: slot idx's q1, q2 (state idx / nMax against its candidate row; −∞ at
 * padding). `state`: the state's element `c` (WGSL; `so` is the state's offset in `st`).
 */
export function scoreSlotFn(rotary: boolean, state: (c: string) => string = (c) => `st[so + ${c}]`): string {
  // the candidate's pair rotated as rotary.ts's programs rotate it (ROTATE_WGSL), so the same bits
  const pair = rotary
    ? `let rp = rotPair(cand[co + c], cand[co + c + 1u], u32(rows[idx]) * u.D + c);
    let r0 = rp.x;
    let r1 = rp.y;`
    : `let r0 = cand[co + c];
    let r1 = cand[co + c + 1u];`;
  return `${rotary ? `${ROTATE_WGSL}\n` : ""}fn scoreSlot(idx: u32) {
  let r = padIdx[idx];
  if (u32(r) >= u.R) { q1[idx] = ${NEG_INF}; q2[idx] = ${NEG_INF}; return; }
  let so = (idx / u.nMax) * u.D;
  let co = u32(r) * u.D;
  let half = u.D / 2u;
  var h = array<f32, 2>(0.0, 0.0);
  for (var c = 0u; c < u.D; c += 2u) {
    ${pair}
    h[select(1u, 0u, c < half)] += r0 * ${state("c")};
    h[select(1u, 0u, c + 1u < half)] += r1 * ${state("c + 1u")};
  }
  q1[idx] = h[0];
  q2[idx] = h[1];
}`;
}

function scoreCode(rotary: boolean): string {
  return `${uniformStruct(SCORE_FIELDS)}
${storageDecls(scoreReads(rotary), ["q1", "q2"])}
${scoreSlotFn(rotary)}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let idx = threadIndex(gid);
  if (idx >= u.E * u.nMax) { return; }
  scoreSlot(idx);
}`;
}

/** A per-row program over the scores (one thread per row: the policy's top-k, the soft value) and what it declares and reads. */
export interface RowProgram {
  /** Uniform fields past the scoring's (scoreThenRowCode). */
  fields?: string[];
  head: string;
  reads: string[];
  writes: string[];
  fn: string;
  /** The statement running it for row `e`. */
  call: string;
}

/** `row` as a program of its own over q1, q2 already computed, one thread per row. */
function rowProgramCode(fields: string[], row: RowProgram): string {
  return `${uniformStruct(fields)}
${row.head}
${storageDecls(["q1", "q2", ...row.reads], row.writes)}
${row.fn}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let e = threadIndex(gid);
  if (e >= u.E) { return; }
  ${row.call}
}`;
}

/**
 * The scores of each row's nMax slots, then `row` (a program of one thread per row over them: the
 * policy's top-k, or the soft value) in ONE program: a workgroup per row scores its slots, then its
 * first thread runs `row` on them, after a storage barrier. Saves a dispatch per rollout step and
 * per target batch; `row` is the very code its own program runs, so the results are the same bits.
 */
function scoreThenRowCode(rotary: boolean, row: RowProgram): string {
  return `${uniformStruct([...SCORE_FIELDS, ...(row.fields ?? [])])}
${row.head}
${storageDecls([...scoreReads(rotary), ...row.reads], ["q1", "q2", ...row.writes])}
${scoreSlotFn(rotary)}
${row.fn}
${scoreWorkgroupMain()}
  if (lid.x == 0u) { ${row.call} }
}`;
}

/**
 * The opening of a program with a workgroup per state (row `e`): `before` (WGSL statements of all
 * its threads), its nMax slots scored by all its threads, then a storage barrier; the caller's
 * statements and the closing brace follow (scoreThenRowCode's, lock-step.ts's).
 */
export const scoreWorkgroupMain = (before = ""): string => `@compute @workgroup_size(${WG})
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let e = wid.y * nwg.x + wid.x;
  if (e >= u.E) { return; }${before}
  for (var j = lid.x; j < u.nMax; j += ${WG}u) { scoreSlot(e * u.nMax + j); }
  storageBarrier();`;

/**
 * Which candidate row each state scores in each of its nMax slots, at which rotary position:
 * `padIdx` [N·nMax] (a value ≥ R is padding, −∞) and `positions` [N·nMax]. The rollout's deferred
 * target values (agent/rollout.ts) score many states against shared candidate rows, each state at
 * its own step's positions, so positions belong to the slot and not to the candidate row.
 */
export interface ScoreLayout {
  nMax: number;
  padIdx: Int32Array;
  positions: Int32Array;
}

/** The layout of scorePadded: environment e scores its own counts[e] rows, one after another. */
export function paddedLayout(positions: Int32Array, counts: readonly number[], R: number): ScoreLayout {
  if (positions.length !== R) throw new Error(`scorePadded: ${positions.length} positions for ${R} rows`);
  let start = 0;
  const blocks = counts.map((count) => ({ start, positions: positions.subarray(start, (start += count)) }));
  if (start !== R) throw new Error(`scorePadded: counts sum to ${start}, candidates have ${R} rows`);
  return blocksLayout(blocks, R);
}

/**
 * State i scores the candidate rows start … start + positions.length − 1 of its block (anywhere
 * among the R rows, e.g. the episodes of a batched evaluation still running), rotated by its
 * positions.
 */
export function blocksLayout(blocks: readonly { start: number; positions: Int32Array }[], R: number): ScoreLayout {
  const nMax = Math.max(1, ...blocks.map((b) => b.positions.length));
  const padIdx = new Int32Array(blocks.length * nMax).fill(R);
  const slotPos = new Int32Array(blocks.length * nMax);
  blocks.forEach((b, i) => {
    if (b.start < 0 || b.start + b.positions.length > R) throw new Error(`blocksLayout: rows ${b.start}…${b.start + b.positions.length - 1} outside the ${R} candidates`);
    for (let j = 0; j < b.positions.length; j++) {
      padIdx[i * nMax + j] = b.start + j;
      slotPos[i * nMax + j] = b.positions[j];
    }
  });
  return { nMax, padIdx, positions: slotPos };
}

/** What a scoring program binds and is told: states [N, D] against candidates [R, D] laid out by `layout`. */
function scoreInputs(states: tf.Tensor2D, cands: tf.Tensor2D, layout: ScoreLayout, who: string) {
  const [R, D] = cands.shape;
  const { nMax, padIdx } = layout;
  const N = padIdx.length / nMax;
  if (D % 2 !== 0) throw new Error(`${who}: odd width ${D}`);
  if (states.shape[0] !== N || states.shape[1] !== D) throw new Error(`${who}: states [${states.shape}] for ${N} rows of width ${D}`);
  if (layout.positions.length !== padIdx.length) throw new Error(`${who}: ${layout.positions.length} positions for ${padIdx.length} slots`);
  const rot = rotaryRows(D, layout.positions);
  const made = [tf.tensor1d(padIdx, "int32"), ...(rot ? [tf.tensor1d(rot.rows, "int32")] : [])];
  return {
    N, nMax, rotary: Boolean(rot),
    inputs: [states, cands, made[0], ...(rot ? [made[1], rot.c, rot.s] : [])],
    uniforms: [...[N, nMax, R, D].map((x) => ({ type: "uint32" as const, data: [x] })), { type: "float32" as const, data: [-Infinity] }],
    /** Disposes the index tensors made here (the rotary tables are cached). */
    dispose: () => tf.dispose(made),
  };
}

/**
 * Twin-head Q as one program: states [N, D] against candidates [R, D] laid out by `layout`
 * → q1, q2 [N, nMax] (−∞ at padding).
 */
export function scoreRowsFused(states: tf.Tensor2D, cands: tf.Tensor2D, layout: ScoreLayout): { q1: tf.Tensor2D; q2: tf.Tensor2D } {
  const sc = scoreInputs(states, cands, layout, "scoreRowsFused");
  const infos = runRawProgram(webgpuBackend(), {
    key: `qrag_score_${sc.rotary ? "rot" : "plain"}`,
    code: () => scoreCode(sc.rotary),
    inputs: sc.inputs,
    outputs: [{ shape: [sc.N, sc.nMax] }, { shape: [sc.N, sc.nMax] }],
    uniforms: sc.uniforms,
    threads: sc.N * sc.nMax,
  });
  sc.dispose();
  const [q1, q2] = infos.map((i) => tf.engine().makeTensorFromTensorInfo(i) as tf.Tensor2D);
  return { q1, q2 };
}

/**
 * A scoreThenRowCode program: scores of `layout`, then `row` per state into its output of
 * `rowShape(N)`; the scores themselves are dropped. `name` keys the program after the scoring's.
 */
function runScoreThenRow(states: tf.Tensor2D, cands: tf.Tensor2D, layout: ScoreLayout, avail: tf.Tensor2D, name: string, row: RowProgram, rowShape: (n: number) => number[], extra: Uniform[] = []): tf.Tensor {
  const sc = scoreInputs(states, cands, layout, `scoring with ${name}`);
  const infos = runRawProgram(webgpuBackend(), {
    key: `qrag_score_${sc.rotary ? "rot" : "plain"}_${name}`,
    code: () => scoreThenRowCode(sc.rotary, row),
    inputs: [...sc.inputs, avail],
    outputs: [{ shape: [sc.N, sc.nMax] }, { shape: [sc.N, sc.nMax] }, { shape: rowShape(sc.N) }],
    uniforms: [...sc.uniforms, ...extra],
    threads: sc.N * WG,
    // a workgroup per state, folded into y past 65535
    workgroups: [Math.max(1, Math.min(sc.N, 65535)), Math.max(1, Math.ceil(sc.N / 65535)), 1],
  });
  sc.dispose();
  const [q1, q2, out] = infos.map((i) => tf.engine().makeTensorFromTensorInfo(i));
  tf.dispose([q1, q2]);
  return out;
}

/**
 * scoreRowsFused and policyTopKJoinedFused in one program (scoreThenRowCode): per state the row
 * [indices(k), values(k)] the rollout reads, the same bits as the two programs.
 */
export function scorePolicyTopKJoinedFused(states: tf.Tensor2D, cands: tf.Tensor2D, layout: ScoreLayout, avail: tf.Tensor2D, k: number): tf.Tensor2D {
  const kk = Math.min(k, layout.nMax);
  return runScoreThenRow(states, cands, layout, avail, `topk_${kk}_joined`, policyTopKRow(kk, "joined"), (n) => [n, 2 * kk]) as tf.Tensor2D;
}

/** scoreRowsFused and softValueFused in one program (scoreThenRowCode): V(s) per state → [N], the same bits as the two programs. */
export function scoreSoftValueFused(states: tf.Tensor2D, cands: tf.Tensor2D, layout: ScoreLayout, avail: tf.Tensor2D, alpha: number, k: number): tf.Tensor1D {
  const kk = Math.max(1, Math.min(k, layout.nMax));
  const soft = alpha > 0;
  return runScoreThenRow(states, cands, layout, avail, `softv_${kk}_${soft ? "soft" : "max"}`, softValueRow(kk, soft), (n) => [n], [{ type: "float32", data: [soft ? alpha : 1] }]) as tf.Tensor1D;
}

/**
 * scorePadded (device-scoring.ts) as one program: states [E, D], candidates [R, D] (environments
 * one after another, counts[e] rows each), rotated by `positions` → q1, q2 [E, nMax].
 */
export function scorePaddedFused(states: tf.Tensor2D, cands: tf.Tensor2D, positions: Int32Array, counts: readonly number[]): { q1: tf.Tensor2D; q2: tf.Tensor2D } {
  return scoreRowsFused(states, cands, paddedLayout(positions, counts, cands.shape[0]));
}

/** One head's soft value into `res_<q>` (WGSL statements; `q` names the head's buffer). */
function headCode(q: string, soft: boolean): string {
  return `{
    var vals: array<f32, K>;
    var inds: array<u32, K>;
    var cnt = 0u;
    for (var j = 0u; j < u.nMax; j++) {
      let x = ${q}[e * u.nMax + j];
      if (bitcast<u32>(x) == 0xff800000u) { continue; } // padding (−∞): never selected before a finite value
${insertTopK("vals", "inds", "x")}
    }
    if (cnt == 0u) {
      res_${q} = ${NEG_INF};
    } else {
      let m = vals[0];
      ${
        soft
          ? `var s = 0.0;
      for (var i = 0u; i < cnt; i++) {
        let a = avail[e * u.nMax + inds[i]];
        if (a > 0.0) { s += a * exp((vals[i] - m) / u.alpha); }
      }
      res_${q} = m + log(max(s, 1e-10)) * u.alpha;`
          : `var best = m;
      var found = false;
      for (var i = 0u; i < cnt; i++) {
        if (avail[e * u.nMax + inds[i]] > 0.0 && (!found || vals[i] > best)) { best = vals[i]; found = true; }
      }
      res_${q} = best;`
      }
    }
  }`;
}

/** The soft value's per-row program (`fn softValueRow(e)`, v[e] = v1 + v2) and what it declares. */
function softValueRow(k: number, soft: boolean): RowProgram {
  return {
    fields: ["alpha: f32"],
    head: `const K: u32 = ${k}u;`,
    reads: ["avail"],
    writes: ["v"],
    fn: `fn softValueRow(e: u32) {
  var res_q1 = 0.0;
  var res_q2 = 0.0;
  ${headCode("q1", soft)}
  ${headCode("q2", soft)}
  v[e] = res_q1 + res_q2;
}`,
    call: "softValueRow(e);",
  };
}

function softValueCode(k: number, soft: boolean): string {
  return rowProgramCode(["E: u32", "nMax: u32", "alpha: f32", "negInf: f32"], softValueRow(k, soft));
}

/**
 * softValueDevice (device-scoring.ts) as one program: V(s) = v1 + v2 per environment → [E]. An
 * environment without candidates gets −∞ (the ops give NaN there).
 */
export function softValueFused(q1: tf.Tensor2D, q2: tf.Tensor2D, avail: tf.Tensor2D, alpha: number, k: number): tf.Tensor1D {
  const [E, nMax] = q1.shape;
  const kk = Math.max(1, Math.min(k, nMax));
  const soft = alpha > 0;
  const [info] = runRawProgram(webgpuBackend(), {
    key: `qrag_softv_${kk}_${soft ? "soft" : "max"}`,
    code: () => softValueCode(kk, soft),
    inputs: [q1, q2, avail],
    outputs: [{ shape: [E] }],
    uniforms: [
      { type: "uint32", data: [E] },
      { type: "uint32", data: [nMax] },
      { type: "float32", data: [soft ? alpha : 1] },
      { type: "float32", data: [-Infinity] },
    ],
    threads: E,
  });
  return tf.engine().makeTensorFromTensorInfo(info) as tf.Tensor1D;
}

/**
 * The policy's top-k of row e as a RowProgram, written as `out` says: "joined" [indices(k),
 * values(k)] per row, "split" values and indices apart, "local" into the workgroup arrays `topV`,
 * `topI` the caller declares (the lock-step program samples from them).
 */
export function policyTopKRow(k: number, out: "joined" | "split" | "local"): RowProgram {
  const write = {
    joined: `joined[e * 2u * K + i] = f32(ix[i]);
    joined[e * 2u * K + K + i] = vs[i];`,
    split: `vals[e * K + i] = vs[i];
    inds[e * K + i] = i32(ix[i]);`,
    local: `topV[i] = vs[i];
    topI[i] = ix[i];`,
  }[out];
  return {
    head: `const K: u32 = ${k}u;
fn finite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }`,
    reads: ["avail"],
    writes: { joined: ["joined"], split: ["vals", "inds:i32"], local: [] }[out],
    fn: `fn topkRow(e: u32) {
  let o = e * u.nMax;
  var mn = 3.0e38;
  for (var j = 0u; j < u.nMax; j++) {
    let x = q1[o + j] + q2[o + j];
    if (finite(x)) { mn = min(mn, x); }
  }
  var vs: array<f32, K>;
  var ix: array<u32, K>;
  var cnt = 0u;
  for (var j = 0u; j < u.nMax; j++) {
    let x = q1[o + j] + q2[o + j];
    if (!finite(x)) { continue; }
    let v = select(mn - 1.0, x, avail[o + j] > 0.0);
${insertTopK("vs", "ix", "v")}
  }
  // fewer finite logits than k: the padding (−∞) follows in index order, as in tfjs's topk
  for (var j = 0u; j < u.nMax && cnt < K; j++) {
    let x = q1[o + j] + q2[o + j];
    if (finite(x)) { continue; }
    vs[cnt] = x;
    ix[cnt] = j;
    cnt++;
  }
  for (var i = 0u; i < K; i++) {
    ${write}
  }
}`,
    call: "topkRow(e);",
  };
}

function policyTopKCode(k: number, joined: boolean): string {
  return rowProgramCode(["E: u32", "nMax: u32"], policyTopKRow(k, joined ? "joined" : "split"));
}

/**
 * policyTopK (device-scoring.ts) as one program: logits q1 + q2, unavailable candidates at
 * min(finite logits) − 1, padding −∞, top-k per environment → values [E, k], indices [E, k]
 * (int32). Logits are finite or −∞ (padding); the ops would also order +∞ and NaN. Padding that
 * makes it into the top k comes in index order (tfjs orders those −∞ ties arbitrarily).
 */
export function policyTopKFused(q1: tf.Tensor2D, q2: tf.Tensor2D, avail: tf.Tensor2D, k: number): { values: tf.Tensor2D; indices: tf.Tensor2D } {
  const [v, i] = runPolicyTopK(q1, q2, avail, k, false);
  return { values: tf.engine().makeTensorFromTensorInfo(v) as tf.Tensor2D, indices: tf.engine().makeTensorFromTensorInfo(i) as tf.Tensor2D };
}

/**
 * policyTopKFused with both results in one float row per environment, [indices(k), values(k)]:
 * what the rollout reads each step, without the casts and the concat that joining them takes.
 */
export function policyTopKJoinedFused(q1: tf.Tensor2D, q2: tf.Tensor2D, avail: tf.Tensor2D, k: number): tf.Tensor2D {
  const [j] = runPolicyTopK(q1, q2, avail, k, true);
  return tf.engine().makeTensorFromTensorInfo(j) as tf.Tensor2D;
}

function runPolicyTopK(q1: tf.Tensor2D, q2: tf.Tensor2D, avail: tf.Tensor2D, k: number, joined: boolean): tf.TensorInfo[] {
  const [E, nMax] = q1.shape;
  const kk = Math.min(k, nMax);
  return runRawProgram(webgpuBackend(), {
    key: `qrag_policy_topk_${kk}${joined ? "_joined" : ""}`,
    code: () => policyTopKCode(kk, joined),
    inputs: [q1, q2, avail],
    outputs: joined ? [{ shape: [E, 2 * kk] }] : [{ shape: [E, kk] }, { shape: [E, kk], dtype: "int32" }],
    uniforms: [
      { type: "uint32", data: [E] },
      { type: "uint32", data: [nMax] },
    ],
    threads: E,
  });
}
