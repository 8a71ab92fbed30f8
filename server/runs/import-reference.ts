/**
 * The reference implementation's outputs (docs/method.md §4.3, §3.6; griver/Q-RAG `pqn-qa`):
 *
 * - `eval_seed{seed}_ns{num_sentences}.jsonl` (or `eval_seed{seed}.jsonl`): one greedy eval episode
 *   per line with `id, question, answer, sf_idx, pred_idx, q_values, sf_texts, pred_texts, return,
 *   text_len, f1, em`. Each becomes an EpisodeRecord: the reference fields are kept; `metrics` and
 *   `filtered` (Q > 0.5, as our evaluation) are recomputed from sf_idx/pred_idx/q_values with the
 *   contract's definitions (the line's own f1/em are not trusted); `num_chunks` is the file name's
 *   `ns` (0 when absent); steps are rebuilt from pred_idx/pred_texts/q_values with what the
 *   reference does not log defaulted: position 0, Q1 = Q2 = Q, reward 0, no top-k candidates;
 *   `oracle_stop` is inferred: true when the last pick completed the gold set (the reference's test
 *   envs stop at completion unless `never_terminate`).
 * - TensorBoard scalars (`tb_logs/events.out.tfevents.*`): `qf_loss`, `train r_sum`, `eval r_sum`
 *   map to our metric keys (their `referenceTag`s in lib/contracts/metrics.ts); our own keys pass through (our export writes them as tags).
 */
import { z } from "zod";
import { METRIC_KEYS, REFERENCE_TAGS, qThresholdFilter, retrievalMetrics, type EpisodeRecord, type MetricKey } from "../../lib/contracts/index.ts";
import { ImportFileError, numberedLines, parseJsonLine, zodFileError } from "./import-errors.ts";

const metricKeys = new Set<string>(METRIC_KEYS);

/**
 * Our key for a TensorBoard tag (the reference's tags of the metric registry, lib/contracts/metrics.ts,
 * docs/operations.md "Importing runs"; our own keys as themselves), or null when we do not chart it.
 */
export function metricKeyOfTag(tag: string): MetricKey | null {
  if (Object.hasOwn(REFERENCE_TAGS, tag)) return REFERENCE_TAGS[tag]!;
  return metricKeys.has(tag) ? (tag as MetricKey) : null;
}

/** The Q threshold our evaluation reports `filtered` scores at (server/qrag evaluate default). */
export const REFERENCE_THRESHOLD = 0.5;

const MAX_ITEMS = 10_000;
const MAX_TEXT = 1_000_000;

const arrayOf = <T>(ok: (x: unknown) => boolean, what: string) =>
  z.custom<T[]>((v) => Array.isArray(v) && v.every(ok), { error: (iss) => (iss.input === undefined ? "missing" : `expected array of ${what}`) }).refine((v) => v.length <= MAX_ITEMS, `expected at most ${MAX_ITEMS} items`);
const isInt = (x: unknown) => Number.isSafeInteger(x);
const isNum = (x: unknown) => typeof x === "number" && Number.isFinite(x);
const isText = (x: unknown) => typeof x === "string" && x.length <= MAX_TEXT;

const referenceLine = z.object({
  id: z.union([z.string().max(200), z.number().int()], { error: "expected a string or an integer" }),
  question: z.string().max(MAX_TEXT),
  answer: z.string().max(MAX_TEXT),
  sf_idx: arrayOf<number>(isInt, "integers"),
  pred_idx: arrayOf<number>(isInt, "integers"),
  q_values: arrayOf<number>(isNum, "numbers"),
  sf_texts: arrayOf<string>(isText, "strings"),
  pred_texts: arrayOf<string>(isText, "strings"),
  return: z.number().refine(Number.isFinite, "expected a finite number"),
  text_len: z.number().nonnegative().optional(),
});

/** seed and num_sentences from "eval_seed{seed}_ns{N}.jsonl". */
export function evalSeedName(base: string): { seed: number; numChunks: number } {
  const m = /^eval_seed(\d+)(?:_ns(\d+))?\.jsonl$/.exec(base);
  return { seed: Number(m?.[1] ?? 0), numChunks: Number(m?.[2] ?? 0) };
}

export interface ParsedEpisode {
  file: string;
  line: number;
  phase: "train" | "eval";
  step: number;
  update: number;
  numChunks: number;
  sampleId: string;
  record: EpisodeRecord;
}

/** Reads one eval_seed file; throws ImportFileError at the first bad line. */
export function parseEvalSeed(file: string, base: string, text: string): ParsedEpisode[] {
  const { numChunks } = evalSeedName(base);
  const out: ParsedEpisode[] = [];
  for (const [line, raw] of numberedLines(text)) {
    const r = referenceLine.safeParse(parseJsonLine(file, line, raw));
    if (!r.success) throw zodFileError(file, line, r.error);
    const l = r.data;
    const same = (field: string, a: unknown[], b: unknown[], of: string) => {
      if (a.length !== b.length) throw new ImportFileError(file, { line }, field, `expected as many items as ${of}`);
    };
    same("q_values", l.q_values, l.pred_idx, "pred_idx");
    same("pred_texts", l.pred_texts, l.pred_idx, "pred_idx");
    same("sf_texts", l.sf_texts, l.sf_idx, "sf_idx");
    const gold = new Set(l.sf_idx);
    const kept = qThresholdFilter(l.q_values, REFERENCE_THRESHOLD);
    const metrics = retrievalMetrics(l.pred_idx, l.sf_idx);
    const before = retrievalMetrics(l.pred_idx.slice(0, -1), l.sf_idx);
    const record: EpisodeRecord = {
      id: String(l.id),
      question: l.question,
      answer: l.answer,
      sf_idx: l.sf_idx,
      pred_idx: l.pred_idx,
      q_values: l.q_values,
      sf_texts: l.sf_texts,
      pred_texts: l.pred_texts,
      return: l.return,
      num_chunks: numChunks,
      ...(l.text_len !== undefined ? { text_len: l.text_len } : {}),
      oracle_stop: l.pred_idx.length > 0 && metrics.coverage === 1 && before.coverage === 0,
      metrics,
      filtered: { ...retrievalMetrics(l.pred_idx.slice(0, kept), l.sf_idx), threshold: REFERENCE_THRESHOLD, kept },
      steps: l.pred_idx.map((index, i) => ({
        index, text: l.pred_texts[i], position: 0, q: l.q_values[i], q1: l.q_values[i], q2: l.q_values[i], gold: gold.has(index), reward: 0, topk: [],
      })),
    };
    out.push({ file, line, phase: "eval", step: 0, update: 0, numChunks, sampleId: record.id, record });
  }
  return out;
}
