import { test } from "node:test";
import assert from "node:assert/strict";
import { crc32c, encodeTfEvents, tfEventsFileName, type ScalarPoint } from "../server/runs/tfevents.ts";
// an independent reader (its own bitwise CRC32C and protobuf parsing), so a bug in the writer's
// encoding cannot be mirrored in the check and cancel out
import { bitwiseCrc32c, readEvents } from "./tfevents-reader.ts";

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
