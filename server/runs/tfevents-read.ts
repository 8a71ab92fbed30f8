/**
 * A reader of TensorBoard event files, for imports: the reference implementation's
 * `tb_logs/events.out.tfevents.*` (PyTorch SummaryWriter: `simple_value`) and TF2 summary writers
 * (scalar `tensor`s), and our own export (server/runs/tfevents.ts). Dependency-free like the writer.
 *
 * Every record's framing is checked: uint64 length | masked CRC32C of the length | data | masked
 * CRC32C of the data. A mismatch is an error naming the file and the record (1-based); nothing of
 * the data is echoed. A truncated *last* record (a run killed while writing) is dropped and
 * reported, as TensorBoard does. Only scalar summaries are decoded; other summaries (histograms,
 * images, text) are counted as skipped.
 */
import { crc32c } from "./tfevents.ts";

export interface TfScalar {
  tag: string;
  value: number;
}

export interface TfEvent {
  /** Unix seconds. */
  wall: number;
  step: number;
  fileVersion?: string;
  scalars: TfScalar[];
}

export interface TfEventsFile {
  events: TfEvent[];
  /** The file ended inside a record, which was dropped. */
  truncatedTail: boolean;
  /** Summary values that are not scalars (histograms, images, text…). */
  skippedValues: number;
}

export class TfEventsError extends Error {
  constructor(
    readonly file: string,
    readonly record: number,
    why: string,
  ) {
    super(`${file} record ${record}: ${why}`);
    this.name = "TfEventsError";
  }
}

function maskedCrc32c(buf: Uint8Array): number {
  const c = crc32c(buf);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** Thrown inside the protobuf walk; the caller adds the file and record. */
class Malformed extends Error {}

// ---- protobuf wire format

interface Field {
  field: number;
  wire: number;
  /** varint (wire 0) */
  int?: bigint;
  /** bytes (wire 2), or the raw 8/4 bytes of fixed64/fixed32 */
  bytes?: Uint8Array;
}

function readVarint(buf: Uint8Array, pos: number): [bigint, number] {
  let v = 0n;
  for (let shift = 0n; shift < 70n; shift += 7n) {
    if (pos >= buf.length) throw new Malformed("truncated varint");
    const b = buf[pos++];
    v |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [v, pos];
  }
  throw new Malformed("varint longer than 10 bytes");
}

function* fields(buf: Uint8Array): Generator<Field> {
  let pos = 0;
  while (pos < buf.length) {
    const [key, p] = readVarint(buf, pos);
    pos = p;
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (field === 0) throw new Malformed("field number 0");
    switch (wire) {
      case 0: {
        const [v, q] = readVarint(buf, pos);
        pos = q;
        yield { field, wire, int: v };
        break;
      }
      case 1:
      case 5: {
        const n = wire === 1 ? 8 : 4;
        if (pos + n > buf.length) throw new Malformed("truncated fixed-width field");
        yield { field, wire, bytes: buf.subarray(pos, pos + n) };
        pos += n;
        break;
      }
      case 2: {
        const [len, q] = readVarint(buf, pos);
        if (len > BigInt(buf.length - q)) throw new Malformed("length-delimited field runs past its message");
        pos = q + Number(len);
        yield { field, wire, bytes: buf.subarray(q, pos) };
        break;
      }
      default:
        throw new Malformed(`unsupported wire type ${wire}`);
    }
  }
}

const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);
const f64 = (b: Uint8Array) => view(b).getFloat64(0, true);
const f32 = (b: Uint8Array) => view(b).getFloat32(0, true);
const utf8 = new TextDecoder("utf-8", { fatal: false });

/** IEEE 754 half precision → number. */
function half(bits: number): number {
  const s = bits & 0x8000 ? -1 : 1;
  const e = (bits >>> 10) & 0x1f;
  const m = bits & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Signed 64-bit from a varint (two's complement). */
const int64 = (v: bigint) => Number(BigInt.asIntN(64, v));

// TensorProto dtypes (tensorflow/core/framework/types.proto) that can hold a scalar number.
const DT_FLOAT = 1, DT_DOUBLE = 2, DT_INT32 = 3, DT_INT64 = 9, DT_HALF = 19;

const noFixed = (): number => {
  throw new Malformed("fixed-width value in a varint field");
};

/** Packed or unpacked repeated numbers of one field (width 0: varints). */
function repeated(f: Field, width: 0 | 4 | 8, read: (b: Uint8Array) => number, out: number[]): void {
  if (f.wire === 2 && width !== 0) {
    if (f.bytes!.length % width) throw new Malformed("packed field of odd length");
    for (let i = 0; i < f.bytes!.length; i += width) out.push(read(f.bytes!.subarray(i, i + width)));
  } else if (f.wire === 2) {
    for (let p = 0; p < f.bytes!.length; ) {
      const [v, q] = readVarint(f.bytes!, p);
      out.push(int64(v));
      p = q;
    }
  } else if (f.bytes) out.push(read(f.bytes));
  else if (f.int !== undefined) out.push(int64(f.int));
}

/** The single number of a scalar TensorProto, or null when it is not one. */
function tensorScalar(buf: Uint8Array): number | null {
  let dtype = 0;
  let elements = 1;
  let content: Uint8Array | null = null;
  const vals: number[] = [];
  for (const f of fields(buf)) {
    if (f.field === 1 && f.int !== undefined) dtype = Number(f.int);
    else if (f.field === 2 && f.bytes) {
      // TensorShapeProto: 2 dim { 1 size }, 3 unknown_rank
      for (const d of fields(f.bytes)) {
        if (d.field === 3 && d.int) return null;
        if (d.field === 2 && d.bytes) for (const s of fields(d.bytes)) if (s.field === 1 && s.int !== undefined) elements *= int64(s.int);
      }
    } else if (f.field === 4 && f.bytes) content = f.bytes;
    else if (f.field === 5) repeated(f, 4, f32, vals); // float_val
    else if (f.field === 6) repeated(f, 8, f64, vals); // double_val
    else if (f.field === 7 || f.field === 10 || f.field === 13) repeated(f, 0, noFixed, vals); // int_val, int64_val, half_val (varints)
  }
  if (elements !== 1) return null;
  if (dtype === DT_HALF) {
    if (content?.length === 2) return half(view(content).getUint16(0, true));
    return vals.length === 1 ? half(vals[0] & 0xffff) : null;
  }
  if (content) {
    if (dtype === DT_FLOAT && content.length === 4) return f32(content);
    if (dtype === DT_DOUBLE && content.length === 8) return f64(content);
    if (dtype === DT_INT32 && content.length === 4) return view(content).getInt32(0, true);
    if (dtype === DT_INT64 && content.length === 8) return Number(view(content).getBigInt64(0, true));
    return null;
  }
  if (![DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64].includes(dtype)) return null;
  return vals.length === 1 ? vals[0] : null;
}

/** SummaryMetadata.plugin_data.plugin_name, if any. */
function pluginName(buf: Uint8Array): string | undefined {
  for (const f of fields(buf)) if (f.field === 1 && f.bytes) for (const p of fields(f.bytes)) if (p.field === 1 && p.bytes) return utf8.decode(p.bytes);
  return undefined;
}

// Event: 1 wall_time double, 2 step int64, 3 file_version string, 5 summary.
// Summary: 1 value (repeated). Summary.Value: 1 tag, 2 simple_value float, 8 tensor, 9 metadata.
function decodeEvent(buf: Uint8Array, counts: { skipped: number }): TfEvent {
  const ev: TfEvent = { wall: 0, step: 0, scalars: [] };
  for (const f of fields(buf)) {
    if (f.field === 1 && f.wire === 1) ev.wall = f64(f.bytes!);
    else if (f.field === 2 && f.wire === 0) {
      const step = BigInt.asIntN(64, f.int!);
      if (step < 0n || step > BigInt(Number.MAX_SAFE_INTEGER)) throw new Malformed("step out of range");
      ev.step = Number(step);
    } else if (f.field === 3 && f.wire === 2) ev.fileVersion = utf8.decode(f.bytes!);
    else if (f.field === 5 && f.wire === 2) {
      for (const v of fields(f.bytes!)) {
        if (v.field !== 1 || v.wire !== 2) continue;
        let tag = "";
        let simple: number | undefined;
        let tensor: Uint8Array | undefined;
        let plugin: string | undefined;
        for (const x of fields(v.bytes!)) {
          if (x.field === 1 && x.wire === 2) tag = utf8.decode(x.bytes!);
          else if (x.field === 2 && x.wire === 5) simple = f32(x.bytes!);
          else if (x.field === 8 && x.wire === 2) tensor = x.bytes;
          else if (x.field === 9 && x.wire === 2) plugin = pluginName(x.bytes!);
        }
        const value = simple ?? (tensor && (plugin === undefined || plugin === "scalars") ? tensorScalar(tensor) : null);
        if (value === null || value === undefined) counts.skipped++;
        else ev.scalars.push({ tag, value });
      }
    }
  }
  return ev;
}

/** Decodes a whole event file; throws TfEventsError naming `file` and the record. */
export function readTfEvents(data: Uint8Array, file: string): TfEventsFile {
  const buf = data instanceof Buffer ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const events: TfEvent[] = [];
  const counts = { skipped: 0 };
  let pos = 0;
  for (let record = 1; pos < buf.length; record++) {
    if (pos + 12 > buf.length) return { events, truncatedTail: true, skippedValues: counts.skipped };
    const header = buf.subarray(pos, pos + 8);
    if (buf.readUInt32LE(pos + 8) !== maskedCrc32c(header)) throw new TfEventsError(file, record, "length CRC mismatch (not an event file, or corrupted)");
    const len = buf.readBigUInt64LE(pos);
    if (len > BigInt(buf.length - pos - 16)) {
      // the framing is intact but the data is cut short: the writer was stopped mid-record
      return { events, truncatedTail: true, skippedValues: counts.skipped };
    }
    const n = Number(len);
    const body = buf.subarray(pos + 12, pos + 12 + n);
    if (buf.readUInt32LE(pos + 12 + n) !== maskedCrc32c(body)) throw new TfEventsError(file, record, "data CRC mismatch (corrupted)");
    try {
      events.push(decodeEvent(body, counts));
    } catch (e) {
      if (e instanceof Malformed) throw new TfEventsError(file, record, `malformed Event: ${e.message}`);
      throw e;
    }
    pos += 16 + n;
  }
  return { events, truncatedTail: false, skippedValues: counts.skipped };
}
