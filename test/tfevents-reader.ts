/**
 * An independent reader of TensorBoard event files for the tests: its own bit-by-bit CRC32C,
 * mask, varint and protobuf parsing, sharing no code with the writer (server/runs/tfevents.ts).
 */
import assert from "node:assert/strict";
export function bitwiseCrc32c(buf: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of buf) {
    for (let bit = 0; bit < 8; bit++) {
      const inBit = (byte >>> bit) & 1;
      const mix = (crc ^ inBit) & 1;
      crc >>>= 1;
      if (mix) crc ^= 0x82f63b78;
    }
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function mask(crc: number): number {
  const rotated = ((crc >>> 15) | (crc << 17)) >>> 0;
  return (rotated + 0xa282ead8) % 2 ** 32;
}

interface Field { field: number; wire: number; int?: bigint; bytes?: Uint8Array; f64?: number; f32?: number }

function readVarint(buf: Uint8Array, pos: number): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    assert.ok(pos < buf.length, "truncated varint");
    const b = buf[pos++];
    result += BigInt(b & 0x7f) << shift;
    shift += 7n;
    if (b < 0x80) return [result, pos];
  }
}

function parseMessage(buf: Uint8Array): Field[] {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const fields: Field[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const [k, p1] = readVarint(buf, pos);
    pos = p1;
    const field = Number(k >> 3n);
    const wire = Number(k & 7n);
    if (wire === 0) {
      const [v, p2] = readVarint(buf, pos);
      fields.push({ field, wire, int: v });
      pos = p2;
    } else if (wire === 1) {
      fields.push({ field, wire, f64: view.getFloat64(pos, true) });
      pos += 8;
    } else if (wire === 5) {
      fields.push({ field, wire, f32: view.getFloat32(pos, true) });
      pos += 4;
    } else if (wire === 2) {
      const [len, p2] = readVarint(buf, pos);
      const end = p2 + Number(len);
      assert.ok(end <= buf.length, "length-delimited field overruns its message");
      fields.push({ field, wire, bytes: buf.subarray(p2, end) });
      pos = end;
    } else {
      assert.fail(`unexpected wire type ${wire} for field ${field}`);
    }
  }
  assert.equal(pos, buf.length, "message overran its bytes");
  return fields;
}

function only(fields: Field[], field: number, wire: number): Field {
  const hits = fields.filter((f) => f.field === field);
  assert.equal(hits.length, 1, `field ${field} must appear exactly once`);
  assert.equal(hits[0].wire, wire, `field ${field} wire type`);
  return hits[0];
}

const utf8 = (b: Uint8Array | undefined) => new TextDecoder().decode(b);

export interface ReadEvent { wall: number; step: bigint; fileVersion?: string; values: { tag: string; value: number }[] }

/** Splits a file into records, verifying both masked CRCs of each, and decodes each Event. */
export function readEvents(file: Uint8Array): ReadEvent[] {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const events: ReadEvent[] = [];
  let pos = 0;
  while (pos < file.length) {
    assert.ok(pos + 12 <= file.length, "truncated record header");
    const lenBytes = file.subarray(pos, pos + 8);
    const len = Number(view.getBigUint64(pos, true));
    assert.equal(view.getUint32(pos + 8, true), mask(bitwiseCrc32c(lenBytes)), `length CRC of record ${events.length}`);
    const data = file.subarray(pos + 12, pos + 12 + len);
    assert.equal(data.length, len, "truncated record data");
    assert.equal(view.getUint32(pos + 12 + len, true), mask(bitwiseCrc32c(data)), `data CRC of record ${events.length}`);
    pos += 12 + len + 4;

    const ev = parseMessage(data);
    for (const f of ev) assert.ok([1, 2, 3, 5].includes(f.field), `unexpected Event field ${f.field}`);
    const stepField = ev.find((f) => f.field === 2);
    const versionField = ev.find((f) => f.field === 3);
    const values: ReadEvent["values"] = [];
    for (const s of ev.filter((f) => f.field === 5)) {
      assert.equal(s.wire, 2);
      for (const v of parseMessage(s.bytes!)) {
        assert.equal(v.field, 1, "Summary holds only `value`");
        const val = parseMessage(v.bytes!);
        values.push({ tag: utf8(only(val, 1, 2).bytes), value: only(val, 2, 5).f32! });
      }
    }
    events.push({
      wall: only(ev, 1, 1).f64!,
      step: stepField ? (assert.equal(stepField.wire, 0), stepField.int!) : 0n,
      fileVersion: versionField ? (assert.equal(versionField.wire, 2), utf8(versionField.bytes)) : undefined,
      values,
    });
  }
  return events;
}

// ---- Tests

