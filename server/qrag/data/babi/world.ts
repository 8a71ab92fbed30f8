/**
 * The true world state behind a generated story (docs/data.md §1.4, from actions.lua): where every
 * actor really is (including unstated starting places) and who holds or where lies each object. The
 * generator only emits actions valid in this state, so the text never contradicts itself, and a
 * move never goes to the place the actor is already in.
 */
import type { Rng } from "../../util/rng.ts";
import { DROP_VERBS, GET_VERBS, GIVE_VERBS, MOVE_VERBS, THERE_RATE } from "./templates.ts";
import type { BabiFact } from "./types.ts";
import { LOCATIONS, type Actor, type BabiObject, type BabiTask, type Location } from "./vocab.ts";

export type ActionKind = "move" | "get" | "drop" | "give";

/** Clause.sample_valid makes up to 100 random tries before giving up on an action type. */
const SAMPLE_TRIES = 100;

export class BabiWorld {
  readonly loc = new Map<Actor, Location>();
  readonly holder = new Map<BabiObject, Actor>();
  readonly place = new Map<BabiObject, Location>();

  constructor(
    readonly task: BabiTask,
    readonly actors: readonly Actor[],
    readonly objects: readonly BabiObject[],
    start: Partial<Record<Actor, Location>>,
    rng: Rng,
  ) {
    for (const a of actors) this.loc.set(a, start[a] ?? rng.choice(LOCATIONS));
    // Initial object places are never stated (docs/data.md §1.4); uniform is an inferred choice.
    for (const o of objects) this.place.set(o, rng.choice(LOCATIONS));
  }

  /** Where the object really is now. */
  whereIs(o: BabiObject): Location {
    const h = this.holder.get(o);
    return h !== undefined ? this.actorLoc(h) : (this.place.get(o) as Location);
  }

  actorLoc(a: Actor): Location {
    const l = this.loc.get(a);
    if (l === undefined) throw new Error(`unknown actor ${a}`);
    return l;
  }

  isValid(f: BabiFact): boolean {
    switch (f.kind) {
      case "move":
        return f.loc !== this.actorLoc(f.actor);
      case "get":
        return !this.holder.has(f.obj) && this.place.get(f.obj) === this.actorLoc(f.actor);
      case "drop":
        return this.holder.get(f.obj) === f.actor;
      case "give":
        return this.holder.get(f.obj) === f.actor && f.to !== f.actor && this.actorLoc(f.to) === this.actorLoc(f.actor);
      case "rel":
        return true;
    }
  }

  apply(f: BabiFact): void {
    if (!this.isValid(f)) throw new Error(`invalid action in the current world state: ${JSON.stringify(f)}`);
    switch (f.kind) {
      case "move":
        this.loc.set(f.actor, f.loc);
        break;
      case "get":
        this.holder.set(f.obj, f.actor);
        break;
      case "drop":
        this.holder.delete(f.obj);
        this.place.set(f.obj, this.actorLoc(f.actor));
        break;
      case "give":
        this.holder.set(f.obj, f.to);
        break;
      case "rel":
        break;
    }
  }

  /**
   * A random valid action of `kind` (random actor × arguments, first valid of up to 100 tries, as
   * Clause.sample_valid), with a random surface template; undefined when none was found.
   * `avoid` excludes an object (qa5 keeps the facts between a give and its question off that object).
   */
  sample(kind: ActionKind, rng: Rng, avoid?: BabiObject): BabiFact | undefined {
    const objs = this.objects.filter((o) => o !== avoid);
    for (let t = 0; t < SAMPLE_TRIES; t++) {
      const actor = rng.choice(this.actors);
      let f: BabiFact;
      switch (kind) {
        case "move":
          f = { kind, actor, loc: rng.choice(LOCATIONS), verb: rng.choice(MOVE_VERBS) };
          break;
        case "get":
        case "drop":
          if (objs.length === 0) return undefined;
          f = {
            kind,
            actor,
            obj: rng.choice(objs),
            verb: rng.choice(kind === "get" ? GET_VERBS : DROP_VERBS),
            there: rng.bool(THERE_RATE[this.task][kind]),
          };
          break;
        case "give":
          if (objs.length === 0) return undefined;
          f = { kind, actor, obj: rng.choice(objs), to: rng.choice(this.actors), verb: rng.choice(GIVE_VERBS) };
          break;
      }
      if (this.isValid(f)) return f;
    }
    return undefined;
  }
}
