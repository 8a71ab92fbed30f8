/**
 * λ-return targets (docs/method.md §3.4, §3.8). Inputs are rollout rows of length L per env,
 * row-major [E·L]: reward r_t, notDone nd_t = 1 − done_t, value V_t = V_target(s_t) at collection
 * time. The last column is only used to bootstrap, so the result is E·(L−1) targets, env-major (the
 * order of the training transitions).
 *
 * "intended":  G[L−2] = r + γ·nd·V[L−1];  G[t] = r_t + γ·nd_t·((1−λ)·V[t+1] + λ·G[t+1]).
 * "reference": pqn-qa's loop, whose bootstrap value at t = L−3 is nd[L−2]·V[L−1] instead of
 *              V[L−2] (a missing re-initialisation); identical to "intended" at every other t.
 */
type LambdaMode = "intended" | "reference";

interface RolloutRows {
  reward: Float32Array;
  notDone: Float32Array;
  value: Float32Array;
}

/**
 * The rows widened by a last column that only bootstraps: reward 0, not done, V the value of each
 * environment's state after the rollout (`boot` [E]): every collected transition then gets a
 * target (the qrag_update_fix intent; iteration.ts).
 */
export function withBootstrapColumn(rows: RolloutRows, boot: Float32Array, E: number, L: number): RolloutRows {
  const L1 = L + 1;
  const widen = (src: Float32Array, last: (e: number) => number) => {
    const out = new Float32Array(E * L1);
    for (let e = 0; e < E; e++) {
      out.set(src.subarray(e * L, (e + 1) * L), e * L1);
      out[e * L1 + L] = last(e);
    }
    return out;
  };
  return { reward: widen(rows.reward, () => 0), notDone: widen(rows.notDone, () => 1), value: widen(rows.value, (e) => boot[e]) };
}

export function lambdaTargets(
  rows: RolloutRows,
  E: number,
  L: number,
  gamma: number,
  lambda: number,
  mode: LambdaMode = "intended",
): Float32Array {
  if (!(L >= 2)) throw new RangeError(`lambdaTargets: L must be ≥ 2, got ${L}`);
  const size = E * L;
  for (const [name, a] of Object.entries(rows) as [string, Float32Array][]) {
    if (a.length !== size) throw new RangeError(`lambdaTargets: ${name} has ${a.length} values, expected E·L = ${size}`);
  }
  const { reward: R, notDone: ND, value: V } = rows;
  const W = L - 1;
  const out = new Float32Array(E * W);
  for (let e = 0; e < E; e++) {
    const o = e * L; // row offset in the inputs
    const g = e * W; // row offset in the targets
    // Accumulate in float64; only the stored targets are rounded to float32.
    let G = R[o + L - 2] + gamma * ND[o + L - 2] * V[o + L - 1];
    out[g + L - 2] = G;
    if (mode === "reference") {
      let nq = ND[o + L - 2] * V[o + L - 1];
      for (let t = L - 3; t >= 0; t--) {
        const r = R[o + t];
        const nd = ND[o + t];
        const boot = r + gamma * nd * nq;
        const x = boot + gamma * lambda * (G - nq);
        G = nd * x + (1 - nd) * r; // terminal/truncated step: G = r
        out[g + t] = G;
        nq = V[o + t];
      }
    } else {
      for (let t = L - 3; t >= 0; t--) {
        G = R[o + t] + gamma * ND[o + t] * ((1 - lambda) * V[o + t + 1] + lambda * G);
        out[g + t] = G;
      }
    }
  }
  return out;
}
