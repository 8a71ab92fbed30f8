/**
 * Stopping rules applied after a greedy episode (docs/method.md §4.2 and issue 11, "Precision").
 * The retriever always takes its `max_steps` picks; a rule decides how long a prefix of them the
 * reader gets. Every rule reads only what the episode record already holds for each step (the
 * chosen chunk's Q, the logged top-k of the other available candidates, the soft value V(s)), so
 * all rules are scored on the same trajectory and need no retraining (prune reads the record's
 * leave-one-out Q, computed once per episode when it is evaluated to max_steps):
 *
 *   q-threshold  the paper's rule (reference `QValueChunkFilter`): stop before the first step with
 *                Q ≤ threshold (0.5 in the reference sweep). The labelled baseline.
 *   margin       per-step margin: stop before the first step whose pick beats the runner-up
 *                candidate by less than `delta` (a pick the agent cannot tell from the rest).
 *   drop         relative drop: stop before the first step i ≥ 1 with Q_i < ratio · Q_{i−1}.
 *   soft-v       the learner's soft value: stop before the first step whose state value
 *                V(s) = α-logsumexp over the top-k (soft-value.ts) is ≤ tau, i.e. when the
 *                agent expects no more return from going on.
 *   q-and-drop   both q-threshold and drop (stop at whichever fires first).
 *   elbow        cut at the largest drop between consecutive picks' Q over the whole episode (the
 *                retriever runs to max_steps anyway, so the rule may read every step; a virtual
 *                Q = 0 after the last pick lets it keep everything). Parameter-free: it trusts
 *                the shape of the Q sequence, not its absolute level.
 *   first-k      a fixed budget: the first k picks whatever their Q (a reference point, not adaptive).
 *   prune        not a prefix: the q-threshold prefix, then only the picks whose leave-one-out Q
 *                (the record's `loo`, agent/leave-one-out.ts: Q given the question and the other
 *                kept picks) is > tau. Drops a chunk the rest of the kept set makes redundant, e.g.
 *                an earlier move of the person asked about once the later one is in. Records
 *                without `loo` keep the prefix.
 *
 * A "calibrated" rule is one of these with its parameter chosen on a validation split by
 * `calibrate()` (maximise mean fact-F1 subject to coverage ≥ a floor); pure functions here, the
 * split itself comes from `validationSource()` in sources.ts and never from the test split.
 */
import type { RetrievalScores } from "../../../lib/contracts/engine-events.ts";
import { retrievalMetrics, qThresholdFilter } from "./metrics.ts";
import { leaveOneOutKeep } from "../../../lib/contracts/retrieval-metrics.ts";

export type StopRule =
  | { kind: "q-threshold"; threshold: number }
  | { kind: "margin"; delta: number }
  | { kind: "drop"; ratio: number }
  | { kind: "soft-v"; tau: number }
  | { kind: "q-and-drop"; threshold: number; ratio: number }
  | { kind: "first-k"; k: number }
  | { kind: "prune"; threshold: number; tau: number }
  | { kind: "elbow" }
  | { kind: "keep-all" };

export type StopFamily = Exclude<StopRule["kind"], "keep-all">;

/** The paper's rule as the reference sweep uses it. */
export const PAPER_RULE: StopRule = { kind: "q-threshold", threshold: 0.5 };

/** The paper's threshold, then leave-one-out pruning at the same 0.5 (nothing fitted). */
export const PAPER_PRUNE_RULE: StopRule = { kind: "prune", threshold: 0.5, tau: 0.5 };

/** What a rule reads of a step of an episode record (EpisodeStep has all of it). */
export interface StopStep {
  index: number;
  q: number;
  /** Logged top-k of the available candidates at selection time (the pick among them). */
  topk: readonly { index: number; q: number }[];
  v?: number;
}

/** What scoring reads of an episode record. */
export interface StopEpisode {
  sf_idx: readonly number[];
  steps: readonly StopStep[];
  /** Leave-one-out Q per prefix (EpisodeRecord.loo); only the prune rule reads it. */
  loo?: readonly (readonly number[])[];
}

/** Q of the best other available candidate at a step (the logged top-k holds the pick first); −∞ if none. */
export function runnerUpQ(step: StopStep): number {
  let best = -Infinity;
  for (const c of step.topk) if (c.index !== step.index && c.q > best) best = c.q;
  return best;
}

/** How many of the episode's picks (a prefix) the rule keeps; for prune, the prefix it prunes. */
export function keptCount(steps: readonly StopStep[], rule: StopRule): number {
  switch (rule.kind) {
    case "keep-all":
      return steps.length;
    case "q-threshold":
    case "prune":
      return qThresholdFilter(steps.map((s) => s.q), rule.threshold);
    case "margin":
      for (let i = 0; i < steps.length; i++) if (steps[i].q - runnerUpQ(steps[i]) < rule.delta) return i;
      return steps.length;
    case "drop":
      for (let i = 1; i < steps.length; i++) if (steps[i].q < rule.ratio * steps[i - 1].q) return i;
      return steps.length;
    case "soft-v":
      // a step without a recorded V (records from before V was logged) falls back to its own Q
      for (let i = 0; i < steps.length; i++) if ((steps[i].v ?? steps[i].q) <= rule.tau) return i;
      return steps.length;
    case "elbow": {
      let cut = 0;
      let biggest = -Infinity;
      for (let i = 0; i < steps.length; i++) {
        const drop = steps[i].q - (i + 1 < steps.length ? steps[i + 1].q : 0);
        if (drop > biggest) {
          biggest = drop;
          cut = i + 1;
        }
      }
      return cut;
    }
    case "first-k":
      return Math.min(steps.length, Math.max(0, Math.floor(rule.k)));
    case "q-and-drop":
      return Math.min(keptCount(steps, { kind: "q-threshold", threshold: rule.threshold }), keptCount(steps, { kind: "drop", ratio: rule.ratio }));
  }
}

/** Which picks (positions in the episode, ascending) a rule keeps. */
export function keptPicks(record: StopEpisode, rule: StopRule): number[] {
  const k = keptCount(record.steps, rule);
  if (rule.kind === "prune") return leaveOneOutKeep(k, record.loo, rule.tau);
  return Array.from({ length: k }, (_, j) => j);
}

/** Retrieval scores of the picks a rule keeps, and how many. */
export function applyStop(record: StopEpisode, rule: StopRule): RetrievalScores & { kept: number } {
  const kept = keptPicks(record, rule);
  return { ...retrievalMetrics(kept.map((j) => record.steps[j].index), record.sf_idx), kept: kept.length };
}

/**
 * Parses `kind[:p1[,p2]]`: `q-threshold:0.36`, `margin:0.1`, `drop:0.3`, `soft-v:0.3`,
 * `q-and-drop:0.1,0.25`, `first-k:2`, `prune:0.5,0.5`, `elbow`, `keep-all`. Throws a RangeError with the accepted
 * forms otherwise.
 */
export function parseStopRule(text: string): StopRule {
  const [kind, args = ""] = text.trim().split(":", 2);
  const nums = args === "" ? [] : args.split(",").map((x) => Number(x));
  const bad = () => new RangeError(`stop rule "${text}": expected q-threshold:Q, margin:δ, drop:ρ, soft-v:τ, q-and-drop:Q,ρ, first-k:K, prune:Q,τ, elbow or keep-all`);
  if (nums.some((x) => !Number.isFinite(x))) throw bad();
  const one = nums.length === 1 ? nums[0] : undefined;
  switch (kind) {
    case "q-threshold": if (one !== undefined) return { kind, threshold: one }; break;
    case "margin": if (one !== undefined) return { kind, delta: one }; break;
    case "drop": if (one !== undefined) return { kind, ratio: one }; break;
    case "soft-v": if (one !== undefined) return { kind, tau: one }; break;
    case "first-k": if (one !== undefined && Number.isInteger(one) && one >= 0) return { kind, k: one }; break;
    case "q-and-drop": if (nums.length === 2) return { kind, threshold: nums[0], ratio: nums[1] }; break;
    case "prune": if (nums.length === 2) return { kind, threshold: nums[0], tau: nums[1] }; break;
    case "elbow": case "keep-all": if (nums.length === 0) return { kind }; break;
  }
  throw bad();
}

/** Short label for tables: `q-threshold 0.50`, `margin δ=0.10`, … */
export function ruleLabel(rule: StopRule): string {
  const f = (x: number) => x.toFixed(2);
  switch (rule.kind) {
    case "keep-all": return "keep all";
    case "q-threshold": return `q-threshold ${f(rule.threshold)}`;
    case "margin": return `margin δ=${f(rule.delta)}`;
    case "drop": return `drop ρ=${f(rule.ratio)}`;
    case "soft-v": return `soft-v τ=${f(rule.tau)}`;
    case "q-and-drop": return `q-threshold ${f(rule.threshold)} + drop ρ=${f(rule.ratio)}`;
    case "first-k": return `first ${rule.k}`;
    case "prune": return `q-threshold ${f(rule.threshold)} + prune τ=${f(rule.tau)}`;
    case "elbow": return "elbow";
  }
}

const grid = (from: number, to: number, step: number) => {
  const out: number[] = [];
  for (let i = 0; from + i * step <= to + 1e-9; i++) out.push(Math.round((from + i * step) * 1e6) / 1e6);
  return out;
};

/** The candidate rules of a family that `calibrate` tries (a fixed grid, no data involved). */
export function familyGrid(family: StopFamily): StopRule[] {
  switch (family) {
    case "q-threshold": return grid(0, 1.2, 0.02).map((threshold) => ({ kind: "q-threshold", threshold }));
    case "margin": return grid(0, 1, 0.02).map((delta) => ({ kind: "margin", delta }));
    case "drop": return grid(0, 1, 0.02).map((ratio) => ({ kind: "drop", ratio }));
    case "soft-v": return grid(0, 1.2, 0.02).map((tau) => ({ kind: "soft-v", tau }));
    case "elbow": return [{ kind: "elbow" }];
    case "first-k": return grid(1, 6, 1).map((k) => ({ kind: "first-k", k }));
    case "q-and-drop": {
      const out: StopRule[] = [];
      for (const threshold of grid(0, 1, 0.05)) for (const ratio of grid(0, 1, 0.05)) out.push({ kind: "q-and-drop", threshold, ratio });
      return out;
    }
    case "prune": {
      const out: StopRule[] = [];
      for (const threshold of grid(0, 1, 0.05)) for (const tau of grid(0, 1, 0.05)) out.push({ kind: "prune", threshold, tau });
      return out;
    }
  }
}

export interface RuleScore {
  rule: StopRule;
  samples: number;
  f1: number;
  coverage: number;
  precision: number;
  recall: number;
  avgKept: number;
}

/** Mean scores of a rule over records (NaN over none). */
export function scoreRule(records: readonly StopEpisode[], rule: StopRule): RuleScore {
  let f1 = 0, coverage = 0, precision = 0, recall = 0, kept = 0;
  for (const r of records) {
    const m = applyStop(r, rule);
    f1 += m.f1; coverage += m.coverage; precision += m.precision; recall += m.recall; kept += m.kept;
  }
  const n = records.length;
  return { rule, samples: n, f1: f1 / n, coverage: coverage / n, precision: precision / n, recall: recall / n, avgKept: kept / n };
}

export interface Calibration {
  family: StopFamily;
  rule: StopRule;
  /** The rule's scores on the records it was chosen on (validation). */
  validation: RuleScore;
  /** false when no rule of the grid reached the coverage floor (then: the highest coverage). */
  feasible: boolean;
  minCoverage: number;
}

/**
 * Picks the family's rule with the best mean F1 among those with coverage ≥ minCoverage on the
 * given records (ties: higher coverage, then the earlier grid entry). Pass validation records
 * only: whatever the records are, this is what the rule is fitted to.
 */
export function calibrate(records: readonly StopEpisode[], family: StopFamily, minCoverage = 0.95): Calibration {
  if (records.length === 0) throw new RangeError("calibrate: no validation records");
  let best: RuleScore | undefined;
  let bestAny: RuleScore | undefined;
  for (const rule of familyGrid(family)) {
    const s = scoreRule(records, rule);
    if (s.coverage >= minCoverage && (!best || s.f1 > best.f1 || (s.f1 === best.f1 && s.coverage > best.coverage))) best = s;
    if (!bestAny || s.coverage > bestAny.coverage || (s.coverage === bestAny.coverage && s.f1 > bestAny.f1)) bestAny = s;
  }
  const chosen = best ?? bestAny!;
  return { family, rule: chosen.rule, validation: chosen, feasible: best !== undefined, minCoverage };
}

/**
 * NOT a stopping rule: the best prefix of each episode chosen WITH the ground truth (max F1 over
 * prefixes, the shortest on ties). Reported beside the rules as the ceiling no prefix rule can
 * beat on these trajectories; a wrong pick made before the last gold one caps it below 1.
 */
export function oraclePrefixScore(records: readonly StopEpisode[]): Omit<RuleScore, "rule"> {
  let f1 = 0, coverage = 0, precision = 0, recall = 0, kept = 0;
  for (const r of records) {
    let best = retrievalMetrics([], r.sf_idx);
    let bestK = 0;
    for (let k = 1; k <= r.steps.length; k++) {
      const m = retrievalMetrics(r.steps.slice(0, k).map((s) => s.index), r.sf_idx);
      if (m.f1 > best.f1) {
        best = m;
        bestK = k;
      }
    }
    f1 += best.f1; coverage += best.coverage; precision += best.precision; recall += best.recall; kept += bestK;
  }
  const n = records.length;
  return { samples: n, f1: f1 / n, coverage: coverage / n, precision: precision / n, recall: recall / n, avgKept: kept / n };
}
