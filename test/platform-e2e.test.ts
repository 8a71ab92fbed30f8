/**
 * End to end, with real parts only: the real dashboard server (server/main.ts, Next production
 * build + socket.io on one port) on a temporary database, real trainer workers
 * (server/worker/main.ts) running the engine's `tiny` preset for a bounded number of steps, a
 * socket.io client on /ui standing in for the browser, and REST through the server's API router (server/api/router.ts).
 *
 * On SQLite and on PostgreSQL (a throwaway server; skipped with a message when PostgreSQL is not
 * installed, a failure when CI=true):
 *   1. default mode: the server spawns its local worker; queued → running → completed; batches
 *      arrive over /ui in order without gaps and match the stored series;
 *   2. kill -9 the server mid-run and restart it: the worker resends what was not acknowledged;
 *      no acknowledged point is lost and none is duplicated (checked against the engine's own
 *      metrics.jsonl);
 *   3. kill -9 the worker: its lease expires and the run resumes from its checkpoint on another;
 *   4. cancel leaves a checkpoint; resume continues the same curves;
 *   5. bad payloads get 400 naming the fields and write nothing; unknown ids 404.
 *
 * Each test starts its own server (and workers) on its own fresh database and data folder, and
 * stops them afterwards, so any test can run alone or in any order. The server and the workers run
 * as bundles of the same sources (test/test-bundles.ts: each start of a server, a worker, its
 * backend probe and its engine costs ~2 s of CPU less than under tsx), the server with Next's
 * production build linked beside it; the local worker of scenarios 1 and 5 is the server's own
 * (the worker's bundle beside the server's). The servers of the other tests (browser-*,
 * worker-identity, the Slurm dashboards) run on the sources under tsx.
 *
 * Needs the Next production build in .next/: `npm test` builds it (`npm run build:test`, i.e.
 * `next build`) before the unit tests run, and this file relies on that build rather than
 * building. When running this file alone, run `npm run build:test` first; without a build every
 * scenario fails in its setup saying so.
 */
import { after, afterEach, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { io } from "socket.io-client";
import type { RunDetailDto, RunListDto, WorkerDto } from "../lib/contracts/index.ts";
import { GiveUp, ROOT, freePort, sqliteUrl, startPostgres, tmpDir, uniqueDbName, waitFor } from "./platform-helpers.ts";
import { UiStream, api, assertIncreasing, close, getRun, metricsOf, ptKey, startServer, startWorker, storedPoints, waitHealthy, waitStatus, type Env, type Proc, type Pt } from "./e2e-helpers.ts";
import { serverBundle, workerBundle } from "./test-bundles.ts";

/** Optimizer steps of the default-mode run; the crash, cancel and resume runs get LONG_STEPS so
 * that there is time to act while they train. */
const STEPS = 30;
const LONG_STEPS = 80;
const overrides = (steps: number) => [`steps_count=${steps}`, "eval_interval=10", "eval_episodes=8", "eval_episodes_logged=2"];
const RUN_TIMEOUT = 120_000;

function newestMtime(p: string): number {
  const st = fs.statSync(p, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return st.mtimeMs;
  let m = 0;
  for (const e of fs.readdirSync(p)) if (e !== "node_modules" && !e.startsWith(".")) m = Math.max(m, newestMtime(path.join(p, e)));
  return m;
}

/**
 * Setup, not a test: the Next production build must exist (npm test builds it before the unit
 * tests; this file never builds). A build older than the sources it bundles is reported, since
 * the pages then come from older code.
 */
function requireBuild(): void {
  const id = fs.statSync(path.join(ROOT, ".next", "BUILD_ID"), { throwIfNoEntry: false });
  if (!id) {
    throw new Error(
      "no Next production build (.next/BUILD_ID is missing): `npm test` runs `next build` before the unit tests; " +
        "to run this file alone, run `npm run build:test` first",
    );
  }
  const sources = ["app", "components", "lib", "next.config.ts", "package.json"].map((p) => newestMtime(path.join(ROOT, p)));
  if (Math.max(...sources) > id.mtimeMs) console.log("# note: the Next build is older than app/, components/ or lib/; `npm run build:test` rebuilds it");
}

async function createTinyRun(env: Env, name: string, steps = LONG_STEPS): Promise<RunDetailDto> {
  const r = await api<RunDetailDto>(env, "POST", "/api/runs", { preset: "tiny", overrides: overrides(steps), name, tags: ["e2e"] });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal(r.body.status, "queued");
  return r.body;
}

// ---- the scenarios ------------------------------------------------------------------------------

function scenarios(label: string, makeDbUrl: () => Promise<string>, skip?: string) {
  describe(label, { skip, timeout: 15 * 60_000 }, () => {
    /** Processes the current test started; stopped after it, whatever its outcome. */
    const procs: Proc[] = [];
    const started = (p: Proc): Proc => {
      procs.push(p);
      return p;
    };
    /** A fresh database, data folder and port: nothing carries over from another test. */
    const newEnv = async (): Promise<Env> => {
      const port = await freePort();
      return { dbUrl: await makeDbUrl(), dataDir: tmpDir("qrag-e2e-"), port, url: `http://127.0.0.1:${port}` };
    };
    /** A server without a local worker, plus the named workers, all up and healthy. */
    const serverWithWorkers = async (env: Env, ...names: string[]): Promise<{ server: Proc; workers: Proc[] }> => {
      const server = started(startServer(env, { worker: false, bundle: serverBundle() }));
      await waitHealthy(env, server);
      const workers = names.map((n) => started(startWorker(env, n, workerBundle())));
      await waitFor(`workers ${names.join(", ")} online`, async () => {
        for (const w of workers) if (!w.alive()) throw new GiveUp(`${w.name} exited\n${w.tail()}`);
        const ws = (await api<WorkerDto[]>(env, "GET", "/api/workers")).body;
        return names.every((n) => ws.some((w) => w.name === n && w.status === "idle"));
      }, 60_000);
      return { server, workers };
    };

    before(() => requireBuild());
    afterEach(async () => {
      for (const p of procs.splice(0).reverse()) await p.stop();
    });

    test("default mode: local worker, queued → running → completed, ordered stream", async () => {
      const env = await newEnv();
      const server = started(startServer(env, { worker: true, bundle: serverBundle() }));
      await waitHealthy(env, server);
      const workers = await waitFor("the local worker", async () => {
        const ws = (await api<WorkerDto[]>(env, "GET", "/api/workers")).body;
        return ws.find((w) => w.name === "local" && w.status !== "offline") ? ws : null;
      }, 60_000);
      const local = workers.find((w) => w.name === "local")!;
      assert.ok(local.backend && local.device, "the worker reports its backend and device");
      // Next serves the pages on the same port (its production build, from the server's folder)
      const page = await fetch(`${env.url}/`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
      assert.match(await page.text(), /^<!DOCTYPE html>/);

      const ui = new UiStream(env);
      const run = await createTinyRun(env, "e2e-default", STEPS);
      await ui.subscribe(run.id, 0);
      const seen = new Set<string>(["queued"]);
      const done = await waitFor(`run ${run.id} to complete`, async () => {
        const r = await getRun(env, run.id);
        seen.add(r.status);
        return r.status === "completed" || r.status === "failed" ? r : null;
      }, RUN_TIMEOUT, 100).catch((e: Error) => assert.fail(`${e.message}\n${server.tail()}`));
      assert.equal(done.status, "completed", `${done.error}\n${server.tail()}`);
      assert.ok(seen.has("running"), `statuses seen: ${[...seen].join(" → ")}`);
      assert.equal(done.attempt, 1);
      assert.equal(done.progressDone, STEPS);
      assert.equal(done.workerName, "local");
      assert.ok(done.backend && done.device && done.startedAt && done.finishedAt);
      assert.ok(done.checkpoints.length >= 2);

      await waitFor("the stream to catch up", () => ui.lastSeq(run.id) === done.lastSeq, 20_000);
      assert.deepEqual(ui.violations, []);
      assert.deepEqual(ui.batches.get(run.id)!.map((b) => b.seq), Array.from({ length: done.lastSeq }, (_, i) => i + 1));
      const streamed = metricsOf(ui.events(run.id));
      assert.ok(streamed.length > 10, `streamed points: ${streamed.length}`);
      assertIncreasing(streamed, "qf_loss");
      const stored = await storedPoints(env, run.id);
      assert.deepEqual(new Set(stored.map(ptKey)), new Set(streamed.map(ptKey)), "the stream and the database hold the same points");
      assert.ok(ui.changed > 0, "runs:state was broadcast");
      // a late subscriber gets the same history in its catch-up
      const late = new UiStream(env);
      await late.subscribe(run.id, 3);
      await waitFor("the catch-up", () => late.lastSeq(run.id) === done.lastSeq, 20_000);
      assert.deepEqual(late.violations, []);
      late.close();
      ui.close();

      // a local worker that dies is started again
      const pids = () => [...server.lines.join("\n").matchAll(/local worker started \(pid (\d+)\)/g)].map((m) => Number(m[1]));
      const first = pids()[0];
      assert.ok(first > 0, "local worker pid logged");
      process.kill(first, "SIGKILL");
      const pid = await waitFor("a new local worker", () => pids().find((p) => p !== first), 30_000);
      await waitFor("the new local worker online", async () => {
        const ws = (await api<WorkerDto[]>(env, "GET", "/api/workers")).body;
        return ws.some((w) => w.name === "local" && w.status === "idle");
      }, 60_000);

      // shutting down stops the local worker too
      await server.stop();
      assert.equal(await server.exited, 0);
      await waitFor("the local worker to exit", () => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      }, 20_000);
    });

    test("kill -9 the server mid-run: nothing acknowledged is lost, nothing duplicated", async () => {
      const env = await newEnv();
      const up = await serverWithWorkers(env, "w1");
      let server = up.server;
      const [w1] = up.workers;
      const run = await createTinyRun(env, "e2e-server-crash");
      let ui = new UiStream(env);
      await ui.subscribe(run.id, 0);
      // wait for training to be under way (some batches with metric points acknowledged)
      await waitFor("training progress", () => metricsOf(ui.events(run.id)).some((p) => p.key === "qf_loss"), RUN_TIMEOUT, 50).catch((e: Error) =>
        assert.fail(`${e.message}\n${server.tail()}\n${w1.tail()}`),
      );
      const before = await getRun(env, run.id);
      assert.equal(before.status, "running");
      await server.kill9();
      const acked = metricsOf(ui.events(run.id));
      const ackedSeq = ui.lastSeq(run.id);
      assert.deepEqual(ui.violations, []);
      ui.close();

      server = started(startServer(env, { worker: false, bundle: serverBundle() }));
      await waitHealthy(env, server);
      ui = new UiStream(env);
      await ui.subscribe(run.id, ackedSeq);
      const done = await waitStatus(env, run.id, ["completed", "failed"], [server, w1]);
      assert.equal(done.status, "completed", done.error ?? "");
      assert.equal(done.attempt, 1, "the same attempt finished: the worker kept running and resent");
      await waitFor("the stream to catch up", () => ui.lastSeq(run.id) === done.lastSeq, 20_000);
      assert.deepEqual(ui.violations, [], "gapless across the restart");
      ui.close();

      const stored = await storedPoints(env, run.id);
      const storedKeys = new Map(stored.map((p) => [ptKey(p), p.value]));
      for (const p of acked) assert.ok(close(storedKeys.get(ptKey(p)), p.value), `acknowledged point ${ptKey(p)} kept: ${storedKeys.get(ptKey(p))} vs ${p.value}`);
      // the engine's own record of every point it emitted: the database holds each exactly once
      const file = path.join(env.dataDir, "runs", run.id, "metrics.jsonl");
      const emitted = fs.readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Pt);
      assert.equal(stored.length, emitted.length, "as many stored points as the engine emitted");
      assert.deepEqual(new Set(stored.map(ptKey)), new Set(emitted.map(ptKey)));
      assert.equal(storedKeys.size, stored.length, "no duplicates");
      assertIncreasing(stored, "qf_loss");
    });

    test("kill -9 the worker: the lease expires, the run resumes from its checkpoint elsewhere", async () => {
      const env = await newEnv();
      const { server, workers: [w1] } = await serverWithWorkers(env, "w1");
      const run = await createTinyRun(env, "e2e-worker-crash");
      const first = await waitFor("a checkpoint after training began", async () => {
        const r = await getRun(env, run.id);
        return r.status === "running" && r.checkpoints.some((c) => c.update >= 10) ? r : null;
      }, RUN_TIMEOUT, 100).catch((e: Error) => assert.fail(`${e.message}\n${server.tail()}\n${w1.tail()}`));
      assert.equal(first.workerName, "w1");
      const pointsBefore = await storedPoints(env, run.id);
      const w2 = started(startWorker(env, "w2", workerBundle()));
      await w1.kill9();
      const resumed = await waitFor("the run on w2", async () => {
        const r = await getRun(env, run.id);
        return r.attempt === 2 && r.workerName === "w2" ? r : null;
      }, 60_000, 100).catch((e: Error) => assert.fail(`${e.message}\n${server.tail()}\n${w2.tail()}`));
      assert.match(resumed.resumeFrom ?? "", /checkpoints/);
      const done = await waitStatus(env, run.id, ["completed", "failed"], [server, w2]);
      assert.equal(done.status, "completed", done.error ?? "");
      assert.equal(done.progressDone, LONG_STEPS);
      const logs = (await api<{ message: string }[]>(env, "GET", `/api/runs/${run.id}/logs?limit=1000`)).body;
      assert.ok(logs.some((l) => /lease ran out; queued again to resume/.test(l.message)), "the lease expiry is logged");
      assert.ok(logs.some((l) => /^resuming /.test(l.message)), "the engine resumed from the checkpoint");
      const stored = await storedPoints(env, run.id);
      const steps = assertIncreasing(stored, "qf_loss");
      const lastBefore = Math.max(...pointsBefore.filter((p) => p.key === "qf_loss").map((p) => p.step));
      assert.ok(steps.at(-1)! > lastBefore, "the curve continued after the resume");
      for (const p of pointsBefore) assert.ok(stored.some((q) => ptKey(q) === ptKey(p)), `point ${ptKey(p)} kept`);
    });

    test("cancel leaves a checkpoint; resume continues the same curves", async () => {
      const env = await newEnv();
      const { server, workers: [w1] } = await serverWithWorkers(env, "w1");
      const run = await createTinyRun(env, "e2e-cancel-resume");
      await waitFor("training under way", async () => {
        const r = await getRun(env, run.id);
        return r.status === "running" && r.checkpoints.length > 0 && r.progressDone >= 3 ? r : null;
      }, RUN_TIMEOUT, 100);
      const ckBefore = (await getRun(env, run.id)).checkpoints.length;
      const c = await api<RunDetailDto>(env, "POST", `/api/runs/${run.id}/cancel`);
      assert.equal(c.status, 200);
      const cancelled = await waitStatus(env, run.id, ["cancelled", "completed", "failed"], [server, w1]);
      assert.equal(cancelled.status, "cancelled", cancelled.error ?? "");
      assert.ok(cancelled.progressDone < LONG_STEPS, "cancelled before the end");
      assert.ok(cancelled.checkpoints.length > ckBefore || cancelled.checkpoints.some((k) => k.update === cancelled.summary.update), "cancel saved a checkpoint");
      const before = await storedPoints(env, run.id);
      assert.equal((await api(env, "POST", `/api/runs/${run.id}/cancel`)).status, 409);

      const r = await api<RunDetailDto>(env, "POST", `/api/runs/${run.id}/resume`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.id, run.id);
      const done = await waitStatus(env, run.id, ["completed", "failed"], [server, w1]);
      assert.equal(done.status, "completed", done.error ?? "");
      assert.equal(done.attempt, 2);
      assert.equal(done.progressDone, LONG_STEPS);
      const after = await storedPoints(env, run.id);
      const steps = assertIncreasing(after, "qf_loss");
      assert.ok(steps.at(-1)! > Math.max(...before.filter((p) => p.key === "qf_loss").map((p) => p.step)));
      for (const p of before) assert.ok(after.some((q) => ptKey(q) === ptKey(p) && close(q.value, p.value)), `point ${ptKey(p)} unchanged`);
      const evals = after.filter((p) => p.key === "eval_return").map((p) => p.step);
      assert.equal(new Set(evals).size, evals.length, "one eval point per step");
    });

    test("bad payloads: 400 naming the fields, nothing written; unknown ids: 404", async () => {
      // its own finished run (with eval episodes) to PATCH, clone and read
      const env = await newEnv();
      const server = started(startServer(env, { worker: true, bundle: serverBundle() }));
      await waitHealthy(env, server);
      const own = await createTinyRun(env, "e2e-payloads", 10);
      const finished = await waitStatus(env, own.id, ["completed", "failed"], [server]);
      assert.equal(finished.status, "completed", finished.error ?? "");
      const total = async () => (await api<RunListDto>(env, "GET", "/api/runs?limit=1")).body.total;
      const n = await total();
      const bad = await api<{ error: string; fieldErrors: Record<string, string> }>(env, "POST", "/api/runs", {
        config: { steps_count: -1, envs: { name: "babilong", task: "qa9" } },
        tags: "nope",
      });
      assert.equal(bad.status, 400);
      for (const f of ["tags", "config.steps_count", "config.envs.task", "config.batch_size"]) assert.ok(f in bad.body.fieldErrors, `${f} in ${JSON.stringify(bad.body.fieldErrors)}`);
      const bad2 = await api<{ fieldErrors: Record<string, string> }>(env, "POST", "/api/runs", { preset: "tiny", overrides: ["algo.encoder.dim=30"] });
      assert.equal(bad2.status, 400);
      assert.ok("config.algo.encoder.dim" in bad2.body.fieldErrors);
      assert.equal((await api(env, "POST", "/api/runs", "{not json")).status, 400);
      assert.equal((await api(env, "GET", "/api/runs?sort=sideways")).status, 400);
      const some = (await api<RunListDto>(env, "GET", "/api/runs?limit=1")).body.runs[0];
      assert.equal(some.id, own.id);
      const patch = await api<{ fieldErrors: Record<string, string> }>(env, "PATCH", `/api/runs/${some.id}`, { tags: [""], color: "red" });
      assert.equal(patch.status, 400);
      assert.ok("tags.0" in patch.body.fieldErrors && "color" in patch.body.fieldErrors);
      const clone = await api<{ fieldErrors: Record<string, string> }>(env, "POST", `/api/runs/${some.id}/clone`, { config: { batch_size: 7 } });
      assert.equal(clone.status, 400);
      assert.ok("config.batch_size" in clone.body.fieldErrors);
      assert.equal((await getRun(env, some.id)).tags.join(), "e2e", "the bad PATCH changed nothing");
      assert.equal(await total(), n, "no run was created");
      assert.equal((await api(env, "GET", "/api/runs/doesnotexist")).status, 404);
      assert.equal((await api(env, "POST", "/api/runs/doesnotexist/cancel")).status, 404);
      assert.equal((await api(env, "GET", "/api/runs/doesnotexist/metrics")).status, 404);
      assert.equal((await api(env, "GET", `/api/runs/${some.id}/episodes/999999999`)).status, 404);
      // and the good paths of the smaller endpoints
      const clone2 = await api<RunDetailDto>(env, "POST", `/api/runs/${some.id}/clone`, { config: { steps_count: 2 }, name: "e2e-clone" });
      assert.equal(clone2.status, 201);
      assert.equal(clone2.body.parentId, some.id);
      assert.equal(await total(), n + 1);
      await api(env, "POST", `/api/runs/${clone2.body.id}/cancel`);
      const eps = (await api<{ id: number }[]>(env, "GET", `/api/runs/${some.id}/episodes?limit=3`)).body;
      assert.ok(eps.length > 0);
      const ep = (await api<{ record?: { steps: unknown[] } }>(env, "GET", `/api/runs/${some.id}/episodes/${eps[0].id}`)).body;
      assert.ok(ep.record && ep.record.steps.length > 0);
      assert.ok(((await api<unknown[]>(env, "GET", "/api/presets")).body).length >= 1);
      // a worker with a wrong token is refused
      const intruder = io(`${env.url}/workers`, {
        transports: ["websocket"],
        reconnection: false,
        auth: { token: "wrong", workerId: "intruder", name: "x", host: "h", backend: "cpu", device: "cpu", activeRuns: [] },
      });
      const refused = await new Promise<string>((resolve) => {
        intruder.on("connect", () => resolve("connected"));
        intruder.on("connect_error", (e) => resolve(e.message));
      });
      intruder.close();
      assert.match(refused, /unauthorized/);
      assert.ok(!(await api<WorkerDto[]>(env, "GET", "/api/workers")).body.some((w) => w.id === "intruder"));
      assert.equal((await api<{ schema: { type: string } }>(env, "GET", "/api/schema")).body.schema.type, "object");
    });
  });
}

// QRAG_TEST_DB=sqlite or =postgresql runs one of the two
const only = process.env.QRAG_TEST_DB;
if (only !== "postgresql") scenarios("SQLite", async () => sqliteUrl());
const pg = only === "sqlite" ? { skip: "QRAG_TEST_DB=sqlite" } : await startPostgres();
if ("skip" in pg) console.log(`# ${pg.skip}`);
else after(() => pg.stop());
scenarios("PostgreSQL", async () => ("skip" in pg ? "" : pg.createDatabase(uniqueDbName("qrag_e2e"))), "skip" in pg ? pg.skip : undefined);
