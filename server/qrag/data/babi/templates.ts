/**
 * Surface templates of the real bAbI v1.2 data (docs/data.md §1.3 "observed" table — not the Lua
 * stringify.lua strings, which differ). The same lists drive rendering (generator) and the regex
 * grammar (parser), so a template can never be generated that the parser does not read back.
 */
import type { BabiTask } from "./vocab.ts";
import type { BabiFact, BabiQuery, Qa5Form } from "./types.ts";

/** Uniform over the 5 verbs in the real qa1 test file (384/413/383/387/433 of 2000). */
export const MOVE_VERBS = ["moved", "went", "went back", "journeyed", "travelled"] as const;
export const GET_VERBS = ["got", "took", "grabbed", "picked up"] as const;
export const DROP_VERBS = ["dropped", "discarded", "put down", "left"] as const;
export const GIVE_VERBS = ["gave", "handed", "passed"] as const;

/**
 * Share of get/drop sentences ending in " there", per task: qa2 and qa5 put it on every get and
 * on no drop; qa3 on about 30% of both (docs/data.md §1.3).
 */
export const THERE_RATE: Record<BabiTask, { get: number; drop: number }> = {
  qa1: { get: 0, drop: 0 },
  qa2: { get: 1, drop: 0 },
  qa3: { get: 0.3, drop: 0.3 },
  qa4: { get: 0, drop: 0 },
  qa5: { get: 1, drop: 0 },
};

/** qa4 question forms; the real split is 50.6% / 49.4% (BabiLong 1k CSV), so use a fair coin. */
export const QA4_DIR_OF_SHARE = 0.5;

/** qa5 form shares, from 999 real questions of the BabiLong qa5 0k CSV. */
export const QA5_FORM_SHARES: Record<Qa5Form, number> = {
  whatGave: 0.33,
  whoGave: 0.18,
  whoDidGiveTo: 0.17,
  whoGaveTo: 0.17,
  whoReceived: 0.15,
};

/** Renders a statement exactly as the v1.2 files print it. */
export function renderFact(f: BabiFact): string {
  switch (f.kind) {
    case "move":
      return `${f.actor} ${f.verb} to the ${f.loc}.`;
    case "get":
    case "drop":
      return `${f.actor} ${f.verb} the ${f.obj}${f.there ? " there" : ""}.`;
    case "give":
      return `${f.actor} ${f.verb} the ${f.obj} to ${f.to}.`;
    case "rel":
      return `The ${f.a} is ${f.dir} of the ${f.b}.`;
  }
}

/** Renders a question (without the trailing space some files put before the tab). */
export function renderQuery(q: BabiQuery): string {
  switch (q.kind) {
    case "whereActor":
      return `Where is ${q.actor}?`;
    case "whereObject":
      return `Where is the ${q.obj}?`;
    case "whereWas":
      return `Where was the ${q.obj} before the ${q.before}?`;
    case "dirOf":
      return `What is ${q.dir} of the ${q.of}?`;
    case "isDirOf":
      return `What is the ${q.loc} ${q.dir} of?`;
    case "gave":
      switch (q.form) {
        case "whatGave":
          return `What did ${need(q.giver)} give to ${need(q.receiver)}?`;
        case "whoGave":
          return `Who gave the ${need(q.obj)}?`;
        case "whoDidGiveTo":
          return `Who did ${need(q.giver)} give the ${need(q.obj)} to?`;
        case "whoGaveTo":
          return `Who gave the ${need(q.obj)} to ${need(q.receiver)}?`;
        case "whoReceived":
          return `Who received the ${need(q.obj)}?`;
      }
  }
}

function need<T>(v: T | undefined): T {
  if (v === undefined) throw new Error("qa5 question is missing a slot its form needs");
  return v;
}
