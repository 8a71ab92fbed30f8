import { test } from "node:test";
import assert from "node:assert/strict";
import { crc32c, encodeTfEvents, tfEventsFileName, type ScalarPoint } from "../server/runs/tfevents.ts";

// ---- An independent reader: its own bitwise CRC32C and protobuf parsing, sharing no code with the
// writer, so a bug in the writer's encoding cannot be mirrored here and cancel out.

function bitwiseCrc32c(buf: Uint8Array): number {
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

interface ReadEvent { wall: number; step: bigint; fileVersion?: string; values: { tag: string; value: number }[] }

/** Splits a file into records, verifying both masked CRCs of each, and decodes each Event. */
function readEvents(file: Uint8Array): ReadEvent[] {
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

test("crc32c: standard check value, and the writer agrees with the bitwise reference", () => {
  const check = new TextEncoder().encode("123456789");
  assert.equal(bitwiseCrc32c(check), 0xe3069283);
  assert.equal(crc32c(check), 0xe3069283);
  assert.equal(crc32c(new Uint8Array(0)), 0);
  const rnd = Uint8Array.from({ length: 1000 }, (_, i) => (i * 2654435761) >>> 24);
  assert.equal(crc32c(rnd), bitwiseCrc32c(rnd));
});

test("tfEventsFileName floors the seconds", () => {
  assert.equal(tfEventsFileName(1700000000.987, "box-1"), "events.out.tfevents.1700000000.box-1");
});

test("round trip: header record then one Event per point, CRCs verified", () => {
  const start = 1700000000.25;
  const points: ScalarPoint[] = [
    { key: "train/loss", step: 0, wall: 1700000001.5, value: 2.302585 },
    { key: "train/loss", step: 1, wall: 1700000002.125, value: 0.1 },
    { key: "eval/accuracy", step: 127, wall: 1700000003.0078125, value: 1 },
    { key: "eval/accuracy", step: 128, wall: 1700000004.1, value: -0 },
    { key: "lr", step: 2 ** 40, wall: 1700000005.333, value: 3e-4 },
    { key: "ünïcode/τ", step: Number.MAX_SAFE_INTEGER, wall: 1700000006, value: -123456.789 },
  ];
  const file = encodeTfEvents(points, start);
  const events = readEvents(file);

  assert.equal(events.length, points.length + 1);
  assert.deepEqual(events[0], { wall: start, step: 0n, fileVersion: "brain.Event:2", values: [] });
  points.forEach((p, i) => {
    const e = events[i + 1];
    assert.equal(e.fileVersion, undefined);
    assert.equal(e.wall, p.wall, `wall of point ${i}`);
    assert.equal(e.step, BigInt(p.step), `step of point ${i}`);
    assert.deepEqual(e.values, [{ tag: p.key, value: Math.fround(p.value) }], `value of point ${i}`);
  });
});

test("an empty series still yields the header record", () => {
  const events = readEvents(encodeTfEvents([], 5));
  assert.deepEqual(events, [{ wall: 5, step: 0n, fileVersion: "brain.Event:2", values: [] }]);
});

test("non-finite values (including float32 overflow) are skipped", () => {
  const pt = (step: number, value: number): ScalarPoint => ({ key: "m", step, wall: 10 + step, value });
  const events = readEvents(encodeTfEvents([pt(0, 1), pt(1, NaN), pt(2, Infinity), pt(3, -Infinity), pt(4, 1e300), pt(5, 2)], 9));
  assert.deepEqual(
    events.slice(1).map((e) => [e.step, e.values[0].value]),
    [[0n, 1], [5n, 2]],
  );
});

test("a negative or non-integer step throws, naming the point", () => {
  const bad = (step: number) => () => encodeTfEvents([{ key: "train/loss", step, wall: 1, value: 1 }], 0);
  assert.throws(bad(-1), /step must be a non-negative integer.*"train\/loss".*step: -1/);
  assert.throws(bad(1.5), /non-negative integer.*step: 1\.5/);
  assert.throws(bad(2 ** 60), /non-negative integer/);
});
