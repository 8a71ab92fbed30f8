/**
 * A rollout lock-step after the policy's forward, for all environments in ONE program and without
 * the host: score the candidates, take the policy's top-k, sample the action from numbers the host
 * drew beforehand (agent/policy.ts sampleTopK, in float32), apply it (availability, the selected
 * lists, the relative positions as rotary table rows), and write the next state's token row for
 * the next forward (encoder.ts DeviceStates). A workgroup per environment. It also pools its
 * state from the forward's last rows (StateRows), which that forward's own pooling program did
 * before: a dispatch fewer a step.
 *
 * Why: the host loop read every lock-step's top-k back (a read round trip and the GPU drained,
 * 17 per iteration of the reference workload: 1.1 ms each on an H200) only to sample, build the
 * next state's text and pack it. agent/lock-steps.ts records several lock-steps this way and
 * reads once, the final environment rows, whose selected lists hold every action taken.
 *
 * Buffers (the layouts agent/lock-steps.ts writes):
 * - env [E, H] i32: count, n (candidates), question length, 0, then order[M] (retrieval order)
 *   and sorted[M] (index order).
 * - consts u32: question ids [E, Pq] at 0, candidate piece ids [E·nMax, P] at cOff, their lengths
 *   [E·nMax] at lOff, the pooling weight of each row length [maxLen + 1] (float bits) at pOff,
 *   the picks' uniform numbers [S, E, nu] (float bits) at uOff.
 * - next [2, E, Tn] i32: ids, mask bits (Tn = 0: the segment's last step); the next lock-step
 *   pools the forward's rows with the weight of the row's length, from `env` (poolCode).
 */
import * as tf from "@tensorflow/tfjs";
import { runRawProgram, storageDecls, uniformStruct, webgpuBackend, WG } from "./raw-program.ts";
import { policyTopKRow, SCORE_FIELDS, scoreReads, scoreSlotFn, scoreWorkgroupMain } from "./twin-q.ts";
import { enableHalf, readAct } from "./half-storage.ts";

/** Header fields of an environment row before its two selected lists. */
export const ENV_HEADER = 4;

const FIELDS = [
  ...SCORE_FIELDS,
  "H: u32", "M: u32", "Pq: u32", "P: u32", "cOff: u32", "lOff: u32", "pOff: u32", "uOff: u32", "nu: u32", "s: u32",
  "alpha: f32", "eps: f32", "stepSize: u32", "maxValue: u32", "relative: u32", "maxPos: u32",
  "Tn: u32", "maxLen: u32", "cls: i32", "sep: i32", "sortIdx: u32", "Tp: u32",
];

/** The pick (thread 0): sampleTopK over the available entries of the top-k, with this step's numbers. */
const PICK_FN = `fn pick(e: u32) -> u32 {
  let o = e * u.nMax;
  let n = u32(env[e * u.H + 1u]);
  var ti: array<u32, K>;
  var tv: array<f32, K>;
  var m = 0u;
  for (var i = 0u; i < K; i++) {
    let j = topI[i];
    if (j < n && avail[o + j] > 0.0) { ti[m] = j; tv[m] = topV[i]; m++; }
  }
  // none available cannot happen (such an episode has ended); the host's replay rejects the pick
  if (m == 0u) { return n; }
  let ub = u.uOff + (u.s * u.E + e) * u.nu;
  if (u.eps > 0.0 && bitcast<f32>(consts[ub]) < u.eps) {
    return ti[min(m - 1u, u32(floor(bitcast<f32>(consts[ub + 1u]) * f32(m))))];
  }
  if (!(u.alpha > 0.0)) { return ti[0]; }
  var w: array<f32, K>;
  var total = 0.0;
  for (var t = 0u; t < m; t++) { w[t] = exp((tv[t] - tv[0]) / u.alpha); total += w[t]; }
  if (!(total > 0.0) || !finite(total)) { return ti[0]; }
  var r = bitcast<f32>(consts[ub + u.nu - 1u]) * total;
  for (var t = 0u; t < m; t++) {
    r -= w[t];
    if (r < 0.0) { return ti[t]; }
  }
  return ti[m - 1u];
}`;

/** env/positions.ts relativePositions of candidate j given the sorted selection at `so` (c entries), as a table row. */
const ROW_FN = `fn relRow(j: u32, n: u32, c: u32, so: u32) -> i32 {
  var k = 0u;
  while (k < c && u32(envOut[so + k]) <= j) { k++; }
  let start = select(0u, u32(envOut[so + max(k, 1u) - 1u]), k > 0u);
  let end = select(n, u32(envOut[so + min(k, c - 1u)]), k < c);
  let len = end - start;
  var pos = u.stepSize * k;
  if (len > 1u) { pos += (u.maxValue * (j - start)) / (len - 1u); }
  return i32(min(pos, u.maxPos - 1u));
}`;

/** The next state's row: [cls], the question, [sep], each selected piece and [sep], cut at maxLen (transformer.ts packStates). */
const TOKENS_FN = `fn writeTokens(e: u32, lane: u32, c: u32, lst: u32) {
  let qLen = u32(env[e * u.H + 2u]);
  var total = 2u + qLen;
  for (var p = 0u; p < c; p++) { total += consts[u.lOff + e * u.nMax + u32(envOut[lst + p])] + 1u; }
  let rowLen = min(total, u.maxLen);
  let N = u.E * u.Tn;
  for (var t = lane; t < u.Tn; t += ${WG}u) {
    var tok = 0i;
    if (t == 0u) {
      tok = u.cls;
    } else if (t < rowLen) {
      var off = 1u;
      for (var p = 0u; p <= c; p++) {
        var len = qLen;
        var src = e * u.Pq;
        if (p > 0u) {
          let j = e * u.nMax + u32(envOut[lst + p - 1u]);
          len = consts[u.lOff + j];
          src = u.cOff + j * u.P;
        }
        if (t < off + len) { tok = i32(consts[src + t - off]); break; }
        if (t == off + len) { tok = u.sep; break; }
        off += len + 1u;
      }
    }
    let inRow = t < rowLen;
    next[e * u.Tn + t] = select(0i, tok, inRow);
    next[N + e * u.Tn + t] = select(0i, bitcast<i32>(1.0f), inRow);
  }
}`;

/**
 * The states' pooling, where the lock-step reads the forward's last rows `hid` [E·Tp, D] (StateRows):
 * workgroup e's masked mean into `pst`, as the forward's pooling program sums it (recorded-encoder.ts
 * poolShader), the weights those the previous lock-step wrote for this row (writeTokens: its
 * length from the selected pieces, which `env` holds now).
 */
const poolCode = (half: boolean): string => `
  {
    let eo = e * u.H;
    let c0 = u32(env[eo]);
    var total = 2u + u32(env[eo + 2u]);
    for (var p = 0u; p < c0; p++) { total += consts[u.lOff + e * u.nMax + u32(env[eo + ${ENV_HEADER}u + p])] + 1u; }
    let rowLen = min(total, u.maxLen);
    let pw = bitcast<f32>(consts[u.pOff + rowLen]);
    for (var c = lid.x; c < u.D; c += ${WG}u) {
      var s = 0.0;
      for (var t = 0u; t < u.Tp; t++) {
        let r = e * u.Tp + t;
        s += ${readAct(half, "hid[r * u.D + c]")} * select(0.0, pw, t < rowLen);
      }
      pst[c] = s;
    }
    workgroupBarrier();
  }`;

function lockStepCode(rotary: boolean, k: number, pool: { D: number; half: boolean }): string {
  const topk = policyTopKRow(k, "local");
  // the states' rows in place of scoreReads' pooled states `st`
  const [, ...rest] = scoreReads(rotary);
  const reads = [pool.half ? "hid:f16" : "hid", ...rest, "avail", "env:i32", "consts:u32"];
  const writes = ["q1", "q2", "availOut", ...(rotary ? ["rowsOut:i32"] : []), "envOut:i32", "next:i32"];
  const rowUpdate = rotary
    ? `rowsOut[o] = select(rows[o], relRow(j, n, c, so), u.relative == 1u && j < n);`
    : "";
  return `${enableHalf(pool.half)}${uniformStruct(FIELDS)}
${topk.head}
${storageDecls(reads, writes)}
var<workgroup> topV: array<f32, K>;
var<workgroup> topI: array<u32, K>;
var<workgroup> picked: u32;
var<workgroup> pst: array<f32, ${pool.D}>;
${scoreSlotFn(rotary, (c) => `pst[${c}]`)}
${topk.fn}
${PICK_FN}
${rotary ? ROW_FN : ""}
${TOKENS_FN}
${scoreWorkgroupMain(poolCode(pool.half))}
  let eo = e * u.H;
  let so = eo + ${ENV_HEADER}u + u.M;
  if (lid.x == 0u) {
    ${topk.call}
    let a = pick(e);
    picked = a;
    let c0 = u32(env[eo]);
    for (var i = 0u; i < u.H; i++) { envOut[eo + i] = env[eo + i]; }
    envOut[eo] = i32(c0 + 1u);
    envOut[eo + ${ENV_HEADER}u + c0] = i32(a);
    var p = c0;
    while (p > 0u && u32(env[so + p - 1u]) > a) { envOut[so + p] = env[so + p - 1u]; p--; }
    envOut[so + p] = i32(a);
  }
  storageBarrier();
  workgroupBarrier();
  let a = picked;
  let n = u32(env[eo + 1u]);
  let c = u32(env[eo]) + 1u;
  for (var j = lid.x; j < u.nMax; j += ${WG}u) {
    let o = e * u.nMax + j;
    availOut[o] = select(avail[o], 0.0, j == a);
    ${rowUpdate}
  }
  if (u.Tn > 0u) { writeTokens(e, lid.x, c, select(eo + ${ENV_HEADER}u, so, u.sortIdx == 1u)); }
}`;
}

/**
 * A step's states as the forward's last hidden states [E·T, D] before its pooling
 * (recorded-encoder.ts recordedRowsOfTokens; f16 pairs as float32 elements where `half`): the
 * lock-step pools them itself, a dispatch fewer a step. Rows of the tokens the previous lock-step wrote.
 */
export interface StateRows {
  rows: tf.Tensor;
  T: number;
  half: boolean;
}

/** What a lock-step program is given: the step's states' rows, and the environments as the previous step left them. */
export interface LockStepInputs {
  states: StateRows;
  cands: tf.Tensor2D;
  /** Slot → candidate row [E·nMax] (≥ R: padding), fixed over the lock-steps. */
  padIdx: tf.Tensor;
  /** Rotary table rows of each slot [E·nMax] and the tables, or null without rotary. */
  rot: { rows: tf.Tensor; c: tf.Tensor2D; s: tf.Tensor2D; maxPos: number } | null;
  avail: tf.Tensor2D;
  env: tf.Tensor;
  consts: tf.Tensor;
}

export interface LockStepShape {
  E: number;
  nMax: number;
  /** Selected-list capacity (the episodes' step bound). */
  M: number;
  Pq: number;
  P: number;
  cOff: number;
  lOff: number;
  pOff: number;
  uOff: number;
  /** Uniform numbers per pick (policy.ts drawPick). */
  nu: number;
  k: number;
  alpha: number;
  eps: number;
  /** 1: relative positions recomputed after each pick; 0: the rows stay. */
  relative: boolean;
  stepSize: number;
  /** env/positions.ts maxValueOf(stepSize): the top value inside a gap. */
  maxValue: number;
  maxLen: number;
  cls: number;
  sep: number;
  sortByIndex: boolean;
}

/** The environments after one lock-step: the new availability, rotary rows, environment rows, and the next state's tokens (when Tn > 0). */
export interface LockStepOutputs {
  avail: tf.Tensor2D;
  rows: tf.Tensor | null;
  env: tf.Tensor;
  next: tf.Tensor | null;
}

/** Lock-step `s` of a segment (its picks' numbers at consts' uOff + s·E·nu), the next forward's rows Tn tokens long. */
export function lockStep(x: LockStepInputs, sh: LockStepShape, s: number, Tn: number): LockStepOutputs {
  const [R, D] = x.cands.shape;
  const { E, nMax, M } = sh;
  const k = Math.min(sh.k, nMax);
  const rotary = x.rot !== null;
  const pool = x.states;
  const u = (v: number) => ({ type: "uint32" as const, data: [v] });
  const f = (v: number) => ({ type: "float32" as const, data: [v] });
  const i = (v: number) => ({ type: "int32" as const, data: [v] });
  const infos = runRawProgram(webgpuBackend(), {
    key: `qrag_lock_step_${rotary ? "rot" : "plain"}_${k}_pool${D}${pool.half ? "_h16" : ""}`,
    code: () => lockStepCode(rotary, k, { D, half: pool.half }),
    inputs: [pool.rows, x.cands, x.padIdx, ...(x.rot ? [x.rot.rows, x.rot.c, x.rot.s] : []), x.avail, x.env, x.consts],
    outputs: [
      { shape: [E, nMax] }, { shape: [E, nMax] }, { shape: [E, nMax] },
      ...(rotary ? [{ shape: [E * nMax], dtype: "int32" as const }] : []),
      { shape: [E, ENV_HEADER + 2 * M], dtype: "int32" as const },
      { shape: [Math.max(1, 2 * E * Tn)], dtype: "int32" as const },
    ],
    uniforms: [
      u(E), u(nMax), u(R), u(D), f(-Infinity),
      u(ENV_HEADER + 2 * M), u(M), u(sh.Pq), u(sh.P), u(sh.cOff), u(sh.lOff), u(sh.pOff), u(sh.uOff), u(sh.nu), u(s),
      f(sh.alpha), f(sh.eps), u(sh.stepSize), u(sh.maxValue), u(sh.relative ? 1 : 0), u(x.rot?.maxPos ?? 1),
      u(Tn), u(sh.maxLen), i(sh.cls), i(sh.sep), u(sh.sortByIndex ? 1 : 0), u(pool.T),
    ],
    threads: E * WG,
    workgroups: [Math.max(1, Math.min(E, 65535)), Math.max(1, Math.ceil(E / 65535)), 1],
  });
  const t = infos.map((info) => tf.engine().makeTensorFromTensorInfo(info));
  const [q1, q2, avail] = t;
  tf.dispose([q1, q2]);
  const rest = t.slice(3);
  const rows = rotary ? rest.shift()! : null;
  const [env, next] = rest;
  if (Tn === 0) next.dispose();
  return { avail: avail as tf.Tensor2D, rows, env, next: Tn > 0 ? next : null };
}
