/**
 * Checkpoints: a folder holding `checkpoint.json` (config, counters, schedule state, α, RNG
 * state, and a manifest) and `weights.bin` (every Float32Array of the state — four encoders and
 * the AdamW moments — concatenated). Written to a temporary folder and renamed, so a crash never
 * leaves a half-written checkpoint under the final name.
 */
import fs from "node:fs";
import path from "node:path";
import { InputError } from "./errors.ts";

const CHECKPOINT_VERSION = 1;

type Packed = unknown;

/** Replaces every Float32Array in a JSON-like tree by a reference into one binary blob. */
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

function unpack(value: Packed, blob: Float32Array, file: string): unknown {
  if (Array.isArray(value)) return value.map((v) => unpack(v, blob, file));
  if (value && typeof value === "object") {
    const o = value as Record<string, unknown>;
    if (typeof o.$f32 === "number" && typeof o.length === "number") {
      if (o.$f32 + o.length > blob.length) throw new InputError(`${file}: weights.bin is truncated (needs ${o.$f32 + o.length} floats, has ${blob.length})`);
      return blob.slice(o.$f32, o.$f32 + o.length);
    }
    return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, unpack(v, blob, file)]));
  }
  return value;
}

/** Saves `state` (a JSON-like tree that may contain Float32Arrays) under `dir`. */
export function saveCheckpoint(dir: string, state: Record<string, unknown>): void {
  const parts: Float32Array[] = [];
  const offset = { n: 0 };
  const manifest = pack(state, parts, offset);
  const tmp = `${dir}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  const fd = fs.openSync(path.join(tmp, "weights.bin"), "w");
  try {
    for (const p of parts) fs.writeSync(fd, new Uint8Array(p.buffer, p.byteOffset, p.byteLength));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.writeFileSync(path.join(tmp, "checkpoint.json"), JSON.stringify({ version: CHECKPOINT_VERSION, floats: offset.n, state: manifest }, null, 1));
  // swap by renames: at every instant either `dir` or `dir.prev` holds a whole checkpoint (a kill
  // between removing the old one and renaming the new one would otherwise leave neither)
  const prev = `${dir}.prev`;
  fs.rmSync(prev, { recursive: true, force: true });
  if (fs.existsSync(dir)) fs.renameSync(dir, prev);
  fs.renameSync(tmp, dir);
  fs.rmSync(prev, { recursive: true, force: true });
}

export function isCheckpoint(dir: string): boolean {
  return fs.existsSync(path.join(dir, "checkpoint.json")) && fs.existsSync(path.join(dir, "weights.bin"));
}

/** The checkpoint folder `dirOrRun` names (itself, or a run folder's checkpoints/last), or null. */
export function findCheckpoint(dirOrRun: string): string | null {
  const last = path.join(dirOrRun, "checkpoints", "last");
  // `.prev`: a save was killed mid-swap (see saveCheckpoint)
  return [dirOrRun, `${dirOrRun}.prev`, last, `${last}.prev`].find(isCheckpoint) ?? null;
}

/** Loads a checkpoint folder (or a run folder, whose `checkpoints/last` is used). */
export function loadCheckpoint<T = Record<string, unknown>>(dirOrRun: string): { dir: string; state: T } {
  const dir = findCheckpoint(dirOrRun) ?? dirOrRun;
  const file = path.join(dir, "checkpoint.json");
  if (!isCheckpoint(dir)) throw new InputError(`not a checkpoint folder (no checkpoint.json + weights.bin): ${dirOrRun}`);
  let doc: { version: number; floats: number; state: Packed };
  try {
    doc = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    throw new InputError(`${file}: ${(e as Error).message}`);
  }
  if (doc.version !== CHECKPOINT_VERSION) throw new InputError(`${file}: unsupported checkpoint version ${doc.version}`);
  const buf = fs.readFileSync(path.join(dir, "weights.bin"));
  if (buf.byteLength !== doc.floats * 4) throw new InputError(`${path.join(dir, "weights.bin")}: expected ${doc.floats * 4} bytes, found ${buf.byteLength}`);
  const blob = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  return { dir, state: unpack(doc.state, blob, file) as T };
}
