/**
 * A checkpoint's weights as shard files. The state's Float32Arrays, concatenated in the order the
 * state tree lists them, form one byte stream cut every `shardBytes` bytes into
 * `weights-00000.bin`, `weights-00001.bin`, … (every shard but the last exactly `shardBytes`).
 * An array's location is its float offset in that stream; the manifest lists each shard's size.
 *
 * Arrays may span shards. Keeping each array whole in one shard would need a packing rule and
 * still a splitting path for arrays larger than a shard; one fixed cut is a single path, and the
 * old single `weights.bin` (checkpoint version 1) is its one-shard case, read by the same code.
 * Neither side ever holds more than the state's own arrays: writes go from each array's bytes,
 * reads straight into the arrays the loader allocates, in slices of at most IO_CHUNK.
 */
import fs from "node:fs";
import path from "node:path";
import { InputError } from "../errors.ts";

/** Shard bound by default: well under the 2 GiB a Node Buffer or one read call can take. */
export const DEFAULT_SHARD_BYTES = 512 * 2 ** 20;
/** One write or read call moves at most this much (Linux moves under 2 GiB per call). */
const IO_CHUNK = 64 * 2 ** 20;

export interface ShardEntry {
  file: string;
  bytes: number;
}

/** Bytes to place at stream offset `byte` (a loader's freshly allocated array). */
export interface ShardTarget {
  byte: number;
  into: Uint8Array;
}

export function shardName(i: number): string {
  return `weights-${String(i).padStart(5, "0")}.bin`;
}

const bytesOf = (a: Float32Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** Writes `parts` as shards under `dir`, each fsynced before the next opens; returns the manifest. */
export function writeShards(dir: string, parts: readonly Float32Array[], shardBytes: number): ShardEntry[] {
  const shards: ShardEntry[] = [];
  let fd = -1;
  const closeShard = () => {
    fs.fsyncSync(fd);
    const f = fd;
    fd = -1;
    fs.closeSync(f);
  };
  try {
    for (const p of parts) {
      const bytes = bytesOf(p);
      for (let at = 0; at < bytes.length; ) {
        let shard = shards.at(-1);
        if (!shard || shard.bytes === shardBytes) {
          if (fd >= 0) closeShard();
          shard = { file: shardName(shards.length), bytes: 0 };
          fd = fs.openSync(path.join(dir, shard.file), "w");
          shards.push(shard);
        }
        const n = fs.writeSync(fd, bytes, at, Math.min(bytes.length - at, shardBytes - shard.bytes, IO_CHUNK));
        if (n <= 0) throw new Error(`${shard.file}: a write made no progress`);
        at += n;
        shard.bytes += n;
      }
    }
    if (fd >= 0) closeShard();
  } finally {
    if (fd >= 0) fs.closeSync(fd);
  }
  return shards;
}

/** A manifest's shard list, checked: names in order (never a path out of the folder), sizes summing to `totalBytes`. */
export function parseShards(value: unknown, totalBytes: number, where: string): ShardEntry[] {
  if (!Array.isArray(value)) throw new InputError(`${where}: "shards" is not a list`);
  let sum = 0;
  const shards = value.map((s: unknown, i) => {
    const e = (s ?? {}) as Partial<ShardEntry>;
    if (e.file !== shardName(i)) throw new InputError(`${where}: shard ${i} should be named ${shardName(i)}`);
    if (!Number.isSafeInteger(e.bytes) || e.bytes! < 0) throw new InputError(`${where}: shard ${e.file} has no valid byte size`);
    sum += e.bytes!;
    return { file: e.file, bytes: e.bytes! };
  });
  if (sum !== totalBytes) throw new InputError(`${where}: the shards hold ${sum} bytes, the state needs ${totalBytes}`);
  return shards;
}

/** Every shard is there with the size the manifest gives, checked before anything is read. */
export function checkShards(dir: string, shards: readonly ShardEntry[]): void {
  for (const s of shards) {
    const file = path.join(dir, s.file);
    let size: number;
    try {
      size = fs.statSync(file).size;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      throw new InputError(code === "ENOENT" ? `${file} is missing` : `${file} cannot be read (${code ?? "error"})`);
    }
    if (size < s.bytes) throw new InputError(`${file} is truncated (expected ${s.bytes} bytes, found ${size})`);
    if (size > s.bytes) throw new InputError(`${file} is longer than its manifest entry (expected ${s.bytes} bytes, found ${size})`);
  }
}

/** Fills each target from the shard stream, in stream order, so shards are read one after another. */
export function readShards(dir: string, shards: readonly ShardEntry[], targets: readonly ShardTarget[]): void {
  const ends: number[] = [];
  for (const s of shards) ends.push((ends.at(-1) ?? 0) + s.bytes);
  // the shard holding stream byte `pos`: the first whose end lies past it (skips empty shards)
  const shardAt = (pos: number) => {
    let lo = 0;
    let hi = ends.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ends[mid] > pos) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
  let fd = -1;
  let open = -1;
  try {
    for (const t of [...targets].sort((a, b) => a.byte - b.byte)) {
      for (let at = 0; at < t.into.length; ) {
        const pos = t.byte + at;
        const i = shardAt(pos);
        if (i !== open) {
          if (fd >= 0) fs.closeSync(fd);
          fd = -1;
          fd = fs.openSync(path.join(dir, shards[i].file), "r");
          open = i;
        }
        const start = ends[i] - shards[i].bytes;
        const want = Math.min(t.into.length - at, ends[i] - pos, IO_CHUNK);
        const n = fs.readSync(fd, t.into, at, want, pos - start);
        // checked sizes beforehand: a short read means the file shrank since
        if (n === 0) throw new InputError(`${path.join(dir, shards[i].file)} is truncated (ends before byte ${pos - start + want})`);
        at += n;
      }
    }
  } finally {
    if (fd >= 0) fs.closeSync(fd);
  }
}
