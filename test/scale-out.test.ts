/**
 * Scale-out on PostgreSQL (server/realtime/cluster.ts): dashboard nodes sharing one database relay
 * live events, cancels and new work through @socket.io/postgres-adapter.
 *   1. the relay itself: two socket.io servers in this process, each with the adapter on the same
 *      database; what one node publishes reaches the other's local notifier and scheduler, once,
 *      large batches included (they travel through the adapter's attachments table);
 *   2. end to end: two dashboard processes A and B, a real worker connected to A; a /ui client on
 *      B sees the run's batches in order with no gap or duplicate, equal to B's stored metrics; a
 *      cancel POSTed to B stops the run on A's worker; B lists A's worker.
 * Skipped with the reason when no PostgreSQL server can be started (startPostgres).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Server } from "socket.io";
import type { EngineEvent, MetricsDto, RunBatchMsg, RunDetailDto, WorkerDto } from "../lib/contracts/index.ts";
import { attachPostgresAdapter, type Cluster } from "../server/realtime/cluster.ts";
import type { Scheduler } from "../server/runs/scheduler.ts";
import { GiveUp, startPostgres, uniqueDbName, waitFor, type Pg } from "./platform-helpers.ts";
import { Proc, api, getRun, startNode, startWorker, UiStream, waitNodesMeet, type Node } from "./scale-out-helpers.ts";

const pg = await startPostgres();
const skip = "skip" in pg ? pg.skip : undefined;

describe("scale-out on PostgreSQL", { skip, timeout: 10 * 60_000 }, () => {
  const db = pg as Pg;
  after(() => db.stop());

  test("nodes relay batches, run changes, kick and cancel to each other, once", async () => {
    const url = await db.createDatabase(uniqueDbName("relay"));
    type Heard = { batches: RunBatchMsg[]; changed: string[][]; kicks: number; cancels: [string, string | null][] };
    const nodes: { io: Server; cluster: Cluster; heard: Heard; notifier: ReturnType<Cluster["notifier"]>; scheduler: ReturnType<Cluster["scheduler"]> }[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const io = new Server(createServer().listen(0, "127.0.0.1"));
        const cluster = await attachPostgresAdapter(io, url, () => {});
        const heard: Heard = { batches: [], changed: [], kicks: 0, cancels: [] };
        const notifier = cluster.notifier({ batch: (m) => heard.batches.push(m), changed: () => {}, changedElsewhere: (ids) => heard.changed.push([...ids]) });
        const local = { kick: () => heard.kicks++, cancel: (r: string, w: string | null) => heard.cancels.push([r, w]) } as unknown as Scheduler;
        nodes.push({ io, cluster, heard, notifier, scheduler: cluster.scheduler(local) });
      }
      const [a, b] = nodes;
      for (const n of nodes) await waitFor("the nodes to hear each other", async () => (await n.cluster.nodes()) === 2, 20_000, 50);

      const events = (n: number): EngineEvent[] => Array.from({ length: n }, (_, i) => ({ type: "metric", key: "qf_loss", step: i, update: i, value: i / 7, wall: 1 }) as EngineEvent);
      const small: RunBatchMsg = { runId: "r1", seq: 1, events: events(3) };
      const large: RunBatchMsg = { runId: "r1", seq: 2, events: events(400) }; // over NOTIFY's 8000 bytes
      a.notifier.batch(small);
      a.notifier.batch(large);
      a.notifier.changed(["r1"], "progress"); // not relayed: other nodes' cached lists may lag progress
      a.notifier.changed(["r1"], "status");
      b.scheduler.cancel("r1", "w-on-a");
      b.scheduler.kick();

      await waitFor("the relayed messages", () => b.heard.batches.length === 2 && b.heard.changed.length === 1 && a.heard.cancels.length === 1 && a.heard.kicks === 1, 20_000, 50);
      assert.deepEqual(
        b.heard.batches.sort((x, y) => x.seq - y.seq),
        [small, large],
      );
      assert.deepEqual(b.heard.changed, [["r1"]]);
      assert.deepEqual(a.heard.cancels, [["r1", "w-on-a"]]);
      // each node acts on its own calls locally, and a relay does not come back to its sender
      assert.equal(a.heard.batches.length, 2);
      assert.equal(b.heard.cancels.length, 1);
      assert.equal(b.heard.kicks, 1);
      assert.equal(a.heard.changed.length, 0);
    } finally {
      for (const n of nodes) {
        await new Promise<void>((r) => n.io.close(() => r()));
        await n.cluster.close();
      }
    }
  });

  describe("two dashboard processes, a worker on A, a browser stand-in on B", () => {
    let a: Node;
    let b: Node;
    let worker: Proc;
    const procs = () => [a?.proc, b?.proc, worker].filter(Boolean);
    const tails = () => procs().map((p) => p.tail()).join("\n");

    before(async () => {
      const url = await db.createDatabase(uniqueDbName("scale"));
      a = await startNode("a", url, { next: false });
      b = await startNode("b", url, { next: false });
      await waitNodesMeet([a, b]);
      worker = startWorker(a, "on-a");
      await waitFor("the worker online, as B sees it", async () => {
        if (!worker.alive()) throw new GiveUp(`worker exited\n${worker.tail()}`);
        const ws = (await api<WorkerDto[]>(b, "GET", "/api/workers")).body;
        return ws.some((w) => w.name === "on-a" && w.status === "idle");
      }, 60_000);
    });
    after(async () => {
      for (const p of procs().reverse()) await p.stop();
    });

    const createRun = async (name: string, steps: number): Promise<RunDetailDto> => {
      const r = await api<RunDetailDto>(b, "POST", "/api/runs", { preset: "tiny", overrides: [`steps_count=${steps}`, "eval_interval=10", "eval_episodes=8", "eval_episodes_logged=2"], name });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body;
    };
    const waitStatus = (id: string, want: string[], timeout = 120_000) =>
      waitFor(`run ${id} to be ${want.join("|")}`, async () => {
        const r = await getRun(b, id);
        return want.includes(r.status) ? r : null;
      }, timeout, 100).catch((e: Error) => assert.fail(`${e.message}\n${tails()}`));

    test("B's /ui subscriber gets the batches of a run executed on A: in order, none missing or twice, as stored", async () => {
      const ui = new UiStream(b);
      try {
        const run = await createRun("scale-out-stream", 30);
        await ui.subscribe(run.id, 0);
        const done = await waitStatus(run.id, ["completed", "failed", "cancelled"]);
        assert.equal(done.status, "completed", `${done.error}\n${tails()}`);
        assert.equal(done.workerName, "on-a", "A's worker ran it");
        await waitFor("B's stream to reach the last batch", () => ui.lastSeq(run.id) === done.lastSeq, 20_000, 50);
        assert.deepEqual(ui.violations, []);
        assert.deepEqual(ui.batches.get(run.id)!.map((x) => x.seq), Array.from({ length: done.lastSeq }, (_, i) => i + 1));
        const streamed = ui.events(run.id).flatMap((e) => (e.type === "metric" ? [`${e.key}@${e.step}`] : []));
        assert.ok(streamed.length > 10, `streamed points: ${streamed.length}`);
        const m = (await api<MetricsDto>(b, "GET", `/api/runs/${run.id}/metrics?width=20000`)).body;
        const stored = Object.entries(m.series).flatMap(([key, pts]) => pts.map((p) => `${key}@${p.step}`));
        assert.deepEqual(new Set(streamed), new Set(stored), "what B streamed is what B's API returns");
        assert.equal(streamed.length, stored.length, "no point streamed twice");
      } finally {
        ui.close();
      }
    });

    test("a cancel POSTed to B stops the run on A's worker", async () => {
      const run = await createRun("scale-out-cancel", 400);
      await waitFor(`run ${run.id} to report progress`, async () => (await getRun(b, run.id)).progressDone > 0, 120_000, 100).catch((e: Error) => assert.fail(`${e.message}\n${tails()}`));
      const c = await api<RunDetailDto>(b, "POST", `/api/runs/${run.id}/cancel`);
      assert.equal(c.status, 200, JSON.stringify(c.body));
      const cancelled = await waitStatus(run.id, ["cancelled", "completed", "failed"], 60_000);
      assert.equal(cancelled.status, "cancelled", cancelled.error ?? "");
      assert.ok(cancelled.progressDone < 400, "stopped before the end");
      assert.ok(worker.lines.some((l) => l.includes(run.id) && /cancel/i.test(l)), `A's worker logged the cancel\n${worker.tail()}`);
    });
  });
});
