/**
 * Closed bAbI qa1–qa5 vocabulary (docs/data.md §1.2) and the task names. The sets are closed in the
 * real v1.2 data, so the sentence parser accepts only these words: a typo or a sentence from
 * another task family then fails loudly instead of silently creating a new actor or place.
 */
import { InputError } from "../../errors.ts";

export const BABI_TASKS = ["qa1", "qa2", "qa3", "qa4", "qa5"] as const;
export type BabiTask = (typeof BABI_TASKS)[number];

/** The reference's (bAbI v1.2 / BabiLong / Q-RAG) long task names; the short ones are their aliases. */
export const BABI_TASK_NAMES: Readonly<Record<BabiTask, string>> = {
  qa1: "qa1_single-supporting-fact",
  qa2: "qa2_two-supporting-facts",
  qa3: "qa3_three-supporting-facts",
  qa4: "qa4_two-arg-relations",
  qa5: "qa5_three-arg-relations",
};

/** true for a short task name ("qa2"), exactly as written. */
export const isBabiTask = (name: string): name is BabiTask => (BABI_TASKS as readonly string[]).includes(name);

/** Maps "qa2" or the reference name "qa2_two-supporting-facts" (any case) to a BabiTask. */
export function toBabiTask(name: string): BabiTask {
  const n = name.trim().toLowerCase();
  for (const t of BABI_TASKS) if (n === t || n === BABI_TASK_NAMES[t]) return t;
  const valid = BABI_TASKS.map((t) => `${t} | ${BABI_TASK_NAMES[t]}`).join(", ");
  throw new InputError(`unknown bAbI task "${name}" (expected one of: ${valid})`);
}

export const LOCATIONS = ["bathroom", "bedroom", "garden", "hallway", "kitchen", "office"] as const;
export const OBJECTS = ["apple", "football", "milk"] as const;
/** Actors of qa1–qa3 (and of the world_basic.txt file). */
const BASIC_ACTORS = ["Mary", "John", "Daniel", "Sandra"] as const;
/** qa5 uses a different cast (docs/data.md §1.2). */
const QA5_ACTORS = ["Bill", "Fred", "Jeff", "Mary"] as const;
export const DIRECTIONS = ["north", "south", "east", "west"] as const;

export type Location = (typeof LOCATIONS)[number];
export type BabiObject = (typeof OBJECTS)[number];
export type Direction = (typeof DIRECTIONS)[number];
/** Any actor of any task; the parser accepts the union so one grammar serves all five tasks. */
export type Actor = (typeof BASIC_ACTORS)[number] | (typeof QA5_ACTORS)[number];

export const ALL_ACTORS: readonly Actor[] = [...new Set<Actor>([...BASIC_ACTORS, ...QA5_ACTORS])];

export const OPPOSITE: Record<Direction, Direction> = { north: "south", south: "north", east: "west", west: "east" };

/** Per-task cast; qa4 has no actors and qa1/qa4 no objects. */
export const TASK_ACTORS: Record<BabiTask, readonly Actor[]> = {
  qa1: BASIC_ACTORS,
  qa2: BASIC_ACTORS,
  qa3: BASIC_ACTORS,
  qa4: [],
  qa5: QA5_ACTORS,
};
export const TASK_OBJECTS: Record<BabiTask, readonly BabiObject[]> = {
  qa1: [],
  qa2: OBJECTS,
  qa3: OBJECTS,
  qa4: [],
  qa5: OBJECTS,
};

/**
 * Starting places from the Lua world file (world_basic.txt). They are never stated in the text;
 * the generator uses them only so that "move never repeats the current location" also holds for
 * an actor's first move, as in the real data.
 */
export const WORLD_BASIC_START: Partial<Record<Actor, Location>> = {
  John: "kitchen",
  Mary: "bedroom",
  Sandra: "garden",
  Daniel: "hallway",
};
