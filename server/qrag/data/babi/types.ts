/**
 * Types of the bAbI data layer: file lines and stories (as parsed from / written to the v1.2 text
 * format), the parsed meaning of one statement (BabiFact) and of one question (BabiQuery), and the
 * per-question sample view (BabiQA) that BabiLong and Q-RAG build from a story.
 */
import type { Actor, BabiObject, Direction, Location } from "./vocab.ts";

/** One line of a bAbI file. `id` restarts at 1 per story; `support` holds story ids, in file order. */
export type BabiLine = { id: number; text: string; /** 1-based line in the source file, when parsed. */ line?: number } & (
  | { kind: "fact" }
  | { kind: "question"; answer: string; support: number[] }
);

export interface BabiStory {
  lines: BabiLine[];
}

/** One question as a sample: `facts` = every statement before it (earlier questions dropped). */
export interface BabiQA {
  facts: string[];
  question: string;
  answer: string;
  /** 0-based indices into `facts`, sorted ascending. */
  supportIdx: number[];
}

/** Meaning of one statement sentence; `verb`/`there` record which surface template was used. */
export type BabiFact =
  | { kind: "move"; actor: Actor; loc: Location; verb: string }
  | { kind: "get"; actor: Actor; obj: BabiObject; verb: string; there: boolean }
  | { kind: "drop"; actor: Actor; obj: BabiObject; verb: string; there: boolean }
  | { kind: "give"; actor: Actor; obj: BabiObject; to: Actor; verb: string }
  /** qa4: "The {a} is {dir} of the {b}." */
  | { kind: "rel"; a: Location; dir: Direction; b: Location };

export type BabiFactKind = BabiFact["kind"];

/** The five qa5 question forms (docs/data.md §1.3). */
export type Qa5Form = "whatGave" | "whoGave" | "whoDidGiveTo" | "whoGaveTo" | "whoReceived";

/** Meaning of one question sentence. */
export type BabiQuery =
  | { kind: "whereActor"; actor: Actor } // qa1: Where is A?
  | { kind: "whereObject"; obj: BabiObject } // qa2: Where is the O?
  | { kind: "whereWas"; obj: BabiObject; before: Location } // qa3: Where was the O before the L?
  | { kind: "dirOf"; dir: Direction; of: Location } // qa4: What is D of the L?
  | { kind: "isDirOf"; loc: Location; dir: Direction } // qa4: What is the L D of?
  | { kind: "gave"; form: Qa5Form; giver?: Actor; obj?: BabiObject; receiver?: Actor }; // qa5

export type BabiQueryKind = BabiQuery["kind"];

/** What a question resolves to. `support` = 0-based fact indices in the order the v1.2 files print them. */
export interface BabiResolution {
  answer: string;
  support: number[];
}
