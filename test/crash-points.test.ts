/**
 * Crash tests with real processes on a real SQLite file: one run of the `tiny` preset trains
 * while, at seeded random moments around its metric emissions, a worker is killed with -9 (alone,
 * or, every other trial, together with its engine child), and a few times the dashboard server itself. Two workers
 * share the work; a killed one is started again. After every trial the run goes on (lease expiry,
 * resume from the last checkpoint); at the end it completes and:
 *   - every per-update key holds exactly the updates the engine logs (every 2nd of 160), every
 *     eval key exactly the evaluations (every 10th): no point lost, none doubled;
 *   - (key, step) and (key, update) are unique in the database;
 *   - a live /ui subscriber (re-subscribing after each server restart) received exactly the stored
 *     series, value for value: a live chart after resumes equals a reloaded one.
 * QRAG_CRASH_SEED picks the kill moments (default 20261124); QRAG_CRASH_TRIALS the number of
 * worker kills (default 20).
 *
 * Budget: each worker kill costs a worker restart, a lease expiry and an engine start from the last
 * checkpoint. The server and workers run as bundles of their sources (test-bundles.ts), which
 * start about 3× quicker than under tsx: 161 s for the 20 trials on a shared 2-core machine at
 * load 7 (276 s under tsx there and then; 40 s per trial once on a more loaded one). The timeout
 * stays 2 min (start, the run's tail) + 1 min per trial: 22 min for 20 trials.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import Database from "better-sqlite3";
import type { RunBatchMsg, RunDetailDto } from "../lib/contracts/index.ts";
import { engineChildren, freePort, tmpDir, waitFor } from "./platform-helpers.ts";
import { UiStream, api, close, getRun, metricsOf, startServer, startWorker, waitHealthy, type Env, type Proc } from "./e2e-helpers.ts";
import { Rng } from "../server/qrag/util/rng.ts";
import { metricKeysEmitted } from "../lib/contracts/metrics.ts";
import { serverBundle, workerBundle } from "./test-bundles.ts";

const SEED = Number(process.env.QRAG_CRASH_SEED ?? 20261124);
const TRIALS = Number(process.env.QRAG_CRASH_TRIALS ?? 20);
const SERVER_KILLS = Number(process.env.QRAG_CRASH_SERVER_KILLS ?? 3);
const STEPS = 160;
const EVAL_INTERVAL = 10;
/** The engine logs per-update metrics every max(1, min(10, ⌊eval_interval / 5⌋)) updates. */
const LOG_EVERY = Math.max(1, Math.min(10, Math.floor(EVAL_INTERVAL / 5)));
/** From the metric registry: the keys of every logged update, and of every evaluation. */
const PER_UPDATE = metricKeysEmitted("update");
const EVAL_KEYS = metricKeysEmitted("eval");
/** 2 min for the start and the run's tail, 1 min per worker kill (≈ 1.5 × the 40 s one takes on a loaded 2-core machine). */
const TIMEOUT_MS = (2 + TRIALS) * 60_000;

const procs: Proc[] = [];
after(async () => {
  for (const p of procs) await p.kill9();
});

test(`crash trials (seed ${SEED}): ${TRIALS} worker kills and ${SERVER_KILLS} server kills around metric emission lose no point and double none`, { skip: process.platform !== "linux" ? "reads /proc" : false, timeout: TIMEOUT_MS }, async () => {
  const gen = new Rng(SEED);
  const random = () => gen.next();
  const dataDir = tmpDir("qrag-crash-");
  const dbFile = path.join(dataDir, "qrag.db");
  const port = await freePort();
  const env: Env = { dbUrl: `file:${dbFile}`, dataDir, port, url: `http://127.0.0.1:${port}` };
  // workers (and a few times the server) are started again after every kill: as bundles of the
  // same sources they start, with their engines, about 3× quicker than under tsx (test-bundles.ts).
  // A restarted server extends running leases by the restart grace; the run's holder was killed
  // just before the server, so that grace is only waited out here: 3 s instead of 10.
  const bundle = workerBundle();
  const serverOpts = { worker: false, next: false, env: { QRAG_LEASE_MS: "2000", QRAG_RESTART_GRACE_MS: "3000" }, bundle: serverBundle() };
  const started = <T extends Proc>(p: T): T => (procs.push(p), p);
  let server = started(startServer(env, serverOpts));
  await waitHealthy(env, server);
  const workers = new Map<string, Proc>([["w1", started(startWorker(env, "w1", bundle))], ["w2", started(startWorker(env, "w2", bundle))]]);
  const tails = () => [server, ...workers.values()].map((p) => p.tail(15)).join("\n");

  const created = await api<RunDetailDto>(env, "POST", "/api/runs", {
    preset: "tiny",
    name: "crash-trials",
    overrides: [`steps_count=${STEPS}`, `eval_interval=${EVAL_INTERVAL}`, "eval_episodes=8", "eval_episodes_logged=1"],
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const runId = created.body.id;

  // the live subscriber: one /ui client per server lifetime, each continuing from the last seq
  const live: RunBatchMsg[] = [];
  const violations: string[] = [];
  let ui = new UiStream(env);
  let uiFrom = 0;
  const collect = () => {
    const got = ui.batches.get(runId) ?? [];
    violations.push(...ui.violations);
    live.push(...got);
    uiFrom = live.at(-1)?.seq ?? uiFrom;
    ui.close();
  };
  await ui.subscribe(runId, 0);
  const lastLive = () => ui.lastSeq(runId);

  const log: string[] = [];
  const t0 = Date.now();
  const serverKillAt = new Set(Array.from({ length: SERVER_KILLS }, (_, i) => Math.floor(((i + 1) * TRIALS) / (SERVER_KILLS + 1))));
  /** The attempt the last kill ended: each trial acts on a later one. */
  let killed = 0;
  for (let trial = 0; trial < TRIALS; trial++) {
    // wait for an attempt after the last kill, then for fresh metric points from it, then kill after
    // a seeded delay (points the killed attempt sent just before still reach the stream: started by
    // them alone, a trial would find the run still held by the worker it just replaced)
    await waitFor(`trial ${trial}: an attempt after ${killed} running`, async () => {
      const r = await getRun(env, runId);
      return r.status === "running" && r.attempt > killed;
    }, 120_000, 20).catch((e: Error) => assert.fail(`${e.message}\n${tails()}`));
    const from = lastLive();
    await waitFor(`trial ${trial}: new metric points`, () => (ui.batches.get(runId) ?? []).some((b) => b.seq > from && b.events.some((e) => e.type === "metric")), 120_000, 5).catch((e: Error) =>
      assert.fail(`${e.message}\n${tails()}`),
    );
    const run = await getRun(env, runId);
    if (run.status !== "running") assert.fail(`trial ${trial}: run is ${run.status}: ${run.error}\n${tails()}`);
    const delay = Math.floor(random() * 120);
    const withChild = trial % 2 === 1;
    await new Promise((r) => setTimeout(r, delay));
    // the holder trains: it runs the attempt's engine process. Read until that holds: on a loaded
    // machine the 2 s lease can run out between two reads, leaving the run queued a moment with no
    // worker before one claims it again (seen in CI: "held by unknown worker """)
    let seenHolder = "";
    const { holder, name, w, engines } = await waitFor(`trial ${trial}: the run held by a known worker that runs one engine process`, async () => {
      const r = await getRun(env, runId);
      const n = r.workerName ?? "";
      const p = r.status === "running" ? workers.get(n) : undefined;
      const e = p ? engineChildren(p.pid) : [];
      seenHolder = `${r.status}, worker "${n}", ${e.length} engine processes`;
      return p && e.length === 1 ? { holder: r, name: n, w: p, engines: e } : null;
    }, 60_000, 10).catch((e: Error) => assert.fail(`${e.message}; last seen: ${seenHolder}\n${tails()}`));
    const children = withChild ? engines : [];
    killed = holder.attempt;
    await w.kill9();
    for (const c of children) process.kill(c, "SIGKILL");
    log.push(`${((Date.now() - t0) / 1000).toFixed(1)} s trial ${trial}: +${delay} ms kill -9 ${name}${withChild ? ` and its engine child (${children.length})` : ""} at update ${run.summary.update ?? 0}`);
    workers.set(name, started(startWorker(env, name, bundle)));

    if (serverKillAt.has(trial)) {
      await server.kill9();
      collect();
      log.push(`trial ${trial}: kill -9 the server`);
      server = started(startServer(env, serverOpts));
      await waitHealthy(env, server);
      ui = new UiStream(env);
      await ui.subscribe(runId, uiFrom);
    }
  }

  const done = await waitFor("the run to complete", async () => {
    const r = await getRun(env, runId);
    return r.status === "completed" || r.status === "failed" || r.status === "cancelled" ? r : null;
  }, 300_000, 200).catch((e: Error) => assert.fail(`${e.message}\n${log.join("\n")}\n${tails()}`));
  assert.equal(done.status, "completed", `${done.error}\n${log.join("\n")}`);
  assert.ok(done.attempt > TRIALS / 2, `attempts: ${done.attempt}`);
  await waitFor("the live stream to catch up", () => lastLive() === done.lastSeq, 30_000);
  collect();
  assert.deepEqual(violations, [], "the live stream had no sequence gap");
  assert.deepEqual(live.map((b) => b.seq), Array.from({ length: done.lastSeq }, (_, i) => i + 1), "every batch once, in order");

  // the stored series: exactly the points the engine logs, once each
  const db = new Database(dbFile, { readonly: true });
  const rows = db.prepare("SELECT key, step, \"update\" AS upd, value FROM MetricPoint WHERE runId = ? ORDER BY key, step").all(runId) as { key: string; step: number; upd: number; value: number }[];
  db.close();
  const updatesOf = (key: string) => rows.filter((r) => r.key === key).map((r) => r.upd);
  const perUpdate = Array.from({ length: STEPS / LOG_EVERY }, (_, i) => (i + 1) * LOG_EVERY);
  const evals = Array.from({ length: STEPS / EVAL_INTERVAL + 1 }, (_, i) => i * EVAL_INTERVAL);
  for (const key of PER_UPDATE) assert.deepEqual(updatesOf(key), perUpdate, `${key}: one point per logged update\n${log.join("\n")}`);
  for (const key of EVAL_KEYS) assert.deepEqual(updatesOf(key), evals, `${key}: one point per evaluation\n${log.join("\n")}`);
  const keySteps = rows.map((r) => `${r.key}@${r.step}`);
  assert.equal(new Set(keySteps).size, keySteps.length, "(key, step) unique");

  // the live series equals the stored one, point for point (no repeats, no other values)
  // (the database keeps doubles to about 16 significant digits: values compare to 1e-12)
  const streamed = metricsOf(live.flatMap((b) => b.events));
  assert.equal(streamed.length, rows.length, "as many live points as stored ones");
  const storedAt = new Map(rows.map((r) => [`${r.key}@${r.step}`, r.value]));
  const differ = streamed.filter((p) => !close(storedAt.get(`${p.key}@${p.step}`), p.value)).map((p) => `${p.key}@${p.step}: live ${p.value}, stored ${storedAt.get(`${p.key}@${p.step}`)}`);
  assert.deepEqual(differ.slice(0, 10), [], `live ≠ stored at ${differ.length} points\n${log.join("\n")}`);
  if (process.env.QRAG_TEST_VERBOSE) console.log(log.join("\n"));
  console.log(`# crash trials (seed ${SEED}): ${TRIALS} worker kills (${log.filter((l) => l.includes("engine child")).length} with the engine child), ${SERVER_KILLS} server kills, ${done.attempt} attempts; ${rows.length} stored points, 0 lost, 0 doubled; ${((Date.now() - t0) / 1000).toFixed(0)} s of a ${TIMEOUT_MS / 1000} s budget`);
});
