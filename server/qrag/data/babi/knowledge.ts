/**
 * What a reader knows after reading a story's statements in order (docs/data.md §1.4 "Knowledge"):
 * only move sentences reveal where an actor is; gets/drops/gives reveal who holds what; initial
 * positions are never known. On top of that it keeps the per-object bookkeeping the qa2/qa3/qa5
 * rules need (last mention, carried-location history, gives, direction facts). Fact indices are
 * 0-based positions in the story's statement list.
 */
import type { BabiFact } from "./types.ts";
import type { Actor, BabiObject, Direction, Location } from "./vocab.ts";

interface KnownMove {
  idx: number;
  loc: Location;
}

/** One entry of an object's carried-location history. */
interface CarryEntry {
  loc: Location;
  /** The move fact that shows the holder at `loc`. */
  idx: number;
  /**
   * true: the holder moved there while carrying the object (the object *arrived* at loc);
   * false: the place where the object was picked up, known from the holder's earlier move.
   */
  arrival: boolean;
}

/** A stretch during which one actor held the object without interruption. */
interface CarryRun {
  holder: Actor;
  entries: CarryEntry[];
}

interface ObjectMention {
  idx: number;
  fact: Extract<BabiFact, { kind: "get" | "drop" | "give" }>;
  /** The actor's last move before this fact (for a drop: where the object was left). */
  actorMoveBefore?: KnownMove;
}

interface GiveRecord {
  idx: number;
  giver: Actor;
  obj: BabiObject;
  receiver: Actor;
}

interface RelRecord {
  idx: number;
  a: Location;
  dir: Direction;
  b: Location;
}

/** A statement that contradicts what the story already said (e.g. dropping an object not held). */
class BabiConsistencyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BabiConsistencyError";
  }
}

export class BabiKnowledge {
  /** Number of facts read so far; the next fact gets this index. */
  count = 0;
  readonly lastMove = new Map<Actor, KnownMove>();
  /** Every move of each actor, in order (partial reading infers carrying from them). */
  private readonly moves = new Map<Actor, KnownMove[]>();
  readonly holder = new Map<BabiObject, Actor>();
  readonly lastMention = new Map<BabiObject, ObjectMention>();
  readonly runs = new Map<BabiObject, CarryRun[]>();
  /** The currently open run of each held object. */
  private readonly openRun = new Map<BabiObject, CarryRun>();
  readonly gives: GiveRecord[] = [];
  readonly rels: RelRecord[] = [];
  /** Actor of each fact, by index (undefined for qa4 direction facts); qa1 picks question actors from it. */
  readonly factActors: (Actor | undefined)[] = [];

  /**
   * `partial`: the facts are a subset of a story (a retriever's picks), so a drop or give of an
   * object not known to be held, or a get of one held by someone else, is taken as stated (the
   * facts in between were not retrieved) instead of being a contradiction.
   */
  constructor(readonly partial = false) {}

  /** Reads the next fact. Throws BabiConsistencyError when the text contradicts itself. */
  add(f: BabiFact): void {
    const idx = this.count;
    const where = () => `fact ${idx + 1}`;
    switch (f.kind) {
      case "move": {
        this.lastMove.set(f.actor, { idx, loc: f.loc });
        this.moves.set(f.actor, [...(this.moves.get(f.actor) ?? []), { idx, loc: f.loc }]);
        // Every object this actor carries arrives at the new place with them.
        for (const [obj, h] of this.holder) {
          if (h === f.actor) this.openRun.get(obj)?.entries.push({ loc: f.loc, idx, arrival: true });
        }
        this.factActors.push(f.actor);
        break;
      }
      case "get": {
        const h = this.holder.get(f.obj);
        if (h !== undefined && !this.partial) throw new BabiConsistencyError(`${where()}: ${f.actor} gets the ${f.obj}, but ${h} holds it`);
        this.startRun(f.obj, f.actor);
        this.lastMention.set(f.obj, { idx, fact: f, actorMoveBefore: this.lastMove.get(f.actor) });
        this.factActors.push(f.actor);
        break;
      }
      case "drop": {
        const h = this.holder.get(f.obj);
        if (h !== f.actor && !this.partial) {
          throw new BabiConsistencyError(`${where()}: ${f.actor} drops the ${f.obj}, but ${h ?? "nobody"} holds it`);
        }
        if (h !== f.actor) this.inferCarry(f.obj, f.actor);
        this.holder.delete(f.obj);
        this.openRun.delete(f.obj);
        this.lastMention.set(f.obj, { idx, fact: f, actorMoveBefore: this.lastMove.get(f.actor) });
        this.factActors.push(f.actor);
        break;
      }
      case "give": {
        const h = this.holder.get(f.obj);
        if (h !== f.actor && !this.partial) {
          throw new BabiConsistencyError(`${where()}: ${f.actor} gives the ${f.obj}, but ${h ?? "nobody"} holds it`);
        }
        if (h !== f.actor) this.inferCarry(f.obj, f.actor);
        if (f.to === f.actor) throw new BabiConsistencyError(`${where()}: ${f.actor} gives the ${f.obj} to themself`);
        this.startRun(f.obj, f.to);
        this.lastMention.set(f.obj, { idx, fact: f, actorMoveBefore: this.lastMove.get(f.actor) });
        this.gives.push({ idx, giver: f.actor, obj: f.obj, receiver: f.to });
        this.factActors.push(f.actor);
        break;
      }
      case "rel":
        this.rels.push({ idx, a: f.a, dir: f.dir, b: f.b });
        this.factActors.push(undefined);
        break;
    }
    this.count++;
  }

  /**
   * Partial reading: `actor` drops or gives `obj` without a known pickup, so they carried it through
   * their moves since the object was last mentioned; those moves become one carrying run.
   */
  private inferCarry(obj: BabiObject, actor: Actor): void {
    const since = this.lastMention.get(obj)?.idx ?? -1;
    const entries = (this.moves.get(actor) ?? []).filter((m) => m.idx > since).map((m) => ({ loc: m.loc, idx: m.idx, arrival: true }));
    if (entries.length === 0) return;
    this.runs.set(obj, [...(this.runs.get(obj) ?? []), { holder: actor, entries }]);
  }

  /** A new holder starts a run; the pickup place counts when the holder's position is known. */
  private startRun(obj: BabiObject, holder: Actor): void {
    this.holder.set(obj, holder);
    const run: CarryRun = { holder, entries: [] };
    const m = this.lastMove.get(holder);
    if (m) run.entries.push({ loc: m.loc, idx: m.idx, arrival: false });
    this.openRun.set(obj, run);
    const list = this.runs.get(obj) ?? [];
    list.push(run);
    this.runs.set(obj, list);
  }

  /** The latest arrival of `obj` at `loc` (carried there by a move), with its run and position. */
  latestArrival(obj: BabiObject, loc: Location): { run: CarryRun; pos: number } | undefined {
    let best: { run: CarryRun; pos: number } | undefined;
    for (const run of this.runs.get(obj) ?? []) {
      run.entries.forEach((e, pos) => {
        if (e.arrival && e.loc === loc && (!best || e.idx > best.run.entries[best.pos].idx)) best = { run, pos };
      });
    }
    return best;
  }
}
