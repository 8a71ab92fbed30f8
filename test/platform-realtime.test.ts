/**
 * The /ui namespace's ordering promise, with a real socket.io server and client on a real
 * (SQLite) database: batches committed while a subscriber's catch-up is still running, and batches
 * published with a hole, still reach the browser as 1, 2, 3, … without gaps or repeats; batches
 * published late (already delivered) are not sent again.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Server } from "socket.io";
import { io as connect } from "socket.io-client";
import type { EngineEvent, RunBatchMsg, RunsStateMsg } from "../lib/contracts/index.ts";
import { openDb, type DbHandle } from "../server/db/client.ts";
import { migrate } from "../server/db/migrate.ts";
import { attachUi, type UiChannel } from "../server/realtime/ui.ts";
import { sqliteUrl, waitFor } from "./platform-helpers.ts";

let h: DbHandle;
let http: HttpServer;
let ioServer: Server;
let ui: UiChannel;
let url: string;

before(async () => {
  const dbUrl = sqliteUrl();
  await migrate(dbUrl);
  h = await openDb(dbUrl);
  http = createServer();
  ioServer = new Server(http);
  ui = attachUi(ioServer.of("/ui"), h, { coalesceMs: 20 });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", () => r()));
  url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});

after(async () => {
  ui.close();
  await new Promise<void>((r) => ioServer.close(() => r()));
  await h.close();
});

const ev = (seq: number): EngineEvent[] => [{ type: "metric", key: "qf_loss", step: seq, update: seq, value: seq, wall: seq }];

async function commit(runId: string, seq: number): Promise<void> {
  await h.write((db) => db.eventBatch.create({ data: { runId, seq, events: JSON.stringify(ev(seq)) } }));
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Exactly the batches from..to, each once, in order, no gaps, each with its own run id and events. */
function assertDeliveredOnce(batches: RunBatchMsg[], runId: string, from: number, to: number, what: string): void {
  assert.deepEqual(batches.map((b) => b.seq), range(from, to), `${what}: every seq once, in order, without gaps`);
  for (const b of batches) {
    assert.equal(b.runId, runId);
    assert.deepEqual(b.events, ev(b.seq), `${what}: batch ${b.seq} carries its own events, once`);
  }
}

test("catch-up then live, in order, while batches keep arriving", async (t) => {
  const runId = "rt-run";
  await h.write((db) => db.run.create({ data: { id: runId, name: "rt", config: "{}", envName: "babilong", task: "qa1", status: "running" } }));
  for (let s = 1; s <= 600; s++) await commit(runId, s);

  const client = connect(`${url}/ui`, { transports: ["websocket"] });
  t.after(() => client.close()); // also when an assertion fails (a live client keeps the process up)
  const got: number[] = [];
  const batches: RunBatchMsg[] = [];
  const changed: string[][] = [];
  client.on("run:batch", (b: RunBatchMsg) => {
    got.push(b.seq);
    batches.push(b);
  });
  client.on("runs:state", (m: RunsStateMsg) => changed.push([...m.runs.map((r) => r.id), ...m.gone]));
  await waitFor("connect", () => client.connected, 10_000, 20);

  // subscribe, and while the catch-up (600 stored batches, read 200 at a time) runs, commit and
  // publish more, one of them published out of order (its predecessor is published late)
  const subscribed = client.timeout(10_000).emitWithAck("subscribe", { runId, afterSeq: 0 });
  for (let s = 601; s <= 700; s++) {
    await commit(runId, s);
    if (s === 650) continue;
    ui.batch({ runId, seq: s, events: ev(s) });
    if (s === 660) ui.batch({ runId, seq: 650, events: ev(650) });
  }
  assert.deepEqual(await subscribed, { ok: true });
  await waitFor("all batches", () => got.length >= 700, 20_000, 20);
  assertDeliveredOnce(batches, runId, 1, 700, "catch-up then live");

  // a hole in what is published is filled from the database
  await commit(runId, 701);
  await commit(runId, 702);
  ui.batch({ runId, seq: 702, events: ev(702) });
  await waitFor("the hole filled", () => got.length >= 702, 10_000, 20);
  assert.deepEqual(got.slice(700), [701, 702]);
  ui.batch({ runId, seq: 701, events: ev(701) }); // late: already delivered, must not be repeated
  // a marker published after the late batch: one socket delivers in order, so once the marker is
  // here anything sent for the late batch would be here too
  await commit(runId, 703);
  ui.batch({ runId, seq: 703, events: ev(703) });
  await waitFor("the marker batch 703", () => got.includes(703), 10_000, 20);
  assertDeliveredOnce(batches, runId, 1, 703, "after a late publish");

  // a re-subscribe from an older seq catches up from there
  got.length = 0;
  batches.length = 0;
  await client.timeout(10_000).emitWithAck("subscribe", { runId, afterSeq: 695 });
  await waitFor("the catch-up", () => got.length >= 8, 10_000, 20);
  // and live again after the catch-up, nothing repeated from it
  await commit(runId, 704);
  ui.batch({ runId, seq: 704, events: ev(704) });
  ui.batch({ runId, seq: 700, events: ev(700) }); // late again, after the catch-up
  await commit(runId, 705);
  ui.batch({ runId, seq: 705, events: ev(705) });
  await waitFor("the live batches after the catch-up", () => got.includes(705), 10_000, 20);
  assertDeliveredOnce(batches, runId, 696, 705, "re-subscribe from 695");

  ui.changed([runId]);
  ui.changed([runId, "other"]);
  await waitFor("runs:state", () => changed.length > 0, 5_000, 20);
  assert.deepEqual(changed, [[runId, "other"]], "coalesced into one message: the run as stored, and the unknown id as gone");

  const bad = await client.timeout(5_000).emitWithAck("subscribe", { afterSeq: -1 });
  assert.equal(bad.ok, false);
  client.close();
});
