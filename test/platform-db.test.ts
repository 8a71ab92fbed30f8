/**
 * The dashboard's database layer on SQLite and on PostgreSQL (a throwaway server started here):
 * migrations, validation that writes nothing, the atomic claim under contention, idempotent and
 * ordered batch ingestion, lease expiry, cancel/resume/clone, listing, and series bucketing.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { EngineEvent, SeriesPoint } from "../lib/contracts/index.ts";
import { openDb, type DbHandle } from "../server/db/client.ts";
import { migrate } from "../server/db/migrate.ts";
import { ApiError } from "../server/runs/errors.ts";
import { ingestBatch } from "../server/runs/ingest.ts";
import { MAX_ATTEMPTS, claimRun, expireLeases, heartbeat, queuedRunIds } from "../server/runs/scheduler.ts";
import { getMetrics } from "../server/runs/queries.ts";
import { bucketSeries } from "../lib/contracts/index.ts";
import { cancelRun, cloneRun, createRun, getRun, listRuns, patchRun, resumeRun } from "../server/runs/service.ts";
import { resolveConfig } from "../server/qrag/config/config.ts";
import { sqliteUrl, startPostgres, uniqueDbName } from "./platform-helpers.ts";

const tiny = () => resolveConfig({ preset: "tiny" }) as unknown as Record<string, unknown>;

async function rejects400(p: Promise<unknown>, fields: string[]): Promise<Record<string, string>> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ApiError, `expected ApiError, got ${(e as Error).message}`);
    assert.equal(e.status, 400);
    for (const f of fields) assert.ok(e.fieldErrors && f in e.fieldErrors, `field ${f} named in ${JSON.stringify(e.fieldErrors)}`);
    return e.fieldErrors!;
  }
  assert.fail("expected a 400");
}

const metric = (key: string, step: number, value: number): EngineEvent => ({ type: "metric", key: key as "qf_loss", step, update: step, value, wall: step / 10 });

function suite(label: string, makeUrl: () => Promise<string>, opts: { skip?: string; secondNode?: boolean } = {}) {
  describe(label, { skip: opts.skip }, () => {
    let url: string;
    let h: DbHandle;
    let h2: DbHandle;
    before(async () => {
      url = await makeUrl();
      const first = await migrate(url);
      assert.deepEqual(first, ["0001_init", "0002_drop_sweep_point", "0003_sweeps_dashboards", "0004_auth", "0005_dashboard_owner", "0006_run_queue_jobs", "0007_run_jobs", "0008_job_output_submit_retries"]);
      assert.deepEqual(await migrate(url), [], "second migration run applies nothing");
      h = await openDb(url);
      // PostgreSQL: a second pool stands for a second dashboard node. SQLite has one writer
      // process by design (one connection; a second one in-process would busy-wait the loop).
      h2 = opts.secondNode ? await openDb(url) : h;
    });
    after(async () => {
      await h?.close();
      if (h2 !== h) await h2?.close();
    });

    test("bad configs and bodies answer 400 naming the fields, and write nothing", async () => {
      const before = await h.prisma.run.count();
      const bad = tiny();
      bad.steps_count = -3;
      (bad.envs as Record<string, unknown>).task = "qa9";
      (bad.algo as Record<string, unknown>).bogus = 1;
      const fe = await rejects400(createRun(h, { config: bad }), ["config.steps_count", "config.envs.task", "config.algo.bogus"]);
      assert.match(fe["config.envs.task"], /qa1\.\.qa5/);
      assert.equal(fe["config.steps_count"], "must be ≥ 1");
      await rejects400(createRun(h, {}), ["config"]);
      await rejects400(createRun(h, { preset: "nope" }), ["preset"]);
      await rejects400(createRun(h, { config: tiny(), parentId: "missing" }), ["parentId"]);
      await rejects400(createRun(h, { preset: "tiny", overrides: ["not an override"] }), ["overrides.0"]);
      assert.equal(await h.prisma.run.count(), before);
    });

    test("two concurrent claims: exactly one wins, on one node and across two", async () => {
      const ids: string[] = [];
      for (let i = 0; i < 6; i++) ids.push((await createRun(h, { config: tiny(), name: `claim-${i}` })).id);
      for (const id of ids) {
        const [a, b, c] = await Promise.all([claimRun(h, id, "w-a", 10_000), claimRun(h2, id, "w-b", 10_000), claimRun(h, id, "w-c", 10_000)]);
        const winners = [a, b, c].filter(Boolean);
        assert.equal(winners.length, 1, `one winner for ${id}`);
        const run = await getRun(h, id);
        assert.equal(run.status, "running");
        assert.equal(run.attempt, 1);
        assert.ok(run.startedAt);
        assert.equal(run.workerId, ["w-a", "w-b", "w-c"][[a, b, c].findIndex(Boolean)]);
      }
      assert.ok(!(await queuedRunIds(h, 100)).some((id) => ids.includes(id)));
    });

    test("an interrupted run_end (its worker shut down) queues the run again from its last checkpoint, without counting the attempt; a cancel asked meanwhile wins", async () => {
      const { id } = await createRun(h, { config: tiny(), name: "interrupted" });
      assert.ok(await claimRun(h, id, "w1", 10_000));
      const ck = { type: "checkpoint", step: 20, update: 20, path: "/tmp/ck-interrupted/last", best: false } as EngineEvent;
      const end = { type: "run_end", status: "interrupted", step: 20, update: 20, error: "worker w1 shut down (SIGTERM); queued again to resume from its last checkpoint" } as EngineEvent;
      const r = await ingestBatch(h, { runId: id, seq: 1, events: [metric("qf_loss", 20, 1.1), ck, end] }, "w1");
      assert.equal(r.ended, "interrupted");
      let run = await getRun(h, id);
      assert.deepEqual([run.status, run.workerId, run.attempt, run.finishedAt], ["queued", null, 0, null]);
      assert.equal((await h.prisma.run.findUnique({ where: { id }, select: { resumeFrom: true } }))?.resumeFrom, "/tmp/ck-interrupted/last");
      assert.ok((await queuedRunIds(h, 100)).includes(id), "offered to workers again");
      assert.ok((await h.prisma.logLine.findMany({ where: { runId: id } })).some((l) => /shut down/.test(l.message)));
      // taken up again, then interrupted while the user's cancel is pending: cancelled
      assert.ok(await claimRun(h, id, "w2", 10_000));
      await cancelRun(h, id);
      await ingestBatch(h, { runId: id, seq: 2, events: [{ ...end, error: "worker w2 shut down" } as EngineEvent] }, "w2");
      run = await getRun(h, id);
      assert.equal(run.status, "cancelled");
      assert.ok(run.finishedAt);
    });

    test("ingestion is idempotent on (run, seq), ordered, and only from the run's worker", async () => {
      const { id } = await createRun(h, { config: tiny(), name: "ingest" });
      assert.ok(await claimRun(h, id, "w1", 10_000));
      const b1 = {
        runId: id,
        seq: 1,
        events: [
          { type: "run_start", meta: { name: "x", backend: "wasm", device: "cpu (test)", engineVersion: "0", config: {}, startedAt: new Date().toISOString() } },
          metric("qf_loss", 10, 1.5),
          metric("qf_loss", 20, 1.2),
          { type: "log", level: "info", message: "hello" },
          { type: "progress", phase: "train", done: 2, total: 60 },
        ] as EngineEvent[],
      };
      const r1 = await ingestBatch(h, b1, "w1");
      assert.deepEqual([r1.ok, r1.stored], [true, true]);
      const again = await ingestBatch(h, b1, "w1");
      assert.deepEqual([again.ok, again.stored, again.duplicate], [true, false, true]);
      // a gap is refused and writes nothing
      const b3 = { runId: id, seq: 3, events: [metric("qf_loss", 40, 0.9)] };
      const gap = await ingestBatch(h, b3, "w1");
      assert.equal(gap.ok, false);
      assert.match(gap.error ?? "", /expected seq 2/);
      // another worker may not write into this attempt
      const stranger = await ingestBatch(h, { runId: id, seq: 2, events: [metric("qf_loss", 30, 0.1)] }, "w2");
      assert.deepEqual([stranger.ok, stranger.stop], [false, true]);
      // same (key, step) again (a resumed attempt re-sends points after its checkpoint): skipped
      const b2 = { runId: id, seq: 2, events: [metric("qf_loss", 20, 9.9), metric("qf_loss", 30, 1.0), { type: "checkpoint", step: 30, update: 30, path: "/tmp/ck/last", best: false, evalReturn: 0.5 }] as EngineEvent[] };
      assert.equal((await ingestBatch(h, b2, "w1")).ok, true);
      assert.equal((await ingestBatch(h, b3, "w1")).ok, true);
      assert.equal((await ingestBatch(h, b2, "w1")).duplicate, true);
      const end = await ingestBatch(h, { runId: id, seq: 4, events: [{ type: "run_end", status: "completed", step: 40, update: 40 }] }, "w1");
      assert.equal(end.ended, "completed");

      const pts = await h.prisma.metricPoint.findMany({ where: { runId: id }, orderBy: { step: "asc" } });
      assert.deepEqual(pts.map((p) => [p.step, p.value]), [[10, 1.5], [20, 1.2], [30, 1.0], [40, 0.9]]);
      assert.deepEqual((await h.prisma.eventBatch.findMany({ where: { runId: id }, orderBy: { seq: "asc" } })).map((b) => b.seq), [1, 2, 3, 4]);
      assert.equal(await h.prisma.logLine.count({ where: { runId: id } }), 1);
      assert.equal(await h.prisma.checkpoint.count({ where: { runId: id } }), 1);
      const run = await getRun(h, id);
      assert.equal(run.status, "completed");
      assert.equal(run.backend, "wasm");
      assert.equal(run.device, "cpu (test)");
      assert.equal(run.lastSeq, 4);
      assert.deepEqual([run.progressDone, run.progressTotal], [2, 60]);
      assert.equal(run.summary.qf_loss, 0.9);
      assert.ok(run.finishedAt);
      // after the end: duplicates still acknowledge, new batches are refused with stop
      assert.equal((await ingestBatch(h, b1, "w1")).ok, true);
      const late = await ingestBatch(h, { runId: id, seq: 5, events: [] }, "w1");
      assert.deepEqual([late.ok, late.stop], [false, true]);
      // concurrent identical batches on two nodes: one write, both acknowledged
      const { id: id2 } = await createRun(h, { config: tiny(), name: "ingest-2" });
      assert.ok(await claimRun(h, id2, "w1", 10_000));
      const dup = { runId: id2, seq: 1, events: [metric("qf_loss", 1, 1)] };
      const [x, y] = await Promise.all([ingestBatch(h, dup, "w1"), ingestBatch(h2, dup, "w1")]);
      assert.ok(x.ok && y.ok, `${JSON.stringify(x)} ${JSON.stringify(y)}`);
      assert.equal([x, y].filter((r) => r.stored).length, 1);
      assert.equal(await h.prisma.metricPoint.count({ where: { runId: id2 } }), 1);
    });

    test("lease expiry: requeue from the last checkpoint (or the start), fail after MAX_ATTEMPTS; heartbeats extend", async () => {
      const withCk = (await createRun(h, { config: tiny(), name: "lease-ck" })).id;
      const without = (await createRun(h, { config: tiny(), name: "lease-none" })).id;
      const cancelling = (await createRun(h, { config: tiny(), name: "lease-cancel" })).id;
      const doomed = (await createRun(h, { config: tiny(), name: "lease-doomed" })).id;
      for (const id of [withCk, without, cancelling, doomed]) assert.ok(await claimRun(h, id, "wl", 1_000));
      await h.prisma.run.update({ where: { id: doomed }, data: { attempt: MAX_ATTEMPTS } });
      await ingestBatch(h, { runId: withCk, seq: 1, events: [{ type: "checkpoint", step: 5, update: 5, path: "/x/checkpoints/last", best: false }, { type: "checkpoint", step: 5, update: 5, path: "/x/checkpoints/best", best: true }] }, "wl");
      await cancelRun(h, cancelling);
      // a heartbeat moves the lease past "now + 1 s"
      const hb = await heartbeat(h, "wl", [withCk, without, cancelling, doomed, "someone-elses"], 60_000);
      assert.deepEqual(hb.stop, ["someone-elses"]);
      assert.deepEqual(hb.cancel, [cancelling]);
      assert.deepEqual(await expireLeases(h, new Date(Date.now() + 5_000)), []);
      const expired = await expireLeases(h, new Date(Date.now() + 120_000));
      const by = Object.fromEntries(expired.map((e) => [e.runId, e]));
      assert.equal(by[withCk].outcome, "queued");
      assert.equal(by[withCk].resumeFrom, "/x/checkpoints/last");
      // no checkpoint yet: start over (ingestion drops the points the new attempt sends again)
      assert.equal(by[without].outcome, "queued");
      assert.equal(by[without].resumeFrom, null);
      assert.equal(by[cancelling].outcome, "cancelled");
      assert.equal(by[doomed].outcome, "failed");
      const a = await getRun(h, withCk);
      assert.deepEqual([a.status, a.resumeFrom, a.workerId], ["queued", "/x/checkpoints/last", null]);
      const b = await getRun(h, doomed);
      assert.equal(b.status, "failed");
      assert.match(b.error ?? "", new RegExp(`worker lost.*gave up after ${MAX_ATTEMPTS} attempts`));
      assert.deepEqual([(await getRun(h, without)).status, (await getRun(h, without)).resumeFrom], ["queued", null]);
      // the next attempt continues the sequence and counts the attempt
      const again = await claimRun(h, withCk, "wl2", 10_000);
      assert.deepEqual([again?.attempt, again?.lastSeq, again?.resumeFrom], [2, 1, "/x/checkpoints/last"]);
      assert.equal((await ingestBatch(h, { runId: withCk, seq: 2, events: [] }, "wl2")).ok, true);
      assert.equal((await ingestBatch(h, { runId: withCk, seq: 3, events: [] }, "wl")).stop, true, "the lost worker is told to stop");
    });

    test("a resumed attempt's re-sent points and episodes are dropped from what is stored and published", async () => {
      const id = (await createRun(h, { config: tiny(), name: "resent" })).id;
      assert.ok(await claimRun(h, id, "wa", 60_000));
      const m = (step: number, value: number): EngineEvent => ({ type: "metric", key: "qf_loss", step, update: step, value, wall: step });
      const ep = (update: number): EngineEvent => ({ type: "episode", phase: "eval", step: update, update, record: {
        id: "s1", question: "q", answer: "a", sf_idx: [1], pred_idx: [1], q_values: [0.5], sf_texts: ["x"], pred_texts: ["x"], return: 1, num_chunks: 4, oracle_stop: true,
        metrics: { precision: 1, recall: 1, f1: 1, coverage: 1 }, filtered: { precision: 1, recall: 1, f1: 1, coverage: 1, threshold: 0.5, kept: 1 }, steps: [],
      } });
      assert.equal((await ingestBatch(h, { runId: id, seq: 1, events: [m(1, 0.5), m(2, 0.4), ep(2), m(3, 0.3)] }, "wa")).ok, true);
      await h.write((db) => db.run.update({ where: { id }, data: { status: "queued", workerId: null } }));
      assert.ok(await claimRun(h, id, "wb", 60_000));
      // the new attempt restarts behind the stored steps, with other values (its own timing)
      const r = await ingestBatch(h, { runId: id, seq: 2, events: [m(2, 9), ep(2), m(3, 9), m(4, 0.2)] }, "wb");
      assert.equal(r.stored, true);
      assert.deepEqual(r.events, [m(4, 0.2)]);
      const stored = await h.prisma.eventBatch.findUnique({ where: { runId_seq: { runId: id, seq: 2 } } });
      assert.deepEqual(JSON.parse(stored!.events), [m(4, 0.2)]);
      const pts = await h.prisma.metricPoint.findMany({ where: { runId: id }, orderBy: { step: "asc" }, select: { step: true, value: true } });
      assert.deepEqual(pts, [{ step: 1, value: 0.5 }, { step: 2, value: 0.4 }, { step: 3, value: 0.3 }, { step: 4, value: 0.2 }]);
      assert.equal(await h.prisma.episode.count({ where: { runId: id } }), 1);
    });

    test("cancel, resume and clone", async () => {
      const q = await createRun(h, { config: tiny(), name: "to-cancel", tags: ["a", "a", " b "] });
      assert.deepEqual(q.tags, ["a", "b"]);
      assert.equal((await cancelRun(h, q.id)).status, "cancelled");
      await assert.rejects(cancelRun(h, q.id), (e: ApiError) => e.status === 409);
      await assert.rejects(resumeRun(h, q.id), (e: ApiError) => e.status === 409 && /no checkpoint/.test(e.message));
      await assert.rejects(getRun(h, "nope"), (e: ApiError) => e.status === 404);

      const r = await createRun(h, { config: tiny(), name: "to-resume" });
      await claimRun(h, r.id, "wr", 10_000);
      const running = await cancelRun(h, r.id);
      assert.equal(running.status, "running", "a running run stays running until its worker stops");
      await ingestBatch(h, { runId: r.id, seq: 1, events: [{ type: "checkpoint", step: 9, update: 9, path: "/r/checkpoints/last", best: false }, { type: "run_end", status: "cancelled", step: 9, update: 9 }] }, "wr");
      const cancelled = await getRun(h, r.id);
      assert.equal(cancelled.status, "cancelled");
      assert.equal(cancelled.checkpoints.length, 1);
      const resumed = await resumeRun(h, r.id);
      assert.deepEqual([resumed.status, resumed.resumeFrom, resumed.id], ["queued", "/r/checkpoints/last", r.id]);

      const clone = await cloneRun(h, r.id, { config: { steps_count: 7, envs: { task: "qa2" } }, tags: ["c"] });
      assert.equal(clone.parentId, r.id);
      const cfg = clone.config as { steps_count: number; envs: { task: string; num_sentences: number } };
      assert.equal(cfg.steps_count, 7);
      assert.equal(cfg.envs.task, "qa2");
      assert.equal(cfg.envs.num_sentences, 20, "untouched keys come from the source");
      const n = await h.prisma.run.count();
      await rejects400(cloneRun(h, r.id, { config: { batch_size: 7 } }), ["config.batch_size"]);
      assert.equal(await h.prisma.run.count(), n);
      const patched = await patchRun(h, clone.id, { notes: "hi", tags: ["x"] });
      assert.deepEqual([patched.notes, patched.tags], ["hi", ["x"]]);
    });

    test("list: filter, search, tag, sort, page, total", async () => {
      const mk = async (name: string, tags: string[]) => (await createRun(h, { config: tiny(), name, tags })).id;
      const a = await mk("list-alpha", ["sweep"]);
      await mk("list-beta", ["sweep", "qa1"]);
      await mk("list-gamma", []);
      const all = await listRuns(h, { q: "list-", sort: "name", order: "asc" });
      assert.deepEqual(all.runs.map((r) => r.name), ["list-alpha", "list-beta", "list-gamma"]);
      assert.equal(all.total, 3);
      assert.equal((await listRuns(h, { q: "LIST-ALPHA" })).runs[0]?.id, a, "search ignores case");
      assert.equal((await listRuns(h, { q: "list-", tag: "sweep" })).total, 2);
      const page = await listRuns(h, { q: "list-", sort: "name", order: "desc", limit: 1, offset: 1 });
      assert.deepEqual([page.runs.map((r) => r.name), page.total], [["list-beta"], 3]);
      assert.ok((await listRuns(h, { status: ["completed"] })).runs.every((r) => r.status === "completed"));
      const byDur = await listRuns(h, { sort: "duration" });
      assert.equal(byDur.runs.length, Math.min(100, byDur.total));
    });

    test("metric series: buckets keep spikes and are deterministic", async () => {
      const { id } = await createRun(h, { config: tiny(), name: "series" });
      await claimRun(h, id, "ws", 10_000);
      const events: EngineEvent[] = [];
      for (let s = 1; s <= 3000; s++) events.push(metric("qf_loss", s, s === 1234 ? 1000 : Math.sin(s / 50)));
      assert.ok((await ingestBatch(h, { runId: id, seq: 1, events }, "ws")).ok);
      const m1 = await getMetrics(h, id, { keys: ["qf_loss", "eval_f1"], width: 100 });
      const m2 = await getMetrics(h, id, { keys: ["qf_loss", "eval_f1"], width: 100 });
      assert.deepEqual(m1, m2);
      assert.equal(m1.lastSeq, 1);
      assert.deepEqual(m1.series.eval_f1, []);
      const s = m1.series.qf_loss;
      assert.ok(s.length <= 100 && s.length >= 90, `bucket count ${s.length}`);
      assert.equal(Math.max(...s.map((p) => p.max!)), 1000, "the spike survives as a bucket max");
      assert.equal(s.at(-1)!.step, 3000, "the last point is kept");
      const raw = await getMetrics(h, id, { keys: ["qf_loss"], width: 5000 });
      assert.equal(raw.series.qf_loss.length, 3000);
      // the database's bucketing (step axis) is bucketSeries exactly, for any width, on uneven steps too
      const uneven: EngineEvent[] = [];
      for (let s = 1, k = 0; k < 2500; k++, s += 1 + ((k * 7919) % 13)) uneven.push(metric("lr", s, Math.cos(k / 37) * (k % 97 === 0 ? 50 : 1)));
      assert.ok((await ingestBatch(h, { runId: id, seq: 2, events: uneven }, "ws")).ok);
      const rawLr = (await getMetrics(h, id, { keys: ["lr"], width: 20_000 })).series.lr;
      assert.equal(rawLr.length, 2500);
      for (const width of [1, 7, 100, 997, 2499]) {
        assert.deepEqual((await getMetrics(h, id, { keys: ["lr"], width })).series.lr, bucketSeries(rawLr, width), `width ${width}`);
        assert.deepEqual((await getMetrics(h, id, { keys: ["qf_loss"], width })).series.qf_loss, bucketSeries(raw.series.qf_loss, width), `width ${width}`);
      }
    });
  });
}

test("bucketSeries (pure): short series unchanged, long ones bounded, spikes kept", () => {
  const pts: SeriesPoint[] = Array.from({ length: 10_000 }, (_, i) => ({ step: i * 3, update: i, wall: i / 7, value: i === 4321 ? -50 : 1 }));
  const b = bucketSeries(pts, 200);
  assert.ok(b.length <= 200);
  assert.equal(Math.min(...b.map((p) => p.min!)), -50);
  assert.deepEqual(b, bucketSeries(pts, 200));
  assert.deepEqual(bucketSeries(pts.slice(0, 50), 200), pts.slice(0, 50));
  const byWall = bucketSeries(pts, 64, "wall");
  assert.ok(byWall.length <= 64);
  assert.deepEqual(bucketSeries([], 10), []);
});

test("bucketSeries composes: a reloaded answer plus live appends, bucketed again, equals bucketing every raw point, at any length (10× the chart and more)", () => {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const full: SeriesPoint[] = [];
  for (let i = 0, step = 0; i < 20_000; i++, step += 1 + Math.floor(rand() * 5)) full.push({ step, update: i, wall: step / 3.7, value: rand() < 0.001 ? 100 : rand() });
  for (const x of ["step", "wall"] as const) {
    for (const width of [50, 600, 800]) {
      for (const cut of [10, 700, 3000, 9999, 19_000]) {
        // the page loads once `cut` points exist (the server buckets them), then the rest stream in raw
        const live = bucketSeries([...bucketSeries(full.slice(0, cut), width, x), ...full.slice(cut)], width, x);
        assert.deepEqual(live, bucketSeries(full, width, x), `${x}, width ${width}, reload at ${cut}`);
      }
      assert.ok(bucketSeries(full, width, x).length <= width && bucketSeries(full, width, x).length > width / 2 - 1, "at most the width, at least half of it");
    }
  }
});

suite("SQLite", async () => sqliteUrl());

const pg = await startPostgres();
if ("skip" in pg) console.log(`# ${pg.skip}`);
else after(() => pg.stop());
suite("PostgreSQL", async () => ("skip" in pg ? "" : pg.createDatabase(uniqueDbName("qrag_db"))), "skip" in pg ? { skip: pg.skip } : { secondNode: true });
