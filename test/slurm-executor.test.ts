/**
 * The Slurm executor end to end on a real single-node Slurm (test/slurm-cluster.ts): the dashboard
 * (server/main.ts, QRAG_EXECUTOR=slurm, no local worker) turns runs of the "slurm" queue into sbatch
 * jobs whose workers connect back with per-job tokens, and:
 *   - a `tiny` run → one job, RUNNING on the node, the run completed, the job COMPLETED, the job's
 *     output in the run's log; a sweep of its checkpoint → its own job on the same queue, completed;
 *   - cancel from the API → scancel → the run cancelled within 5 s, the job ended;
 *   - `scancel` from a shell mid-run → the run queued again and resumed by a second job from its last
 *     checkpoint: every logged update's point stored exactly once;
 *   - the dashboard killed and restarted while a job runs → its worker reconnects, the run
 *     completes in that one job, each point once; the job's output reached the run's log while it
 *     ran, and every line of its stderr file is in the log exactly once after the restart and its end;
 *   - the dashboard killed inside sbatch (a slow sbatch wrapper) → restarted, it adopts the job
 *     that sbatch made (one job for the run), or, when sbatch made none, submits again;
 *   - sbatch timing out (its job made all the same) → the job adopted, sbatch called once; sbatch
 *     answering "Socket timed out" once → retried, one job; "Unable to contact slurm controller"
 *     every time → the run waits SUBMITTING with the reason, then fails after the tries allowed;
 *   - a 1-minute time limit on a longer run → TIMEOUT, requeued, resumed by new jobs until it
 *     completes, each point once (QRAG_SLURM_QUICK=1 skips it: it takes a few minutes);
 *   - bad requests → 400 naming the field; more than the partition allows → the run failed with
 *     sbatch's reason, no job.
 * One test at a time: the node has this machine's 2 CPUs and each job takes one.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { metricKeysEmitted, type RunDetailDto, type SweepDto } from "../lib/contracts/index.ts";
import { shortText } from "../lib/contracts/short-text.ts";
import { freePort, tmpDir, waitFor } from "./platform-helpers.ts";
import { api, getRun, startServer, storedPoints, waitHealthy, type Env, type Proc } from "./e2e-helpers.ts";
import { slurmDashboardEnv, slurmSkip, startSlurmCluster, type SlurmCluster } from "./slurm-cluster.ts";

const EVAL_INTERVAL = 10;
const LOG_EVERY = Math.max(1, Math.min(10, Math.floor(EVAL_INTERVAL / 5)));
const overrides = (steps: number) => [`steps_count=${steps}`, `eval_interval=${EVAL_INTERVAL}`, "eval_episodes=8", "eval_episodes_logged=1"];
const slurmRun = { queue: "slurm", resources: { cpus: 1, mem_mb: 2000, time_limit_min: 20 } };

describe("the Slurm executor on a real cluster", { skip: slurmSkip, concurrency: false, timeout: 1_200_000 }, () => {
  let cluster: SlurmCluster;
  let server: Proc;
  let env: Env;
  before(async () => {
    cluster = await startSlurmCluster();
    const dataDir = tmpDir("qrag-slurm-exec-");
    const port = await freePort();
    env = { dbUrl: `file:${path.join(dataDir, "qrag.db")}`, dataDir, port, url: `http://127.0.0.1:${port}` };
    await startDashboard();
  });
  const startDashboard = async (extra: Record<string, string> = {}) => {
    server = startServer(env, {
      worker: false,
      next: false,
      env: slurmDashboardEnv(cluster, { QRAG_SLURM_STALE_SUBMIT_MS: "3000", ...extra }),
    });
    await waitHealthy(env, server);
  };
  after(async () => {
    await server?.stop();
    await cluster?.stop();
  });

  const create = async (name: string, steps: number, more: object = slurmRun) => {
    const r = await api<RunDetailDto>(env, "POST", "/api/runs", { preset: "tiny", name, overrides: overrides(steps), ...more });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };
  const tails = () => `${server.tail(30)}\n${cluster.logs().slice(-2000)}`;
  const until = <T>(what: string, fn: () => Promise<T | null | undefined | false>, ms = 180_000) =>
    waitFor(what, fn, ms, 200).catch((e: Error) => assert.fail(`${e.message}\n${tails()}`));
  const jobOf = (r: RunDetailDto) => r.executor!;
  /** Waits for the run to end (it must have completed), then for its job to read COMPLETED. */
  const completedWithJob = async (id: string) => {
    const done = await until("the run to end", async () => {
      const r = await getRun(env, id);
      return ["completed", "failed", "cancelled"].includes(r.status) ? r : null;
    });
    assert.equal(done.status, "completed", `${done.error}\n${tails()}`);
    return until("the job COMPLETED", async () => {
      const r = await getRun(env, id);
      return jobOf(r).state === "COMPLETED" ? r : null;
    }, 30_000);
  };
  /** Every logged update's point of every per-update key stored exactly once (none lost, none doubled). */
  const eachPointOnce = async (id: string, steps: number) => {
    const points = await storedPoints(env, id);
    const perUpdate = steps / LOG_EVERY;
    let checked = 0;
    for (const key of metricKeysEmitted("update")) {
      const n = points.filter((p) => p.key === key).length;
      if (!n) continue; // a key this config never emits
      checked++;
      assert.equal(n, perUpdate, `${key}: one point per logged update (${n} of ${perUpdate})`);
    }
    assert.ok(checked >= 3, `per-update keys checked: ${checked}`);
    const keySteps = points.map((p) => `${p.key}@${p.step}`);
    assert.equal(new Set(keySteps).size, keySteps.length, "(key, step) unique");
    return points;
  };

  test("a tiny run → one sbatch job, RUNNING on the node, the run completed and the job COMPLETED", async () => {
    const t0 = Date.now();
    const created = await create("slurm-complete", 30);
    assert.equal(created.queue, "slurm");
    assert.deepEqual(created.resources, { cpus: 1, mem_mb: 2000, time_limit_min: 20, gpus: 0 });
    assert.equal(created.executor?.kind, "slurm");
    const running = await until("the job RUNNING with the run running", async () => {
      const r = await getRun(env, created.id);
      return r.status === "running" && jobOf(r).state === "RUNNING" ? r : null;
    });
    assert.match(jobOf(running).jobId ?? "", /^\d+$/);
    assert.equal(jobOf(running).node, cluster.node);
    const ended = await completedWithJob(created.id);
    assert.equal(jobOf(ended).jobs, 1, "one job");
    // the job's output reaches the run's log: its worker's own lines on stderr
    const jobId = jobOf(ended).jobId!;
    const logs = await until("the job's output in the run's log", async () => {
      const text = JSON.stringify((await api<unknown>(env, "GET", `/api/runs/${created.id}/logs?limit=5000`)).body);
      return text.includes(`Slurm job ${jobId} ended COMPLETED`) && text.includes(`[job ${jobId} stderr]`) ? text : null;
    }, 10_000);
    assert.match(logs, new RegExp(`\\[job ${jobId} stderr\\][^"]*assigned run ${created.id}`));
    assert.equal(jobOf(ended).jobId, jobOf(running).jobId, "the same job throughout");
    console.log(`submit → completed in ${((Date.now() - t0) / 1000).toFixed(1)} s (job ${jobOf(ended).jobId})`);

    // a sweep of its checkpoint runs on the same queue, as its own Slurm job, and completes
    const t1 = Date.now();
    const sweep = await api<SweepDto>(env, "POST", `/api/runs/${created.id}/sweeps`, { checkpoint: "last", lengths: [20, 60], samples: 2, baselines: false });
    assert.equal(sweep.status, 201, JSON.stringify(sweep.body));
    const swept = await completedWithJob(sweep.body.run.id);
    assert.equal(swept.queue, "slurm");
    assert.notEqual(jobOf(swept).jobId, jobId, "the sweep's own job");
    const points = (await api<SweepDto>(env, "GET", `/api/sweeps/${sweep.body.run.id}`)).body.points;
    assert.deepEqual(points.map((p) => p.numChunks), [20, 60]);
    console.log(`sweep on Slurm: queued → completed in ${((Date.now() - t1) / 1000).toFixed(1)} s (job ${jobOf(swept).jobId})`);
  });

  test("cancel from the API → scancel → the run cancelled within 5 s, the job ended", async () => {
    const created = await create("slurm-cancel", 5000);
    await until("the run training (a metric point stored)", async () => {
      const r = await getRun(env, created.id);
      return r.status === "running" && (r.summary.update ?? 0) > 0 ? r : null;
    });
    const t0 = Date.now();
    const c = await api<RunDetailDto>(env, "POST", `/api/runs/${created.id}/cancel`);
    assert.equal(c.status, 200, JSON.stringify(c.body));
    const cancelled = await until("the run cancelled", async () => {
      const r = await getRun(env, created.id);
      return r.status === "cancelled" ? r : null;
    }, 5_000);
    const s = (Date.now() - t0) / 1000;
    assert.ok(s <= 5, `cancelled after ${s} s`);
    const ended = await until("the job ended", async () => {
      const r = await getRun(env, created.id);
      return ["CANCELLED", "COMPLETED", "FAILED"].includes(jobOf(r).state ?? "") ? r : null;
    }, 30_000);
    // the job's worker heard the cancel too and stops its engine within half a second, so the job
    // either ends by itself (COMPLETED) or is scancelled first by the next pass (CANCELLED)
    assert.ok(["CANCELLED", "COMPLETED"].includes(jobOf(ended).state ?? ""), `the job ended ${jobOf(ended).state}`);
    if (jobOf(ended).state === "CANCELLED") assert.ok(server.lines.some((l) => l.includes(`scancel ${jobOf(cancelled).jobId}`)), `the dashboard scancelled job ${jobOf(cancelled).jobId}\n${tails()}`);
    assert.equal(jobOf(ended).jobs, 1, "no second job for a cancelled run");
    console.log(`cancel → cancelled in ${s.toFixed(2)} s; job ${jobOf(cancelled).jobId} ${jobOf(ended).state}`);
  });

  test("scancel from a shell mid-run → queued again, resumed by a new job from its checkpoint: no point lost, none doubled", async () => {
    const STEPS = 80;
    const created = await create("slurm-requeue", STEPS);
    const first = await until("a checkpoint past step 0 and the run training", async () => {
      const r = await getRun(env, created.id);
      return r.status === "running" && r.checkpoints.some((c) => c.update >= EVAL_INTERVAL) && (r.summary.update ?? 0) > EVAL_INTERVAL ? r : null;
    });
    const firstJob = jobOf(first).jobId!;
    execFileSync("scancel", [firstJob], { env: cluster.env });
    const resumed = await until("a second job running the run", async () => {
      const r = await getRun(env, created.id);
      return jobOf(r).jobs === 2 && r.status === "running" ? r : null;
    });
    assert.notEqual(jobOf(resumed).jobId, firstJob);
    const done = await until("the run to end", async () => {
      const r = await getRun(env, created.id);
      return ["completed", "failed", "cancelled"].includes(r.status) ? r : null;
    });
    assert.equal(done.status, "completed", `${done.error}\n${tails()}`);
    assert.ok(done.resumeFrom, "the second job resumed from a checkpoint");
    const logs = (await api<{ message: string }[]>(env, "GET", `/api/runs/${created.id}/logs?limit=5000`)).body;
    assert.ok(JSON.stringify(logs).includes("queued again"), "the requeue is in the run's log");
    const points = await eachPointOnce(created.id, STEPS);
    // both jobs are kept, newest first, each with how it ended, where it ran and for how long
    const ended = await until("the second job COMPLETED", async () => {
      const r = await getRun(env, created.id);
      return r.jobs[0]?.state === "COMPLETED" ? r : null;
    }, 30_000);
    assert.deepEqual(ended.jobs.map((j) => [j.number, j.jobId, j.state, j.node]), [[2, jobOf(done).jobId, "COMPLETED", cluster.node], [1, firstJob, "CANCELLED", cluster.node]]);
    for (const j of ended.jobs) assert.ok(j.startedAt && j.endedAt && Date.parse(j.submittedAt) <= Date.parse(j.endedAt) && Date.parse(j.startedAt) <= Date.parse(j.endedAt), JSON.stringify(j));
    assert.ok(Date.parse(ended.jobs[1].endedAt!) <= Date.parse(ended.jobs[0].startedAt!) + 2_000, "the second job started after the first ended");
    console.log(`scancel ${firstJob} → resumed as job ${jobOf(done).jobId}; ${points.length} points, each once`);
  });

  test("the dashboard killed (-9) and restarted while a job runs: the job's worker reconnects, the run completes in that one job, each point once; its output in the log live, each line once", async () => {
    const STEPS = 200;
    const created = await create("slurm-restart", STEPS);
    const before = await until("the run training (a metric point stored)", async () => {
      const r = await getRun(env, created.id);
      return r.status === "running" && (r.summary.update ?? 0) > 0 ? r : null;
    });
    const jobId = jobOf(before).jobId!;
    const stderrLines = async () =>
      (await api<{ message: string }[]>(env, "GET", `/api/runs/${created.id}/logs?limit=5000`)).body.filter((l) => l.message.startsWith(`[job ${jobId} stderr] `)).map((l) => l.message);
    // the job's worker said which run it took on its stderr: that line is in the run's log while the job still runs
    const live = await until("the running job's output in the run's log", async () => {
      const lines = await stderrLines();
      return lines.some((l) => l.includes(`assigned run ${created.id}`)) ? lines : null;
    }, 15_000);
    const still = await getRun(env, created.id);
    assert.ok(still.status === "running" && jobOf(still).state === "RUNNING", `the job still runs: ${still.status} ${jobOf(still).state}`);
    await server.kill9();
    await startDashboard();
    const ended = await completedWithJob(created.id);
    assert.equal(jobOf(ended).jobs, 1, "the same job throughout");
    assert.equal(jobOf(ended).jobId, jobId);
    await eachPointOnce(created.id, STEPS);
    // every line of the job's stderr file in the log, in order, once: none doubled by the restart or the final read
    const logged = await until("the job's end in the log", async () => {
      const text = JSON.stringify((await api<unknown>(env, "GET", `/api/runs/${created.id}/logs?limit=5000`)).body);
      return text.includes(`Slurm job ${jobId} ended COMPLETED`) ? stderrLines() : null;
    }, 10_000);
    const file = fs.readFileSync(path.join(cluster.jobsDir, "runs", `${created.id}-1.err`), "utf8").split("\n").filter((l) => l.trim() !== "");
    assert.ok(file.length >= 2 && live.length <= file.length, `lines seen live ${live.length}, in the file ${file.length}`);
    const asLogged = (l: string) => shortText(l.replace(/\r$/, "").replace(/\t/g, "  "), 500);
    assert.deepEqual(logged.map((l) => l.slice(`[job ${jobId} stderr] `.length)), file.map(asLogged));
    console.log(`job ${jobId}: ${live.length} stderr lines in the log while it ran, ${file.length} after it ended, each once across a restart`);
  });

  test("the dashboard killed inside sbatch: after a restart the job it made is adopted (never a second one), and a submission that made none is made again", async () => {
    // an sbatch that answers late (or, with `fail` present, answers late and makes no job), so the
    // dashboard can be killed between its reservation and sbatch's answer
    const bin = tmpDir("qrag-slurm-bin-");
    for (const c of ["squeue", "sacct", "scancel"]) fs.symlinkSync(execFileSync("sh", ["-c", `command -v ${c}`], { encoding: "utf8" }).trim(), path.join(bin, c));
    const real = execFileSync("sh", ["-c", "command -v sbatch"], { encoding: "utf8" }).trim();
    fs.writeFileSync(path.join(bin, "sbatch"), `#!/bin/sh\ntouch "${bin}/started"\nsleep 2\nif [ -e "${bin}/fail" ]; then exit 1; fi\nexec "${real}" "$@"\n`, { mode: 0o755 });
    const killInsideSbatch = async (name: string) => {
      fs.rmSync(path.join(bin, "started"), { force: true });
      await server.stop();
      await startDashboard({ QRAG_SLURM_BIN: bin });
      const created = await create(name, 30);
      await until("the dashboard inside sbatch", async () => fs.existsSync(path.join(bin, "started")) && jobOf(await getRun(env, created.id)).state === "SUBMITTING", 30_000);
      await server.kill9();
      await startDashboard();
      return created.id;
    };
    const named = (id: string) => execFileSync("squeue", ["--noheader", "--states=all", `--name=qrag-${id}`, "--format=%i"], { env: cluster.env, encoding: "utf8" }).trim().split(/\s+/).filter(Boolean);

    // 1. sbatch made the job after the dashboard died: the restarted one adopts it
    const adopted = await killInsideSbatch("slurm-lost-answer");
    await until("the orphaned sbatch's job in squeue", async () => named(adopted).length === 1, 30_000);
    const done = await completedWithJob(adopted);
    assert.deepEqual(named(adopted), [jobOf(done).jobId], "one job for the run: the one the dead dashboard's sbatch made");
    assert.equal(jobOf(done).jobs, 1);
    assert.deepEqual(done.jobs.map((j) => j.jobId), [jobOf(done).jobId]);
    assert.ok(server.lines.some((l) => l.includes(`run ${adopted}: job ${jobOf(done).jobId} was made by an sbatch whose answer was lost`)), tails());

    // 2. sbatch made no job: the reservation is undone and the run gets one job
    fs.writeFileSync(path.join(bin, "fail"), "");
    const remade = await killInsideSbatch("slurm-no-job");
    const again = await until("a job for the run", async () => {
      const r = await getRun(env, remade);
      return jobOf(r).jobId ? r : null;
    }, 60_000);
    assert.equal(jobOf(again).jobs, 1, "the attempt that made no job is not counted");
    assert.deepEqual(named(remade), [jobOf(again).jobId]);
    assert.equal((await api(env, "POST", `/api/runs/${remade}/cancel`)).status, 200);
  });

  test("sbatch without an answer: timed out (its job made) → adopted, called once; 'Socket timed out' once → retried, one job; controller unreachable → SUBMITTING with the reason, then failed", async () => {
    // an sbatch that, by the mode file: times out while the real one makes the job behind its back,
    // fails once as if the controller did not answer, or cannot reach the controller at all
    const bin = tmpDir("qrag-slurm-bin-");
    for (const c of ["squeue", "sacct", "scancel"]) fs.symlinkSync(execFileSync("sh", ["-c", `command -v ${c}`], { encoding: "utf8" }).trim(), path.join(bin, c));
    const real = execFileSync("sh", ["-c", "command -v sbatch"], { encoding: "utf8" }).trim();
    const calls = path.join(bin, "calls");
    const mode = path.join(bin, "mode");
    fs.writeFileSync(
      path.join(bin, "sbatch"),
      [
        "#!/bin/sh",
        `n=$(($(cat "${calls}" 2>/dev/null || echo 0) + 1)); echo $n > "${calls}"`,
        `case "$(cat "${mode}")" in`,
        `  timeout) if [ $n -eq 1 ]; then "${real}" "$@" </dev/null >/dev/null 2>&1 & sleep 10 </dev/null >/dev/null 2>&1; fi ;;`,
        `  flaky) if [ $n -eq 1 ]; then echo "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation" >&2; exit 1; fi ;;`,
        `  down) echo "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)" >&2; exit 1 ;;`,
        "esac",
        `exec "${real}" "$@"`,
        "",
      ].join("\n"),
      { mode: 0o755 },
    );
    const named = (id: string) => execFileSync("squeue", ["--noheader", "--states=all", `--name=qrag-${id}`, "--format=%i"], { env: cluster.env, encoding: "utf8" }).trim().split(/\s+/).filter(Boolean);
    const callsMade = () => Number(fs.readFileSync(calls, "utf8").trim());
    const withMode = async (m: string, name: string) => {
      fs.writeFileSync(mode, m);
      fs.rmSync(calls, { force: true });
      return (await create(name, 5000)).id;
    };
    /** The run once it has a job (submitted or adopted). */
    const withJob = (id: string, what: string) =>
      until(what, async () => {
        const r = await getRun(env, id);
        return jobOf(r).jobId ? r : null;
      }, 30_000);
    const cancelled = async (id: string) => {
      assert.equal((await api(env, "POST", `/api/runs/${id}/cancel`)).status, 200);
      await until("the run cancelled", async () => (await getRun(env, id)).status === "cancelled", 30_000);
    };
    await server.stop();
    await startDashboard({ QRAG_SLURM_BIN: bin, QRAG_SLURM_COMMAND_TIMEOUT_MS: "1500", QRAG_SLURM_SUBMIT_TRIES: "2" });
    try {
      // 1. sbatch timed out, but slurmctld made the job: it is found by name and adopted, never submitted again
      const slow = await withMode("timeout", "slurm-sbatch-timeout");
      const adopted = await withJob(slow, "the timed-out sbatch's job adopted");
      assert.equal(adopted.status === "failed" ? adopted.error : null, null);
      assert.deepEqual(named(slow), [jobOf(adopted).jobId], "one job for the run");
      assert.equal(callsMade(), 1, "sbatch called once");
      assert.equal(jobOf(adopted).jobs, 1);
      assert.ok(server.lines.some((l) => l.includes(`run ${slow}: sbatch got no answer (no answer within 1500 ms)`)), tails());
      await cancelled(slow);

      // 2. "Socket timed out" once: no job made, so after the wait the run is submitted again, once
      const flaky = await withMode("flaky", "slurm-sbatch-flaky");
      const retried = await withJob(flaky, "the retried submission's job");
      assert.equal(retried.status === "failed" ? retried.error : null, null);
      assert.equal(callsMade(), 2, "sbatch called twice");
      assert.deepEqual(named(flaky), [jobOf(retried).jobId], "one job for the run");
      assert.equal(jobOf(retried).jobs, 1, "the attempt that made no job is not counted");
      await cancelled(flaky);

      // 3. the controller out of reach every time: the run waits, saying why, then fails after the tries allowed
      const down = await withMode("down", "slurm-sbatch-down");
      const waiting = await until("the run waiting with sbatch's reason", async () => {
        const r = await getRun(env, down);
        return jobOf(r).state === "SUBMITTING" && jobOf(r).reason ? r : null;
      }, 30_000);
      assert.equal(waiting.status, "queued");
      assert.match(jobOf(waiting).reason!, /^sbatch got no answer 1× \(.*Unable to contact slurm controller/);
      const failed = await until("the run failed", async () => {
        const r = await getRun(env, down);
        return r.status === "failed" ? r : null;
      }, 60_000);
      assert.match(failed.error ?? "", /sbatch got no answer 2× \(.*Unable to contact slurm controller.*\); gave up after 2 tries/);
      assert.equal(callsMade(), 2);
      assert.deepEqual(named(down), []);
      assert.equal(jobOf(failed).jobs, 0);
    } finally {
      await server.stop();
      await startDashboard();
    }
  });

  test("a 1-minute time limit hit mid-run → TIMEOUT, a new job resumes it until it completes: no point lost, none doubled", { skip: process.env.QRAG_SLURM_QUICK ? "QRAG_SLURM_QUICK" : false }, async () => {
    const STEPS = 4000; // about 4 min of training here (15–20 steps/s): three or more 1-minute jobs
    const t0 = Date.now();
    const created = await create("slurm-timeout", STEPS, { queue: "slurm", resources: { cpus: 1, mem_mb: 2000, time_limit_min: 1 } });
    const done = await until("the run to end", async () => {
      const r = await getRun(env, created.id);
      return ["completed", "failed", "cancelled"].includes(r.status) ? r : null;
    }, 540_000);
    assert.equal(done.status, "completed", `${done.error}\n${tails()}`);
    assert.ok(jobOf(done).jobs >= 2, `jobs: ${jobOf(done).jobs}`);
    const logs = JSON.stringify((await api<unknown>(env, "GET", `/api/runs/${created.id}/logs?limit=5000`)).body);
    assert.match(logs, /Slurm job \d+ ended TIMEOUT/);
    const points = await eachPointOnce(created.id, STEPS);
    console.log(`time limit: ${jobOf(done).jobs} jobs, completed in ${((Date.now() - t0) / 1000).toFixed(0)} s; ${points.length} points, each once`);
  });

  test("bad requests → 400 naming the field; more than the partition allows → failed with sbatch's reason", async () => {
    for (const [body, field] of [
      [{ queue: "gpu-farm" }, "queue"],
      [{ queue: "slurm", resources: { gpus: -1 } }, "resources.gpus"],
      [{ queue: "slurm", resources: { time_limit_min: 0 } }, "resources.time_limit_min"],
      [{ queue: "slurm", resources: { cpus: 1.5 } }, "resources.cpus"],
      [{ queue: "slurm", resources: { gpu_type: "a100" } }, "resources.gpu_type"],
      [{ queue: "slurm", resources: { account: "a b" } }, "resources.account"],
    ] as const) {
      const r = await api<{ fieldErrors: Record<string, string> }>(env, "POST", "/api/runs", { preset: "tiny", ...body });
      assert.equal(r.status, 400, `${JSON.stringify(body)} → ${r.status} ${JSON.stringify(r.body)}`);
      assert.ok(Object.keys(r.body.fieldErrors).includes(field), `${JSON.stringify(body)}: ${JSON.stringify(r.body.fieldErrors)}`);
    }
    // the debug partition allows 60 minutes: sbatch refuses, the run fails quoting it
    const over = await create("slurm-over", 10, { queue: "slurm", resources: { time_limit_min: 120 } });
    const failed = await until("the run failed", async () => {
      const r = await getRun(env, over.id);
      return r.status === "failed" ? r : null;
    }, 30_000);
    assert.match(failed.error ?? "", /sbatch refused the job: .*time limit/i);
    assert.equal(jobOf(failed).jobId, null, "no job");
  });
});
