/**
 * Sharded checkpoints (server/qrag/training/checkpoint.ts, checkpoint-shards.ts): round trips across many
 * tiny shards, damaged shards named, version 1 (one weights.bin) still read, weights moved without
 * one buffer for the whole state, and a training run resumed from a sharded checkpoint.
 */
import { after, test, mock } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadCheckpoint, saveCheckpoint } from "../server/qrag/training/checkpoint.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { train, type TrainCheckpoint } from "../server/qrag/training/train.ts";
import { collect, series, trainThenCancel } from "./train-helpers.ts";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "qrag-ckpt-shards-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Distinct values per array, so a float read from the wrong place shows. */
const floats = (n: number, base: number) => Float32Array.from({ length: n }, (_, i) => base + i * 0.5);

/**
 * With 64-byte shards (16 floats): one array exactly a shard, two that end on a boundary
 * together, one spanning three shards, empty ones at the start, middle and end.
 */
const SHARD = 64;
function sampleState() {
  return {
    kind: "test", count: 3, label: "x", none: null, flags: [true, false],
    first: new Float32Array(0),
    whole: floats(16, 1000),
    pair: [floats(5, 2000), floats(11, 3000)],
    nested: { empty: new Float32Array(0), long: floats(40, 4000), list: [{ w: floats(7, 5000) }] },
    last: new Float32Array(0),
  };
}
const SAMPLE_FLOATS = 16 + 5 + 11 + 40 + 7;

function shardFiles(dir: string): string[] {
  return fs.readdirSync(dir).filter((f) => f.endsWith(".bin")).sort();
}

test("round trip over many tiny shards: arrays across, on and between shard boundaries, empty arrays", () => {
  const dir = path.join(tmp, "roundtrip");
  const state = sampleState();
  saveCheckpoint(dir, state, { shardBytes: SHARD });
  const files = shardFiles(dir);
  const shards = Math.ceil((SAMPLE_FLOATS * 4) / SHARD);
  assert.deepEqual(files, Array.from({ length: shards }, (_, i) => `weights-${String(i).padStart(5, "0")}.bin`));
  const sizes = files.map((f) => fs.statSync(path.join(dir, f)).size);
  assert.deepEqual(sizes, [...Array(shards - 1).fill(SHARD), SAMPLE_FLOATS * 4 - (shards - 1) * SHARD], "every shard full but the last");
  const doc = JSON.parse(fs.readFileSync(path.join(dir, "checkpoint.json"), "utf8"));
  assert.equal(doc.version, 2);
  assert.deepEqual(doc.shards, files.map((file, i) => ({ file, bytes: sizes[i] })), "the manifest lists each shard and its size");
  assert.deepEqual(doc.state.nested.long, { $f32: 32, length: 40 }, "an array's location: float offset and length in the shard stream");
  assert.deepEqual(loadCheckpoint(dir).state, state);

  // a state ending exactly on a shard boundary has no empty trailing shard; one without floats has no shard
  const even = { a: floats(16, 1), b: floats(32, 2) };
  saveCheckpoint(dir, even, { shardBytes: SHARD });
  assert.deepEqual(shardFiles(dir), ["weights-00000.bin", "weights-00001.bin", "weights-00002.bin"]);
  assert.deepEqual(loadCheckpoint(dir).state, even);
  const bare = { step: 7, empty: new Float32Array(0) };
  saveCheckpoint(dir, bare, { shardBytes: SHARD });
  assert.deepEqual(shardFiles(dir), []);
  assert.deepEqual(loadCheckpoint(dir).state, bare);
});

test("a truncated, missing or oversized shard is named, and a damaged manifest is not quoted", () => {
  const dir = path.join(tmp, "damaged");
  saveCheckpoint(dir, sampleState(), { shardBytes: SHARD });
  const shard = (i: number) => path.join(dir, `weights-0000${i}.bin`);
  const saved = fs.readFileSync(shard(2));
  fs.truncateSync(shard(2), 10);
  assert.throws(() => loadCheckpoint(dir), (e: Error) => e.name === "InputError" && e.message === `${shard(2)} is truncated (expected 64 bytes, found 10)`);
  fs.writeFileSync(shard(2), Buffer.concat([saved, Buffer.from("tail")]));
  assert.throws(() => loadCheckpoint(dir), /weights-00002\.bin is longer than its manifest entry \(expected 64 bytes, found 68\)/);
  fs.writeFileSync(shard(2), saved);
  fs.rmSync(shard(3));
  assert.throws(() => loadCheckpoint(dir), (e: Error) => e.name === "InputError" && e.message === `${shard(3)} is missing`);

  const json = path.join(dir, "checkpoint.json");
  const doc = JSON.parse(fs.readFileSync(json, "utf8"));
  doc.shards[0].file = "../../outside.bin";
  fs.writeFileSync(json, JSON.stringify(doc));
  assert.throws(() => loadCheckpoint(dir), /shard 0 should be named weights-00000\.bin/, "a manifest cannot point out of the folder");
  fs.writeFileSync(json, `{"version": 2, "secret-text-7f3a": `);
  assert.throws(
    () => loadCheckpoint(dir),
    (e: Error) => e.name === "InputError" && /checkpoint\.json: not valid JSON$/.test(e.message) && !e.message.includes("secret-text"),
  );
});

/** Writes `state` as a version 1 checkpoint, by hand: every array concatenated into one weights.bin. */
function writeV1(dir: string, state: Record<string, unknown>): void {
  const parts: Float32Array[] = [];
  let n = 0;
  const ref = (v: unknown): unknown => {
    if (v instanceof Float32Array) {
      parts.push(v);
      n += v.length;
      return { $f32: n - v.length, length: v.length };
    }
    if (Array.isArray(v)) return v.map(ref);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, ref(x)]));
    return v;
  };
  const packed = ref(state);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "weights.bin"), Buffer.concat(parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength))));
  fs.writeFileSync(path.join(dir, "checkpoint.json"), JSON.stringify({ version: 1, floats: n, state: packed }, null, 1));
}

test("a version 1 checkpoint (one weights.bin) still loads, and a short weights.bin is named", () => {
  const dir = path.join(tmp, "v1");
  const state = sampleState();
  writeV1(dir, state);
  assert.deepEqual(loadCheckpoint(dir).state, state);
  fs.truncateSync(path.join(dir, "weights.bin"), 12);
  assert.throws(() => loadCheckpoint(dir), (e: Error) => e.message === `${path.join(dir, "weights.bin")} is truncated (expected ${SAMPLE_FLOATS * 4} bytes, found 12)`);
});

test("a state of several shards moves between arrays and files without one buffer for the whole state", () => {
  const dir = path.join(tmp, "large");
  const shardBytes = 1 << 20;
  // ~3.4 shards: a 2.5-shard array (spanning three files) and smaller ones across the cuts
  const state = { enc: [floats(655_360, 1), floats(100_000, 2)], moments: { m: floats(70_000, 3), v: floats(70_000, 4) } };
  const all = [...state.enc, state.moments.m, state.moments.v];
  const total = all.reduce((s, a) => s + a.byteLength, 0);
  const bound = Math.min(shardBytes, 64 * 2 ** 20);
  const writes = mock.method(fs, "writeSync");
  try {
    saveCheckpoint(dir, state, { shardBytes });
  } finally {
    writes.mock.restore();
  }
  // (fd, buffer, offset, length) calls; checkpoint.json is written as a string
  const weightWrites = writes.mock.calls.map((c) => c.arguments as unknown[]).filter((a) => a[1] instanceof Uint8Array);
  assert.ok(weightWrites.length >= 4);
  for (const [, buf, , length] of weightWrites as [number, Uint8Array, number, number][]) {
    assert.ok(all.some((a) => a.buffer === buf.buffer), "written straight from the state's arrays, never a copy");
    assert.ok(length <= bound, `one write moves at most a shard (${length})`);
  }
  assert.equal(shardFiles(dir).length, Math.ceil(total / shardBytes));

  const reads = mock.method(fs, "readSync");
  const wholeFiles = mock.method(fs, "readFileSync");
  let loaded: typeof state;
  try {
    loaded = loadCheckpoint<typeof state>(dir).state;
  } finally {
    reads.mock.restore();
    wholeFiles.mock.restore();
  }
  assert.deepEqual(loaded, state);
  const out = [...loaded.enc, loaded.moments.m, loaded.moments.v];
  assert.ok(reads.mock.calls.length >= shardFiles(dir).length);
  for (const [, buf, , length] of reads.mock.calls.map((c) => c.arguments as unknown[]) as [number, Uint8Array, number, number][]) {
    assert.ok(out.some((a) => a.buffer === buf.buffer), "read straight into the returned arrays");
    assert.ok(length <= bound, `one read moves at most a shard (${length})`);
  }
  assert.deepEqual(wholeFiles.mock.calls.map((c) => path.basename(String(c.arguments[0]))), ["checkpoint.json"], "no shard read whole");
});

test("a run resumed from a sharded checkpoint continues its counters and weights", async () => {
  const shardBytes = 4096;
  const config = resolveConfig({ preset: "tiny", overrides: ["steps_count=16", "eval_interval=8", "eval_episodes=4"] });
  const runDir = path.join(tmp, "run-sharded");
  const { res: res1, events: firstEvents } = await trainThenCancel(config, runDir, 6, { checkpointShardBytes: shardBytes });
  assert.equal(res1.status, "cancelled");
  const last = path.join(runDir, "checkpoints", "last");
  const files = shardFiles(last);
  assert.ok(files.length > 3 && files.every((f) => fs.statSync(path.join(last, f)).size <= shardBytes), `${files.length} shards of at most ${shardBytes} bytes`);
  const ck = loadCheckpoint<TrainCheckpoint>(runDir).state;
  assert.equal(ck.learner.updates, res1.updates);
  assert.equal(ck.counters.step, res1.step);

  // the same checkpoint as version 1: a resume from either must train identically
  const v1 = path.join(tmp, "resume-v1");
  writeV1(v1, ck as unknown as Record<string, unknown>);
  const fromShards = collect();
  const res2 = await train(config, { runDir: path.join(tmp, "resumed-shards"), resumeFrom: runDir, onEvent: fromShards.onEvent, checkpointShardBytes: shardBytes });
  const fromV1 = collect();
  const res3 = await train(config, { runDir: path.join(tmp, "resumed-v1"), resumeFrom: v1, onEvent: fromV1.onEvent });
  assert.equal(res2.status, "completed");
  assert.equal(res2.updates, 16);
  const before = series(firstEvents, "qf_loss");
  const after = series(fromShards.events, "qf_loss");
  assert.ok(after[0].update > before.at(-1)!.update && after[0].step > before.at(-1)!.step, "updates and env steps continue");
  assert.deepEqual(after, series(fromV1.events, "qf_loss"), "the sharded and the single-file checkpoint resume to the same losses");
  const end = (r: typeof res2) => loadCheckpoint<TrainCheckpoint>(r.runDir).state;
  assert.deepEqual(end(res2).weights, end(res3).weights, "and the same final weights");
  assert.notDeepEqual(end(res2).weights, ck.weights, "training went on from the loaded weights");
});
