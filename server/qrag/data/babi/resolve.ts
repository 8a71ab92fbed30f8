/**
 * Resolution rules: derive a question's answer and supporting facts from the statements before it
 * (docs/data.md §1.5). The generator asks only questions these rules can answer and takes the
 * answer from here, and the oracle check re-derives every real v1.2 question with the same code, so
 * one set of rules is validated against real data and used to produce new data.
 */
import { BabiKnowledge } from "./knowledge.ts";
import { BabiSentenceError, parseFact, parseQuery } from "./sentences.ts";
import { renderQuery } from "./templates.ts";
import type { BabiFactKind, BabiQuery, BabiQueryKind, BabiResolution, Qa5Form } from "./types.ts";
import { ALL_ACTORS, DIRECTIONS, LOCATIONS, OBJECTS, OPPOSITE, type BabiTask, type Location } from "./vocab.ts";

/** A well-formed question that the statements before it do not answer under the task's rules. */
export class BabiResolveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BabiResolveError";
  }
}

/** Statement kinds each task's real data contains; anything else means a wrong task or a bad file. */
export const TASK_FACT_KINDS: Record<BabiTask, readonly BabiFactKind[]> = {
  qa1: ["move"],
  qa2: ["move", "get", "drop"],
  qa3: ["move", "get", "drop"],
  qa4: ["rel"],
  qa5: ["move", "get", "drop", "give"],
};

const TASK_QUERY_KINDS: Record<BabiTask, readonly BabiQueryKind[]> = {
  qa1: ["whereActor"],
  qa2: ["whereObject"],
  qa3: ["whereWas"],
  qa4: ["dirOf", "isDirOf"],
  qa5: ["gave"],
};

/** Parses the statements of a story (in order) into the reader's knowledge; `partial`: see BabiKnowledge. */
export function readFacts(task: BabiTask, facts: readonly string[], partial = false): BabiKnowledge {
  const k = new BabiKnowledge(partial);
  facts.forEach((text, i) => {
    try {
      const f = parseFact(text);
      if (!TASK_FACT_KINDS[task].includes(f.kind)) {
        throw new BabiSentenceError(`a ${f.kind} statement does not belong to ${task}`);
      }
      k.add(f);
    } catch (e) {
      throw new BabiSentenceError(`${task} fact ${i + 1} "${text}": ${(e as Error).message}`);
    }
  });
  return k;
}

/** Parses a question and checks that its form belongs to `task`. */
export function readQuery(task: BabiTask, question: string): BabiQuery {
  const q = parseQuery(question);
  if (!TASK_QUERY_KINDS[task].includes(q.kind)) {
    throw new BabiSentenceError(`question "${question.trim()}" is not a ${task} question form`);
  }
  return q;
}

/**
 * Answer and support of `question` given the story's statements so far (`facts`, in order).
 * `support` holds 0-based indices into `facts` in the order the v1.2 files print them
 * (qa2: object fact, location fact; qa3: object fact, later move, earlier move).
 * Throws BabiSentenceError on a sentence outside the grammar, BabiResolveError when unanswerable.
 */
export function resolveQuestion(task: BabiTask, facts: readonly string[], question: string, opts: { partial?: boolean } = {}): BabiResolution {
  return resolveQuery(task, readFacts(task, facts, opts.partial), readQuery(task, question));
}

/** Same as resolveQuestion on already-read knowledge. */
function resolveQuery(task: BabiTask, k: BabiKnowledge, q: BabiQuery): BabiResolution {
  const r = resolveOrWhy(task, k, q);
  if (typeof r === "string") throw new BabiResolveError(`${task} "${renderQuery(q)}": ${r}`);
  return r;
}

/**
 * The resolution, or why the question is unanswerable. A string rather than a throw: the
 * generators try every candidate question of a story (askableQueries), and building an Error with
 * its stack for each unanswerable one took a tenth of qa3's training time.
 */
function resolveOrWhy(task: BabiTask, k: BabiKnowledge, q: BabiQuery): BabiResolution | string {
  if (!TASK_QUERY_KINDS[task].includes(q.kind)) throw new BabiSentenceError(`a ${q.kind} question does not belong to ${task}`);
  switch (q.kind) {
    case "whereActor": {
      // qa1: the actor's last move.
      const m = k.lastMove.get(q.actor);
      if (!m) return `no statement says where ${q.actor} is`;
      return { answer: m.loc, support: [m.idx] };
    }
    case "whereObject": {
      // qa2: f_obj = last get/drop of O; the holder's last move (get) or last move before the drop.
      const men = k.lastMention.get(q.obj);
      if (!men) return `the ${q.obj} is never mentioned`;
      const a = men.fact.actor;
      if (men.fact.kind === "drop") {
        const m = men.actorMoveBefore;
        if (!m) return `${a} dropped the ${q.obj} (fact ${men.idx + 1}) at an unknown place`;
        return { answer: m.loc, support: [men.idx, m.idx] };
      }
      if (men.fact.kind === "get") {
        const m = k.lastMove.get(a);
        if (!m) return `${a} holds the ${q.obj} (fact ${men.idx + 1}) but ${a}'s location is unknown`;
        return { answer: m.loc, support: [men.idx, m.idx] };
      }
      return `a give statement cannot locate an object in qa2`;
    }
    case "whereWas": {
      // qa3: the latest arrival of O at L, preceded by an entry of the same carrying run, whose
      // holder also made the last statement about O.
      const men = k.lastMention.get(q.obj);
      if (!men) return `the ${q.obj} is never mentioned`;
      const arr = k.latestArrival(q.obj, q.before);
      if (!arr) return `no stated move carried the ${q.obj} into the ${q.before}`;
      const after = arr.run.entries[arr.pos];
      if (arr.pos === 0) return `nothing is known about where the ${q.obj} was before fact ${after.idx + 1}`;
      if (arr.run.holder !== men.fact.actor) {
        return `the ${q.obj} last reached the ${q.before} with ${arr.run.holder}, but its last mention (fact ${men.idx + 1}) is by ${men.fact.actor}`;
      }
      const before = arr.run.entries[arr.pos - 1];
      return { answer: before.loc, support: [men.idx, after.idx, before.idx] };
    }
    case "dirOf":
    case "isDirOf": {
      // qa4: the single direction fact linking the named place to the answer.
      const hits: { answer: Location; idx: number }[] = [];
      for (const r of k.rels) {
        if (q.kind === "dirOf") {
          // Z is D of Y: "Z is D of Y" or "Y is opp(D) of Z".
          if (r.b === q.of && r.dir === q.dir) hits.push({ answer: r.a, idx: r.idx });
          else if (r.a === q.of && r.dir === OPPOSITE[q.dir]) hits.push({ answer: r.b, idx: r.idx });
        } else {
          // Y is D of Z: "Y is D of Z" or "Z is opp(D) of Y".
          if (r.a === q.loc && r.dir === q.dir) hits.push({ answer: r.b, idx: r.idx });
          else if (r.b === q.loc && r.dir === OPPOSITE[q.dir]) hits.push({ answer: r.a, idx: r.idx });
        }
      }
      if (hits.length === 0) return `no single statement relates the place asked about in that direction`;
      if (new Set(hits.map((h) => h.answer)).size > 1) return `ambiguous: facts ${hits.map((h) => h.idx + 1).join(", ")} disagree`;
      const h = hits[hits.length - 1];
      return { answer: h.answer, support: [h.idx] };
    }
    case "gave": {
      // qa5: the most recent give matching the named giver/object/receiver.
      for (let i = k.gives.length - 1; i >= 0; i--) {
        const g = k.gives[i];
        if (q.giver !== undefined && g.giver !== q.giver) continue;
        if (q.obj !== undefined && g.obj !== q.obj) continue;
        if (q.receiver !== undefined && g.receiver !== q.receiver) continue;
        const answer = q.form === "whatGave" ? g.obj : q.form === "whoGave" || q.form === "whoGaveTo" ? g.giver : g.receiver;
        return { answer, support: [g.idx] };
      }
      return `no give statement matches`;
    }
  }
}

/**
 * Every question of `task` that the rules can answer from `k` (qa5: only the five forms about the
 * most recent give, which is what the real data asks). Built by trying candidates through
 * the resolver, so "askable" and "resolvable" cannot drift apart.
 */
export function askableQueries(task: BabiTask, k: BabiKnowledge): BabiQuery[] {
  const cands: BabiQuery[] = [];
  switch (task) {
    case "qa1":
      for (const actor of ALL_ACTORS) cands.push({ kind: "whereActor", actor });
      break;
    case "qa2":
      for (const obj of OBJECTS) cands.push({ kind: "whereObject", obj });
      break;
    case "qa3":
      for (const obj of OBJECTS) for (const before of LOCATIONS) cands.push({ kind: "whereWas", obj, before });
      break;
    case "qa4":
      for (const l of LOCATIONS) {
        for (const dir of DIRECTIONS) cands.push({ kind: "dirOf", dir, of: l }, { kind: "isDirOf", loc: l, dir });
      }
      break;
    case "qa5": {
      const g = k.gives[k.gives.length - 1];
      if (!g) return [];
      const forms: Record<Qa5Form, BabiQuery> = {
        whatGave: { kind: "gave", form: "whatGave", giver: g.giver, receiver: g.receiver },
        whoGave: { kind: "gave", form: "whoGave", obj: g.obj },
        whoDidGiveTo: { kind: "gave", form: "whoDidGiveTo", giver: g.giver, obj: g.obj },
        whoGaveTo: { kind: "gave", form: "whoGaveTo", obj: g.obj, receiver: g.receiver },
        whoReceived: { kind: "gave", form: "whoReceived", obj: g.obj },
      };
      cands.push(...Object.values(forms));
      break;
    }
  }
  return cands.filter((q) => typeof resolveOrWhy(task, k, q) !== "string");
}
