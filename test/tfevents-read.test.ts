/**
 * The import side's TensorBoard reader (server/runs/tfevents-read.ts): round trip with our writer,
 * TF2-style tensor scalars built here by hand (float_val, tensor_content, double), CRC checks that
 * name the file and the record, and a truncated last record.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { crc32c, encodeTfEvents, type ScalarPoint } from "../server/runs/tfevents.ts";
import { readTfEvents, TfEventsError } from "../server/runs/tfevents-read.ts";

test("round trip with the writer: header, then every point's step, wall and float32 value", () => {
  const points: ScalarPoint[] = [
    { key: "qf_loss", step: 0, wall: 1700000001.5, value: 2.302585 },
    { key: "qf_loss", step: 40, wall: 1700000002.125, value: 0.1 },
    { key: "train r_sum", step: 2 ** 40, wall: 1700000003, value: -0.75 },
    { key: "ünïcode/τ", step: Number.MAX_SAFE_INTEGER, wall: 1700000006, value: -123456.789 },
  ];
  const file = readTfEvents(encodeTfEvents(points, 1700000000.25), "events.out.tfevents.1.box");
  assert.equal(file.truncatedTail, false);
  assert.equal(file.events.length, points.length + 1);
  assert.deepEqual(file.events[0], { wall: 1700000000.25, step: 0, fileVersion: "brain.Event:2", scalars: [] });
  points.forEach((p, i) => assert.deepEqual(file.events[i + 1], { wall: p.wall, step: p.step, scalars: [{ tag: p.key, value: Math.fround(p.value) }] }));
});

// ---- a hand-written encoder for TF2-style summaries (tensor values), independent of the writer

const varint = (n: number | bigint): number[] => {
  let v = BigInt(n);
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
};
const tagged = (field: number, wire: number, payload: number[]) => [...varint((field << 3) | wire), ...payload];
const bytesField = (field: number, b: number[]) => tagged(field, 2, [...varint(b.length), ...b]);
const le = (n: number, kind: "f32" | "f64") => {
  const b = Buffer.alloc(kind === "f32" ? 4 : 8);
  if (kind === "f32") b.writeFloatLE(n);
  else b.writeDoubleLE(n);
  return [...b];
};
const str = (s: string) => [...Buffer.from(s, "utf8")];
const scalarsPlugin = bytesField(9, bytesField(1, bytesField(1, str("scalars"))));

function record(data: number[]): Buffer {
  const mask = (c: number) => ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(data.length));
  const out = Buffer.alloc(16 + data.length);
  head.copy(out);
  out.writeUInt32LE(mask(crc32c(head)), 8);
  out.set(data, 12);
  out.writeUInt32LE(mask(crc32c(Uint8Array.from(data))), 12 + data.length);
  return out;
}
const event = (step: number, values: number[][]) => [...tagged(1, 1, le(1700000100 + step, "f64")), ...tagged(2, 0, varint(step)), ...bytesField(5, values.flatMap((v) => bytesField(1, v)))];
const value = (tag: string, tensor: number[], plugin = scalarsPlugin) => [...bytesField(1, str(tag)), ...plugin, ...bytesField(8, tensor)];

test("tensor scalars: float_val (packed), tensor_content float and double; non-scalars are skipped", () => {
  const floatVal = [...tagged(1, 0, varint(1)), ...bytesField(2, []), ...bytesField(5, le(0.25, "f32"))];
  const content = [...tagged(1, 0, varint(1)), ...bytesField(2, []), ...bytesField(4, le(1.5, "f32"))];
  const dbl = [...tagged(1, 0, varint(2)), ...bytesField(4, le(0.1, "f64"))];
  // a [2, 3] float tensor (a histogram-like summary), and a text summary: neither is a scalar
  const matrix = [...tagged(1, 0, varint(1)), ...bytesField(2, [...bytesField(2, tagged(1, 0, varint(2))), ...bytesField(2, tagged(1, 0, varint(3)))]), ...bytesField(4, Array(24).fill(0))];
  const text = [...tagged(1, 0, varint(7)), ...bytesField(8, str("hello"))];
  const textPlugin = bytesField(9, bytesField(1, bytesField(1, str("text"))));
  const file = Buffer.concat([
    record(event(10, [value("qf_loss", floatVal), value("train r_sum", content)])),
    record(event(20, [value("eval r_sum", dbl), value("hist", matrix), value("note", text, textPlugin)])),
  ]);
  const r = readTfEvents(file, "events.out.tfevents.tf2");
  assert.deepEqual(r.events.map((e) => [e.step, e.scalars]), [
    [10, [{ tag: "qf_loss", value: 0.25 }, { tag: "train r_sum", value: 1.5 }]],
    [20, [{ tag: "eval r_sum", value: 0.1 }]],
  ]);
  assert.equal(r.skippedValues, 2);
});

test("a corrupted data or length CRC names the file and the record; a cut-short last record is dropped", () => {
  const good = encodeTfEvents([0, 1, 2].map((s) => ({ key: "qf_loss", step: s, wall: 5 + s, value: s })), 5);
  // records: header (1), then points; each scalar record here is the same length
  const recLen = (pos: number) => 16 + Number(good.readBigUInt64LE(pos));
  const r2 = recLen(0);
  const r3 = r2 + recLen(r2);

  const dataFlip = Buffer.from(good);
  dataFlip[r3 + 14] ^= 0x01; // inside record 3's data
  assert.throws(() => readTfEvents(dataFlip, "events.out.tfevents.run1"), (e: unknown) => e instanceof TfEventsError && e.message === "events.out.tfevents.run1 record 3: data CRC mismatch (corrupted)");

  const lenFlip = Buffer.from(good);
  lenFlip[r2] ^= 0x04; // record 2's length
  assert.throws(() => readTfEvents(lenFlip, "tb/events.out.tfevents.x"), /^TfEventsError: tb\/events\.out\.tfevents\.x record 2: length CRC mismatch/);

  const cut = readTfEvents(good.subarray(0, good.length - 3), "f");
  assert.equal(cut.truncatedTail, true);
  assert.deepEqual(cut.events.map((e) => e.step), [0, 0, 1], "the header and the two whole points");

  assert.throws(() => readTfEvents(Buffer.from("key,step,update,wall,value\nqf_loss,0,0,0,1\n"), "events.out.tfevents.csv"), /record 1: length CRC mismatch \(not an event file/);
});
