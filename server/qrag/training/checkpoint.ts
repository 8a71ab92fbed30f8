/**
 * Checkpoints: a folder holding `checkpoint.json` (config, counters, schedule state, α, RNG
 * state, and a manifest) and the weights — every Float32Array of the state (four encoders and
 * the AdamW moments) — in shard files `weights-NNNNN.bin` (see checkpoint-shards.ts). Written to
 * a temporary folder and renamed, so a crash never leaves a half-written checkpoint under the
 * final name. Version 1 checkpoints (one `weights.bin`) still load.
 */
import fs from "node:fs";
import path from "node:path";
import { InputError } from "../errors.ts";
import { DEFAULT_SHARD_BYTES, checkShards, parseShards, readShards, writeShards, type ShardEntry, type ShardTarget } from "./checkpoint-shards.ts";

/** 2: sharded weights with a shard list in the manifest; 1: one `weights.bin`. */
const CHECKPOINT_VERSION = 2;
const V1_WEIGHTS = "weights.bin";

type Packed = unknown;

interface CheckpointDoc {
  version: number;
  floats: number;
  shardBytes?: number;
  shards?: ShardEntry[];
  state: Packed;
}

export interface SaveOptions {
  /** Bound on one shard file (default 512 MiB); a positive multiple of 4, so no float is cut. */
  shardBytes?: number;
}

/** Replaces every Float32Array in a JSON-like tree by a reference (float offset, length) into the weight stream. */
function pack(value: unknown, parts: Float32Array[], offset: { n: number }): Packed {
  if (value instanceof Float32Array) {
    const ref = { $f32: offset.n, length: value.length };
    parts.push(value);
    offset.n += value.length;
    return ref;
  }
  if (Array.isArray(value)) return value.map((v) => pack(v, parts, offset));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, pack(v, parts, offset)]));
  }
  return value;
}

/** Allocates each referenced array (its bytes are read into `targets` afterwards). */
function unpack(value: Packed, floats: number, targets: ShardTarget[], file: string): unknown {
  if (Array.isArray(value)) return value.map((v) => unpack(v, floats, targets, file));
  if (value && typeof value === "object") {
    const o = value as Record<string, unknown>;
    if ("$f32" in o) {
      const { $f32: at, length } = o;
      if (!Number.isSafeInteger(at) || !Number.isSafeInteger(length) || (at as number) < 0 || (length as number) < 0) throw new InputError(`${file}: an array reference has no valid offset and length`);
      if ((at as number) + (length as number) > floats) throw new InputError(`${file}: an array reference reaches float ${(at as number) + (length as number)}, past the ${floats} the weights hold`);
      const a = new Float32Array(length as number);
      targets.push({ byte: (at as number) * 4, into: new Uint8Array(a.buffer) });
      return a;
    }
    return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, unpack(v, floats, targets, file)]));
  }
  return value;
}

function writeSynced(file: string, text: string): void {
  const fd = fs.openSync(file, "w");
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Saves `state` (a JSON-like tree that may contain Float32Arrays) under `dir`. */
export function saveCheckpoint(dir: string, state: Record<string, unknown>, opts: SaveOptions = {}): void {
  const shardBytes = opts.shardBytes ?? DEFAULT_SHARD_BYTES;
  if (!Number.isSafeInteger(shardBytes) || shardBytes <= 0 || shardBytes % 4 !== 0) throw new Error(`saveCheckpoint: shardBytes must be a positive multiple of 4, got ${shardBytes}`);
  const parts: Float32Array[] = [];
  const offset = { n: 0 };
  const manifest = pack(state, parts, offset);
  const tmp = `${dir}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  const shards = writeShards(tmp, parts, shardBytes);
  const doc: CheckpointDoc = { version: CHECKPOINT_VERSION, floats: offset.n, shardBytes, shards, state: manifest };
  writeSynced(path.join(tmp, "checkpoint.json"), JSON.stringify(doc, null, 1));
  // swap by renames: at every instant either `dir` or `dir.prev` holds a whole checkpoint (a kill
  // between removing the old one and renaming the new one would otherwise leave neither)
  const prev = `${dir}.prev`;
  fs.rmSync(prev, { recursive: true, force: true });
  if (fs.existsSync(dir)) fs.renameSync(dir, prev);
  fs.renameSync(tmp, dir);
  fs.rmSync(prev, { recursive: true, force: true });
}

/**
 * A folder with `checkpoint.json`. The weights are not looked for here: a folder only gets its
 * final name whole (see saveCheckpoint), and a shard lost since is named by loadCheckpoint.
 */
export function isCheckpoint(dir: string): boolean {
  return fs.existsSync(path.join(dir, "checkpoint.json"));
}

/** The checkpoint folder `dirOrRun` names (itself, or a run folder's checkpoints/last), or null. */
export function findCheckpoint(dirOrRun: string): string | null {
  const last = path.join(dirOrRun, "checkpoints", "last");
  // `.prev`: a save was killed mid-swap (see saveCheckpoint)
  return [dirOrRun, `${dirOrRun}.prev`, last, `${last}.prev`].find(isCheckpoint) ?? null;
}

/** Reads and checks `checkpoint.json`; its errors name the file, never quote its text. */
function readDoc(dir: string): { doc: CheckpointDoc; shards: ShardEntry[]; file: string } {
  const file = path.join(dir, "checkpoint.json");
  let doc: CheckpointDoc;
  try {
    doc = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    // JSON.parse's message quotes the text around the fault
    throw new InputError(e instanceof SyntaxError ? `${file}: not valid JSON` : `${file}: cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"})`);
  }
  if (!doc || typeof doc !== "object") throw new InputError(`${file}: not a checkpoint manifest`);
  if (!Number.isSafeInteger(doc.floats) || doc.floats < 0) throw new InputError(`${file}: "floats" is not a count`);
  if (doc.version === 1) return { doc, shards: [{ file: V1_WEIGHTS, bytes: doc.floats * 4 }], file };
  if (doc.version !== CHECKPOINT_VERSION) throw new InputError(`${file}: unsupported checkpoint version${typeof doc.version === "number" ? ` ${doc.version}` : ""}`);
  return { doc, shards: parseShards(doc.shards, doc.floats * 4, file), file };
}

/** The files a checkpoint folder's manifest names (for a reader that only checks access). */
export function checkpointFiles(dir: string): string[] {
  return ["checkpoint.json", ...readDoc(dir).shards.map((s) => s.file)];
}

/** Loads a checkpoint folder (or a run folder, whose `checkpoints/last` is used), shard by shard. */
export function loadCheckpoint<T = Record<string, unknown>>(dirOrRun: string): { dir: string; state: T } {
  const dir = findCheckpoint(dirOrRun) ?? dirOrRun;
  if (!isCheckpoint(dir)) throw new InputError(`not a checkpoint folder (no checkpoint.json): ${dirOrRun}`);
  const { doc, shards, file } = readDoc(dir);
  checkShards(dir, shards);
  const targets: ShardTarget[] = [];
  const state = unpack(doc.state, doc.floats, targets, file) as T;
  readShards(dir, shards, targets);
  return { dir, state };
}
