/**
 * A dependency-free writer of TensorBoard event files (`events.out.tfevents.<secs>.<host>`), so a
 * run's scalars can be opened with `tensorboard --logdir` without pulling TensorFlow or a protobuf
 * runtime into the platform. Only scalar summaries are written.
 *
 * A file is a sequence of TFRecords, each holding one serialized `tensorflow.Event`:
 *   uint64 length (LE) | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)
 * The protobuf encoder below covers exactly the fields TensorBoard needs for scalars.
 */

export interface ScalarPoint {
  key: string;
  step: number;
  /** Unix seconds (float). */
  wall: number;
  value: number;
}

/** "events.out.tfevents.<floor(secs)>.<host>" — TensorBoard only picks up files containing "tfevents". */
export function tfEventsFileName(startWallSeconds: number, host: string): string {
  return `events.out.tfevents.${Math.floor(startWallSeconds)}.${host}`;
}

// ---- CRC32C (Castagnoli). Table-driven: a file holds two CRCs per point, so the 8x speedup over
// bitwise matters for long runs; the test checks it against an independent bitwise version.

const CRC32C_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32c(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = CRC32C_TABLE[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// TFRecord masks its CRCs so that a CRC stored inside data that is itself CRC'd does not produce
// degenerate checksums; readers (TensorBoard included) reject records whose masked CRC mismatches.
function maskedCrc32c(buf: Uint8Array): number {
  const c = crc32c(buf);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

function tfRecord(data: Uint8Array): Buffer {
  const header = Buffer.alloc(8);
  header.writeBigUInt64LE(BigInt(data.length));
  const out = Buffer.alloc(8 + 4 + data.length + 4);
  header.copy(out, 0);
  out.writeUInt32LE(maskedCrc32c(header), 8);
  out.set(data, 12);
  out.writeUInt32LE(maskedCrc32c(data), 12 + data.length);
  return out;
}

// ---- Minimal protobuf encoding (proto3 wire format).

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LEN = 2;
const WIRE_FIXED32 = 5;

/** Varint via BigInt so steps above 2^32 (JS bit ops are 32-bit) encode correctly. */
function varint(n: number | bigint): Buffer {
  let v = BigInt(n);
  const bytes: number[] = [];
  while (v >= 0x80n) {
    bytes.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  bytes.push(Number(v));
  return Buffer.from(bytes);
}

const key = (field: number, wire: number) => varint((field << 3) | wire);

function fieldVarint(field: number, n: number): Buffer {
  return Buffer.concat([key(field, WIRE_VARINT), varint(n)]);
}

function fieldDouble(field: number, x: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(x);
  return Buffer.concat([key(field, WIRE_FIXED64), b]);
}

function fieldFloat(field: number, x: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeFloatLE(x);
  return Buffer.concat([key(field, WIRE_FIXED32), b]);
}

function fieldBytes(field: number, data: Uint8Array): Buffer {
  return Buffer.concat([key(field, WIRE_LEN), varint(data.length), data]);
}

const fieldString = (field: number, s: string) => fieldBytes(field, Buffer.from(s, "utf8"));

// Event: 1 wall_time (double), 2 step (int64), 3 file_version (string), 5 summary (Summary).
// Summary: 1 value (repeated Summary.Value). Summary.Value: 1 tag (string), 2 simple_value (float).

function scalarEvent(p: ScalarPoint): Buffer {
  const value = Buffer.concat([fieldString(1, p.key), fieldFloat(2, p.value)]);
  const summary = fieldBytes(1, value);
  return Buffer.concat([fieldDouble(1, p.wall), fieldVarint(2, p.step), fieldBytes(5, summary)]);
}

function describe(p: ScalarPoint): string {
  return `{ key: ${JSON.stringify(p.key)}, step: ${p.step}, wall: ${p.wall}, value: ${p.value} }`;
}

/**
 * The bytes of one event file: the "brain.Event:2" header record (TensorBoard uses it to detect
 * the format version), then one scalar Event per point, in the given order.
 *
 * Points whose value is not finite once narrowed to float32 (NaN, ±Infinity, or beyond float32's
 * range) are skipped: a diverged metric should not poison the chart's axes, and the JSON side of the
 * platform cannot carry them either. Steps must be non-negative safe integers and wall times finite;
 * anything else is a caller bug and throws, naming the point.
 */
export function encodeTfEvents(points: Iterable<ScalarPoint>, startWallSeconds: number): Buffer {
  if (!Number.isFinite(startWallSeconds)) throw new Error(`tfevents: start wall time must be finite, got ${startWallSeconds}`);
  const records: Buffer[] = [tfRecord(Buffer.concat([fieldDouble(1, startWallSeconds), fieldString(3, "brain.Event:2")]))];
  for (const p of points) {
    if (!Number.isSafeInteger(p.step) || p.step < 0) {
      throw new Error(`tfevents: step must be a non-negative integer, got point ${describe(p)}`);
    }
    if (!Number.isFinite(p.wall)) throw new Error(`tfevents: wall time must be finite, got point ${describe(p)}`);
    if (!Number.isFinite(Math.fround(p.value))) continue;
    records.push(tfRecord(scalarEvent(p)));
  }
  return Buffer.concat(records);
}
