/**
 * Story generator with the structure of the real v1.2 data (docs/data.md §1.5). Facts come from the
 * true world simulation (BabiWorld); which questions may be asked comes from the reader's knowledge
 * (askableQueries); every answer and support set is computed by resolveQuestion, the same rules
 * the oracle check validates on real files.
 */
import type { Rng } from "../../util/rng.ts";
import { BabiKnowledge } from "./knowledge.ts";
import { askableQueries, resolveQuestion } from "./resolve.ts";
import { QA4_DIR_OF_SHARE, QA5_FORM_SHARES, renderFact, renderQuery } from "./templates.ts";
import type { BabiFact, BabiLine, BabiQuery, BabiStory } from "./types.ts";
import { BabiWorld, type ActionKind } from "./world.ts";
import { LOCATIONS, TASK_ACTORS, TASK_OBJECTS, WORLD_BASIC_START, type BabiObject, type BabiTask, type Direction, type Location } from "./vocab.ts";

/** Questions per story: qa4 stories hold one, the others five (docs/data.md §1.1). */
export function questionsPerStory(task: BabiTask): number {
  return task === "qa4" ? 1 : 5;
}

/** Guard against a generator loop that can never ask its questions (a bug, not a data condition). */
const MAX_FACTS = 5000;

/**
 * Action mix for qa2/qa3. Lua picks the type uniformly, but real stories have 50–60% moves
 * (26 and 58 facts counted). Gets and drops are often impossible and redrawn, so a 0.45 move
 * weight yields about 55% moves (inferred tuning).
 */
const QA23_ACTIONS: [ActionKind, number][] = [
  ["move", 0.45],
  ["get", 0.275],
  ["drop", 0.275],
];
/**
 * qa5 free-running mix (inferred): the real stories are give-heavy, with a few moves, gets and
 * drops. A give needs a holder and a receiver in one place, so it is often impossible and redrawn;
 * these weights give about 20% gives overall.
 */
const QA5_ACTIONS: [ActionKind, number][] = [
  ["move", 0.25],
  ["get", 0.25],
  ["give", 0.45],
  ["drop", 0.05],
];
/** qa5: chance that a give is followed by a question about it (real data skips some gives). */
const QA5_P_ASK_AFTER_GIVE = 0.7;
/** qa5: facts between a give and its question, 0–5, "mostly 0–1" in the real data (inferred weights). */
const QA5_EXTRA_WEIGHTS = [0.5, 0.28, 0.1, 0.06, 0.04, 0.02];
/** qa5: chance to ask about the same give again after 1–3 non-give facts (as lines 6 and 12 of the real story). */
const QA5_P_REASK = 0.3;

/** Incrementally built story: fact lines, question lines, true world and reader knowledge. */
class StoryBuilder {
  readonly lines: BabiLine[] = [];
  readonly facts: string[] = [];
  private readonly factIds: number[] = [];
  readonly knowledge = new BabiKnowledge();
  questions = 0;
  factsSinceQuestion = 0;

  constructor(
    readonly task: BabiTask,
    readonly world: BabiWorld | undefined,
  ) {}

  addFact(f: BabiFact): void {
    if (this.facts.length >= MAX_FACTS) throw new Error(`${this.task} generator made ${MAX_FACTS} facts without finishing a story`);
    this.world?.apply(f);
    this.knowledge.add(f);
    const text = renderFact(f);
    const id = this.lines.length + 1;
    this.lines.push({ id, text, kind: "fact" });
    this.facts.push(text);
    this.factIds.push(id);
    this.factsSinceQuestion++;
  }

  ask(q: BabiQuery): void {
    const question = renderQuery(q);
    const r = resolveQuestion(this.task, this.facts, question);
    this.checkTruth(q, r.answer);
    const id = this.lines.length + 1;
    this.lines.push({ id, text: question, kind: "question", answer: r.answer, support: r.support.map((i) => this.factIds[i]) });
    this.questions++;
    this.factsSinceQuestion = 0;
  }

  /** The reader's answer must be the world's truth; a mismatch is a bug in the rules or the world. */
  private checkTruth(q: BabiQuery, answer: string): void {
    const w = this.world;
    if (!w) return;
    const truth = q.kind === "whereActor" ? w.actorLoc(q.actor) : q.kind === "whereObject" ? w.whereIs(q.obj) : undefined;
    if (truth !== undefined && truth !== answer) {
      throw new Error(`${this.task} generator: "${renderQuery(q)}" resolved to ${answer} but the world says ${truth}`);
    }
  }

  /** Adds one random valid action, drawing the action type by weight until one is possible. */
  addRandomAction(rng: Rng, mix: [ActionKind, number][], avoid?: BabiObject): BabiFact {
    const w = this.world as BabiWorld;
    for (;;) {
      const kind = mix[rng.weighted(mix.map((m) => m[1]))][0];
      const f = w.sample(kind, rng, avoid);
      if (f) {
        this.addFact(f);
        return f;
      }
    }
  }

  story(): BabiStory {
    return { lines: this.lines };
  }
}

/** One story of `task`, deterministic given the rng state. */
export function generateStory(task: BabiTask, rng: Rng): BabiStory {
  switch (task) {
    case "qa1":
      return genQa1(rng);
    case "qa2":
    case "qa3":
      return genQa23(task, rng);
    case "qa4":
      return genQa4(rng);
    case "qa5":
      return genQa5(rng);
  }
}

/** qa1–qa3 start from world_basic.txt; qa5's cast is not in that file, so it starts at random places (inferred). */
function newWorld(task: BabiTask, rng: Rng): BabiWorld {
  return new BabiWorld(task, TASK_ACTORS[task], TASK_OBJECTS[task], task === "qa5" ? {} : WORLD_BASIC_START, rng);
}

/**
 * qa1: 5 × (2 moves + "Where is A?"). A is the actor of a fact drawn uniformly from the last 5
 * facts, which reproduces the real question-to-support distance profile (docs/data.md §1.5).
 */
function genQa1(rng: Rng): BabiStory {
  const b = new StoryBuilder("qa1", newWorld("qa1", rng));
  for (let q = 0; q < 5; q++) {
    b.addRandomAction(rng, [["move", 1]]);
    b.addRandomAction(rng, [["move", 1]]);
    const recent = b.knowledge.factActors.slice(-5);
    const actor = rng.choice(recent);
    if (actor === undefined) throw new Error("qa1: fact without an actor");
    b.ask({ kind: "whereActor", actor });
  }
  return b.story();
}

/**
 * qa2/qa3: random moves/gets/drops; after at least 2 facts since the last question a fair coin
 * decides whether to ask, and the question is drawn uniformly from the askable ones (qa3: all
 * askable transitions, not only the newest, as in the real data).
 */
function genQa23(task: "qa2" | "qa3", rng: Rng): BabiStory {
  const b = new StoryBuilder(task, newWorld(task, rng));
  while (b.questions < 5) {
    b.addRandomAction(rng, QA23_ACTIONS);
    if (b.factsSinceQuestion >= 2 && rng.bool(0.5)) {
      const qs = askableQueries(task, b.knowledge);
      if (qs.length > 0) b.ask(rng.choice(qs));
    }
  }
  return b.story();
}

/**
 * qa4: three places on one axis (X1–X2–X3), one fact per adjacent pair, each phrased from either
 * end, shuffled; one question about the middle place and an end (never the two ends).
 */
function genQa4(rng: Rng): BabiStory {
  const b = new StoryBuilder("qa4", undefined);
  // [towards the first place, towards the last place] along the axis
  const axis: [Direction, Direction] = rng.bool() ? ["north", "south"] : ["west", "east"];
  const xs = rng.sampleWithoutReplacement(LOCATIONS.length, 3).map((i) => LOCATIONS[i]);
  const rel = (p: Location, q: Location): Direction => (xs.indexOf(p) < xs.indexOf(q) ? axis[0] : axis[1]);
  const phrase = (p: Location, q: Location): BabiFact => (rng.bool() ? { kind: "rel", a: p, dir: rel(p, q), b: q } : { kind: "rel", a: q, dir: rel(q, p), b: p });
  const facts = rng.shuffle([phrase(xs[0], xs[1]), phrase(xs[1], xs[2])]);
  for (const f of facts) b.addFact(f);
  const end = rng.bool() ? xs[0] : xs[2];
  const [y, z] = rng.bool() ? [xs[1], end] : [end, xs[1]]; // y is named in the question, z is the answer
  b.ask(rng.bool(QA4_DIR_OF_SHARE) ? { kind: "dirOf", dir: rel(z, y), of: y } : { kind: "isDirOf", loc: y, dir: rel(y, z) });
  return b.story();
}

/**
 * qa5: moves, gets, gives and drops. After a give, usually ask about it following 0–5 non-give
 * facts that leave its object alone; sometimes ask about it again after 1–3 more. Every question
 * targets the most recent give, in one of the 5 forms at the real shares.
 */
function genQa5(rng: Rng): BabiStory {
  const b = new StoryBuilder("qa5", newWorld("qa5", rng));
  const noGive = QA5_ACTIONS.filter(([k]) => k !== "give");
  let pending: number | undefined; // facts still to add before asking about the last give
  while (b.questions < 5) {
    const last = b.knowledge.gives[b.knowledge.gives.length - 1];
    const f = pending === undefined ? b.addRandomAction(rng, QA5_ACTIONS) : b.addRandomAction(rng, noGive, last?.obj);
    if (f.kind === "give") pending = rng.bool(QA5_P_ASK_AFTER_GIVE) ? rng.weighted(QA5_EXTRA_WEIGHTS) : undefined;
    else if (pending !== undefined) pending--;
    if (pending === 0) {
      const qs = askableQueries("qa5", b.knowledge);
      b.ask(qs[rng.weighted(qs.map((q) => (q.kind === "gave" ? QA5_FORM_SHARES[q.form] : 0)))]);
      pending = rng.bool(QA5_P_REASK) ? rng.range(1, 3) : undefined;
    }
  }
  return b.story();
}
