/**
 * Sentence grammar: turns one statement or question text into its meaning (BabiFact / BabiQuery).
 * The regexes are built from the template and vocabulary lists, so every rendered template parses
 * and anything outside the closed v1.2 grammar is rejected with the offending sentence quoted.
 */
import { DROP_VERBS, GET_VERBS, GIVE_VERBS, MOVE_VERBS } from "./templates.ts";
import type { BabiFact, BabiQuery } from "./types.ts";
import { ALL_ACTORS, DIRECTIONS, LOCATIONS, OBJECTS, type Actor, type BabiObject, type Direction, type Location } from "./vocab.ts";

/** A statement or question outside the bAbI qa1–qa5 grammar. */
export class BabiSentenceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BabiSentenceError";
  }
}

// Longest alternative first so "went back" is not read as "went" + junk.
const alt = (xs: readonly string[]) => `(${[...xs].sort((a, b) => b.length - a.length).join("|")})`;
const A = alt(ALL_ACTORS);
const L = alt(LOCATIONS);
const O = alt(OBJECTS);
const D = alt(DIRECTIONS);

const FACT_RULES: { re: RegExp; make: (m: string[]) => BabiFact }[] = [
  {
    re: new RegExp(`^${A} ${alt(MOVE_VERBS)} to the ${L}\\.$`),
    make: (m) => ({ kind: "move", actor: m[1] as Actor, verb: m[2], loc: m[3] as Location }),
  },
  {
    re: new RegExp(`^${A} ${alt(GET_VERBS)} the ${O}( there)?\\.$`),
    make: (m) => ({ kind: "get", actor: m[1] as Actor, verb: m[2], obj: m[3] as BabiObject, there: !!m[4] }),
  },
  {
    re: new RegExp(`^${A} ${alt(DROP_VERBS)} the ${O}( there)?\\.$`),
    make: (m) => ({ kind: "drop", actor: m[1] as Actor, verb: m[2], obj: m[3] as BabiObject, there: !!m[4] }),
  },
  {
    re: new RegExp(`^${A} ${alt(GIVE_VERBS)} the ${O} to ${A}\\.$`),
    make: (m) => ({ kind: "give", actor: m[1] as Actor, verb: m[2], obj: m[3] as BabiObject, to: m[4] as Actor }),
  },
  {
    re: new RegExp(`^The ${L} is ${D} of the ${L}\\.$`),
    make: (m) => ({ kind: "rel", a: m[1] as Location, dir: m[2] as Direction, b: m[3] as Location }),
  },
];

const QUERY_RULES: { re: RegExp; make: (m: string[]) => BabiQuery }[] = [
  { re: new RegExp(`^Where is ${A}\\?$`), make: (m) => ({ kind: "whereActor", actor: m[1] as Actor }) },
  { re: new RegExp(`^Where is the ${O}\\?$`), make: (m) => ({ kind: "whereObject", obj: m[1] as BabiObject }) },
  {
    re: new RegExp(`^Where was the ${O} before the ${L}\\?$`),
    make: (m) => ({ kind: "whereWas", obj: m[1] as BabiObject, before: m[2] as Location }),
  },
  { re: new RegExp(`^What is ${D} of the ${L}\\?$`), make: (m) => ({ kind: "dirOf", dir: m[1] as Direction, of: m[2] as Location }) },
  { re: new RegExp(`^What is the ${L} ${D} of\\?$`), make: (m) => ({ kind: "isDirOf", loc: m[1] as Location, dir: m[2] as Direction }) },
  {
    re: new RegExp(`^What did ${A} give to ${A}\\?$`),
    make: (m) => ({ kind: "gave", form: "whatGave", giver: m[1] as Actor, receiver: m[2] as Actor }),
  },
  { re: new RegExp(`^Who gave the ${O}\\?$`), make: (m) => ({ kind: "gave", form: "whoGave", obj: m[1] as BabiObject }) },
  {
    re: new RegExp(`^Who did ${A} give the ${O} to\\?$`),
    make: (m) => ({ kind: "gave", form: "whoDidGiveTo", giver: m[1] as Actor, obj: m[2] as BabiObject }),
  },
  {
    re: new RegExp(`^Who gave the ${O} to ${A}\\?$`),
    make: (m) => ({ kind: "gave", form: "whoGaveTo", obj: m[1] as BabiObject, receiver: m[2] as Actor }),
  },
  { re: new RegExp(`^Who received the ${O}\\?$`), make: (m) => ({ kind: "gave", form: "whoReceived", obj: m[1] as BabiObject }) },
];

/** Parses a statement ("John went back to the kitchen."); throws BabiSentenceError otherwise. */
export function parseFact(text: string): BabiFact {
  const t = text.trim();
  for (const r of FACT_RULES) {
    const m = r.re.exec(t);
    if (m) return r.make(m);
  }
  throw new BabiSentenceError(`cannot parse statement "${t}" (not a bAbI qa1–qa5 move/get/drop/give/direction sentence)`);
}

/** Parses a question ("Where is the milk?", trailing space allowed); throws BabiSentenceError otherwise. */
export function parseQuery(text: string): BabiQuery {
  const t = text.trim();
  for (const r of QUERY_RULES) {
    const m = r.re.exec(t);
    if (m) return r.make(m);
  }
  throw new BabiSentenceError(`cannot parse question "${t}" (not a bAbI qa1–qa5 question form)`);
}
