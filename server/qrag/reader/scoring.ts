/**
 * The benchmarks' own answer metrics, as the reference scores its reader (docs: qrag-method.md §5
 * "BabiLong answer metrics", "Open-QA answer metrics"), each a pure function of the model's text
 * and the gold answer(s), 0..1.
 */

/**
 * BabiLong (`BabilongExactMatch`, reference `prompts_and_metrics/babilong.py`): the last
 * whitespace token of the prediction stripped of spaces and dots, split on ",", equals the
 * comma-split target as a set, case-sensitively ("Mary is in the Kitchen." ≠ "kitchen").
 */
export function babilongExactMatch(prediction: string, target: string): number {
  const words = stripChars(prediction, " .").split(/\s+/);
  const last = words[words.length - 1] ?? "";
  const got = new Set(last.split(",").map((s) => stripChars(s, " .")));
  const want = new Set(target.split(",").map((s) => s.trim()));
  if (got.size !== want.size) return 0;
  for (const w of want) if (!got.has(w)) return 0;
  return 1;
}

/** RULER `string_match_all`: the share of references found in the prediction, case-insensitive. */
export function stringMatchAll(prediction: string, references: readonly string[]): number {
  if (references.length === 0) return 0;
  const p = prediction.toLowerCase();
  return references.filter((r) => p.includes(r.toLowerCase())).length / references.length;
}

/** SQuAD's `normalize_answer`: lower case, no punctuation, no articles, single spaces. */
export function squadNormalize(s: string): string {
  return s
    .toLowerCase()
    .replace(/[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g, "")
    .replace(/\b(a|an|the)\b/g, " ")
    .split(/\s+/)
    .filter(Boolean)
    .join(" ");
}

export function exactMatch(prediction: string, gold: string): number {
  return squadNormalize(prediction) === squadNormalize(gold) ? 1 : 0;
}

/** SQuAD token F1: the normalised tokens' multiset overlap. */
export function tokenF1(prediction: string, gold: string): number {
  const p = squadNormalize(prediction).split(" ").filter(Boolean);
  const g = squadNormalize(gold).split(" ").filter(Boolean);
  if (p.length === 0 || g.length === 0) return p.length === g.length ? 1 : 0;
  const counts = new Map<string, number>();
  for (const t of g) counts.set(t, (counts.get(t) ?? 0) + 1);
  let same = 0;
  for (const t of p) {
    const c = counts.get(t) ?? 0;
    if (c > 0) { same++; counts.set(t, c - 1); }
  }
  if (same === 0) return 0;
  const precision = same / p.length, recall = same / g.length;
  return (2 * precision * recall) / (precision + recall);
}

/** The open-QA reader's answer: the text after the last "Final answer:" (all of it if none). */
export function finalAnswer(text: string): string {
  const i = text.lastIndexOf("Final answer:");
  return (i < 0 ? text : text.slice(i + "Final answer:".length)).trim();
}

/** Open QA over several gold aliases: the best EM and the best F1 (SQuAD's max over ground truths). */
export function openQaScores(prediction: string, golds: readonly string[]): { em: number; f1: number } {
  const answer = finalAnswer(prediction);
  let em = 0, f1 = 0;
  for (const g of golds) { em = Math.max(em, exactMatch(answer, g)); f1 = Math.max(f1, tokenF1(answer, g)); }
  return { em, f1 };
}

function stripChars(s: string, chars: string): string {
  let a = 0, b = s.length;
  while (a < b && chars.includes(s[a]!)) a++;
  while (b > a && chars.includes(s[b - 1]!)) b--;
  return s.slice(a, b);
}
