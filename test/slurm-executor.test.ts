/**
 * The Slurm executor end to end on a real single-node Slurm (test/slurm-cluster.ts): dashboards
 * (test/slurm-dashboard.ts: server/main.ts, QRAG_EXECUTOR=slurm, no local worker) turn runs of the
 * "slurm" queue into sbatch jobs whose workers connect back with per-job tokens. Two dashboards
 * share the cluster, each with its own database, their cases side by side (the node has this
 * machine's CPUs, each job takes one):
 * - A (SQLite), one case at a time:
 *   - a `tiny` run → one job, RUNNING on the node, the run completed, the job COMPLETED, the job's
 *     output in the run's log; a sweep of its checkpoint → its own job on the same queue, completed;
 *   - cancel from the API → scancel → the run cancelled within 5 s, the job ended;
 *   - `scancel` from a shell mid-run → the run queued again and resumed by a second job from its last
 *     checkpoint: every logged update's point stored exactly once;
 *   - the dashboard killed and restarted while a job runs → its worker reconnects, the run
 *     completes in that one job, each point once; the job's output reached the run's log while it
 *     ran, and every line of its stderr file is in the log exactly once after the restart and its end;
 *   - bad requests → 400 naming the field; more than the partition allows → the run failed with
 *     sbatch's reason, no job;
 *   - last, with the node to itself (C done): the run's job PREEMPTED by an `urgent` job that needs
 *     the whole node, then its next job's node set DOWN (NODE_FAIL; the third job waits until the
 *     node is resumed): each time the run is queued again and resumed by a new job from its last
 *     checkpoint, each point once, every job listed with how it ended.
 * - C (PostgreSQL; on SQLite, saying so, where no PostgreSQL server can be started), one case at
 *   a time, the slow-to-set-up ones (dashboard restarts) here so that A and C take about as long:
 *   - a `tiny` run → one job, completed;
 *   - the job's time limit made 0 mid-run (`scontrol update timelimit=0`: Slurm's own limit check
 *     ends it TIMEOUT within 30 s) → a new job resumes the run from its last checkpoint and trains
 *     on; cancelled then, its points so far are each stored once, none missing;
 *   - the dashboard killed inside sbatch (a slow sbatch wrapper) → restarted, it adopts the job
 *     that sbatch made (one job for the run), or, when sbatch made none, submits again;
 *   - sbatch timing out (its job made all the same) → the job adopted, sbatch called once; sbatch
 *     answering "Socket timed out" once → retried, one job; "Unable to contact slurm controller"
 *     every time → the run waits SUBMITTING with the reason, then fails after the tries allowed.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { RunDetailDto, SweepDto } from "../lib/contracts/index.ts";
import { shortText } from "../lib/contracts/short-text.ts";
import { parentPid, processes, startPostgres, tmpDir, uniqueDbName, type Pg } from "./platform-helpers.ts";
import { api } from "./e2e-helpers.ts";
import { slurmSkip, startSlurmCluster, type SlurmCluster } from "./slurm-cluster.ts";
import { EVAL_INTERVAL, jobOf, SlurmDashboard } from "./slurm-dashboard.ts";

// PostgreSQL starts while the cluster does; C awaits it (no server to start: C runs on SQLite and
// says so; under CI=true that fails C). None is started without Slurm.
const pgReady: Promise<Pg | { skip: string }> = slurmSkip ? Promise.resolve({ skip: slurmSkip }) : startPostgres();
pgReady.catch(() => {});
after(async () => {
  const pg = await pgReady.catch(() => null);
  if (pg && !("skip" in pg)) pg.stop();
});

/** Pids of this user's processes whose environment holds `entry` (KEY=value): a Slurm job's worker, found by the name its script gives it. */
const pidsWithEnv = (entry: string) => processes((pid) => fs.readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(entry));

describe("the Slurm executor on a real cluster", { skip: slurmSkip, concurrency: true, timeout: 900_000 }, () => {
  let cluster: SlurmCluster;
  before(async () => {
    cluster = await startSlurmCluster();
  });
  after(() => cluster?.stop());
  /** Dashboard C, done with the node: A's faults take all of it. */
  const othersDone: Promise<void>[] = [];
  const doneWhenOver = () => {
    let done!: () => void;
    othersDone.push(new Promise<void>((r) => (done = r)));
    return done;
  };
  const active = () => execFileSync("squeue", ["--noheader", "--states=PENDING,CONFIGURING,RUNNING,COMPLETING,SUSPENDED", "--format=%i"], { env: cluster.env, encoding: "utf8" }).trim();

  describe("A (SQLite): complete, cancel, scancel, a restart, bad requests; then pre-emption and a node failure", { concurrency: false }, () => {
    let d: SlurmDashboard;
    before(async () => {
      d = await SlurmDashboard.start(cluster);
    });
    after(() => d?.stop());

    test("a tiny run → one sbatch job, RUNNING on the node, the run completed and the job COMPLETED; a sweep of it → its own job, completed", () => submitToComplete(d, true));

    test("cancel from the API → scancel → the run cancelled within 5 s, the job ended", async () => {
      const created = await d.create("slurm-cancel", 5000);
      await d.until("the run training (a metric point stored)", async () => {
        const r = await d.run(created.id);
        return r.status === "running" && (r.summary.update ?? 0) > 0 ? r : null;
      });
      const t0 = Date.now();
      const c = await api<RunDetailDto>(d.env, "POST", `/api/runs/${created.id}/cancel`);
      assert.equal(c.status, 200, JSON.stringify(c.body));
      const cancelled = await d.until("the run cancelled", async () => {
        const r = await d.run(created.id);
        return r.status === "cancelled" ? r : null;
      }, 5_000);
      const s = (Date.now() - t0) / 1000;
      assert.ok(s <= 5, `cancelled after ${s} s`);
      const ended = await d.until("the job ended", async () => {
        const r = await d.run(created.id);
        return ["CANCELLED", "COMPLETED", "FAILED"].includes(jobOf(r).state ?? "") ? r : null;
      }, 30_000);
      // the job's worker heard the cancel too and stops its engine within half a second, so the job
      // either ends by itself (COMPLETED) or is scancelled first by the next pass (CANCELLED)
      assert.ok(["CANCELLED", "COMPLETED"].includes(jobOf(ended).state ?? ""), `the job ended ${jobOf(ended).state}`);
      if (jobOf(ended).state === "CANCELLED") assert.ok(d.server.lines.some((l) => l.includes(`scancel ${jobOf(cancelled).jobId}`)), `the dashboard scancelled job ${jobOf(cancelled).jobId}\n${d.tails()}`);
      assert.equal(jobOf(ended).jobs, 1, "no second job for a cancelled run");
      console.log(`cancel → cancelled in ${s.toFixed(2)} s; job ${jobOf(cancelled).jobId} ${jobOf(ended).state}`);
    });

    test("scancel from a shell mid-run, then the next job's worker killed (-9) → CANCELLED, FAILED; each time queued again and resumed by a new job from its checkpoint: no point lost, none doubled", async () => {
      const STEPS = 80;
      const created = await d.create("slurm-requeue", STEPS);
      const first = await d.until("a checkpoint past step 0 and the run training", async () => {
        const r = await d.run(created.id);
        return r.status === "running" && r.checkpoints.some((c) => c.update >= EVAL_INTERVAL) && (r.summary.update ?? 0) > EVAL_INTERVAL ? r : null;
      });
      const firstJob = jobOf(first).jobId!;
      execFileSync("scancel", [firstJob], { env: cluster.env });
      const resumed = await d.until("a second job running the run", async () => {
        const r = await d.run(created.id);
        return jobOf(r).jobs === 2 && r.status === "running" ? r : null;
      });
      assert.notEqual(jobOf(resumed).jobId, firstJob);
      // the second job's worker killed (-9) once it has trained past its own first checkpoint: the job ends FAILED
      const secondJob = jobOf(resumed).jobId!;
      const before = await d.until("job 2 past a checkpoint of its own", async () => {
        const r = await d.run(created.id);
        return r.status === "running" && jobOf(r).jobs === 2 && (r.summary.update ?? 0) > (first.summary.update ?? 0) + EVAL_INTERVAL ? r : null;
      });
      // the job's processes: its worker and the worker's engine child (same environment); the worker is the one whose parent is not among them
      const procs = pidsWithEnv(`QRAG_WORKER_NAME=slurm-${created.id}-2`);
      const workers = procs.filter((p) => !procs.includes(parentPid(p)));
      assert.equal(workers.length, 1, `one worker process of job 2 (found ${workers.length} of ${procs.length})`);
      process.kill(workers[0], "SIGKILL");
      await d.until("a third job running the run", async () => {
        const r = await d.run(created.id);
        return jobOf(r).jobs === 3 && r.status === "running" ? r : null;
      });
      assert.ok(before.resumeFrom, "job 2 had resumed from a checkpoint");
      const done = await d.until("the run to end", async () => {
        const r = await d.run(created.id);
        return ["completed", "failed", "cancelled"].includes(r.status) ? r : null;
      });
      assert.equal(done.status, "completed", `${done.error}\n${d.tails()}`);
      assert.ok(done.resumeFrom, "the second job resumed from a checkpoint");
      const logs = (await api<{ message: string }[]>(d.env, "GET", `/api/runs/${created.id}/logs?limit=5000`)).body;
      assert.ok(JSON.stringify(logs).includes("queued again"), "the requeue is in the run's log");
      const points = await d.eachPointOnce(created.id, STEPS);
      // both jobs are kept, newest first, each with how it ended, where it ran and for how long
      const ended = await d.until("the third job COMPLETED, the second FAILED", async () => {
        const r = await d.run(created.id);
        return r.jobs[0]?.state === "COMPLETED" && r.jobs[1]?.state === "FAILED" ? r : null;
      }, 30_000);
      assert.deepEqual(ended.jobs.map((j) => [j.number, j.jobId, j.state, j.node]), [[3, jobOf(done).jobId, "COMPLETED", cluster.node], [2, secondJob, "FAILED", cluster.node], [1, firstJob, "CANCELLED", cluster.node]]);
      for (const j of ended.jobs) assert.ok(j.startedAt && j.endedAt && Date.parse(j.submittedAt) <= Date.parse(j.endedAt) && Date.parse(j.startedAt) <= Date.parse(j.endedAt), JSON.stringify(j));
      for (const k of [1, 2]) assert.ok(Date.parse(ended.jobs[k].endedAt!) <= Date.parse(ended.jobs[k - 1].startedAt!) + 2_000, `job ${4 - k} started after job ${3 - k} ended`);
      assert.ok(JSON.stringify(logs).includes(`Slurm job ${secondJob} ended FAILED`), "the FAILED job in the run's log");
      console.log(`scancel ${firstJob}, then job ${secondJob}'s worker killed → resumed as job ${jobOf(done).jobId}; ${points.length} points, each once`);
    });

    test("the dashboard killed (-9) and restarted while a job runs: the job's worker reconnects, the run completes in that one job, each point once; its output in the log live, each line once", async () => {
      const STEPS = 200;
      const created = await d.create("slurm-restart", STEPS);
      const before = await d.until("the run training (a metric point stored)", async () => {
        const r = await d.run(created.id);
        return r.status === "running" && (r.summary.update ?? 0) > 0 ? r : null;
      });
      const jobId = jobOf(before).jobId!;
      const stderrLines = async () =>
        (await api<{ message: string }[]>(d.env, "GET", `/api/runs/${created.id}/logs?limit=5000`)).body.filter((l) => l.message.startsWith(`[job ${jobId} stderr] `)).map((l) => l.message);
      // the job's worker said which run it took on its stderr: that line is in the run's log while the job still runs
      const live = await d.until("the running job's output in the run's log", async () => {
        const lines = await stderrLines();
        return lines.some((l) => l.includes(`assigned run ${created.id}`)) ? lines : null;
      }, 15_000);
      const still = await d.run(created.id);
      assert.ok(still.status === "running" && jobOf(still).state === "RUNNING", `the job still runs: ${still.status} ${jobOf(still).state}`);
      await d.server.kill9();
      await d.restart();
      const ended = await d.completedWithJob(created.id);
      assert.equal(jobOf(ended).jobs, 1, "the same job throughout");
      assert.equal(jobOf(ended).jobId, jobId);
      await d.eachPointOnce(created.id, STEPS);
      // every line of the job's stderr file in the log, in order, once: none doubled by the restart or the final read
      const logged = await d.until("the job's end in the log", async () => {
        const text = JSON.stringify((await api<unknown>(d.env, "GET", `/api/runs/${created.id}/logs?limit=5000`)).body);
        return text.includes(`Slurm job ${jobId} ended COMPLETED`) ? stderrLines() : null;
      }, 10_000);
      const file = fs.readFileSync(path.join(cluster.jobsDir, "runs", `${created.id}-1.err`), "utf8").split("\n").filter((l) => l.trim() !== "");
      assert.ok(file.length >= 2 && live.length <= file.length, `lines seen live ${live.length}, in the file ${file.length}`);
      const asLogged = (l: string) => shortText(l.replace(/\r$/, "").replace(/\t/g, "  "), 500);
      assert.deepEqual(logged.map((l) => l.slice(`[job ${jobId} stderr] `.length)), file.map(asLogged));
      console.log(`job ${jobId}: ${live.length} stderr lines in the log while it ran, ${file.length} after it ended, each once across a restart`);
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
        const r = await api<{ fieldErrors: Record<string, string> }>(d.env, "POST", "/api/runs", { preset: "tiny", ...body });
        assert.equal(r.status, 400, `${JSON.stringify(body)} → ${r.status} ${JSON.stringify(r.body)}`);
        assert.ok(Object.keys(r.body.fieldErrors).includes(field), `${JSON.stringify(body)}: ${JSON.stringify(r.body.fieldErrors)}`);
      }
      // the debug partition allows 60 minutes: sbatch refuses, the run fails quoting it
      const over = await d.create("slurm-over", 10, { queue: "slurm", resources: { time_limit_min: 120 } });
      const failed = await d.until("the run failed", async () => {
        const r = await d.run(over.id);
        return r.status === "failed" ? r : null;
      }, 30_000);
      assert.match(failed.error ?? "", /sbatch refused the job: .*time limit/i);
      assert.equal(jobOf(failed).jobId, null, "no job");
    });

    test("pre-empted, then its node down: each job ends PREEMPTED, then NODE_FAIL; each time the run is queued again and a new job resumes it from its last checkpoint: no point lost, none doubled", async () => {
      // the node to itself: the urgent job and the node's failure end every job on it
      await Promise.all(othersDone);
      // what a failed case of theirs left running goes too
      const left = active().split(/\s+/).filter(Boolean);
      if (left.length) execFileSync("scancel", left, { env: cluster.env });
      await d.until("the other dashboard's jobs gone from the node", async () => active() === "", 60_000);
      const STEPS = 160;
      const t0 = Date.now();
      const created = await d.create("slurm-faults", STEPS);
      const scontrol = (...args: string[]) => execFileSync("scontrol", args, { env: cluster.env, encoding: "utf8" });
      let urgent: string | null = null;
      const at: string[] = [];
      const mark = (what: string) => at.push(`${what} ${((Date.now() - t0) / 1000).toFixed(0)} s`);
      try {
        // 1. a job of a higher-priority partition that needs every CPU of the node pre-empts the run's job
        const first = await d.trainingIn(created.id, 1, EVAL_INTERVAL);
        mark("job 1 training");
        urgent = execFileSync("sbatch", ["--parsable", "--partition=urgent", `--cpus-per-task=${cluster.cpus}`, "--mem=100", "--time=1", `--output=${path.join(cluster.jobsDir, "urgent-%j.out")}`, "--wrap=sleep 1"], { env: cluster.env, encoding: "utf8" }).trim();
        const preempted = await d.until("job 1 ended PREEMPTED", async () => {
          const r = await d.run(created.id);
          return r.jobs.find((j) => j.number === 1)?.state === "PREEMPTED" ? r : null;
        }, 60_000);
        mark("PREEMPTED");
        // the second job trains on: a checkpoint of its own, past every one the first saved
        const second = await d.trainingIn(created.id, 2, Math.max(first.checkpoint, ...preempted.checkpoints.map((c) => c.update)) + 1);
        assert.notEqual(jobOf(second.run).jobId, jobOf(first.run).jobId);
        assert.ok(second.run.resumeFrom, "job 2 resumed from a checkpoint");
        mark("job 2 training");

        // 2. the node goes down under the second job: it ends NODE_FAIL, the third waits for the node
        scontrol("update", `nodename=${cluster.node}`, "state=down", "reason=qrag-test");
        const waiting = await d.until("a third job waiting for the node", async () => {
          const r = await d.run(created.id);
          return jobOf(r).jobs === 3 && jobOf(r).state === "PENDING" && jobOf(r).reason && jobOf(r).reason !== "None" && r.jobs[1]?.state === "NODE_FAIL" ? r : null;
        }, 60_000);
        assert.equal(waiting.status, "queued");
        mark("NODE_FAIL, job 3 waiting");
        console.log(`job ${jobOf(waiting).jobId} waits: ${jobOf(waiting).reason}`);
        scontrol("update", `nodename=${cluster.node}`, "state=resume");
        const done = await d.completedWithJob(created.id);
        assert.ok(done.resumeFrom, "the last job resumed from a checkpoint");
        assert.deepEqual(done.jobs.map((j) => [j.number, j.state, j.node]), [[3, "COMPLETED", cluster.node], [2, "NODE_FAIL", cluster.node], [1, "PREEMPTED", cluster.node]]);
        const logs = await d.logText(created.id);
        assert.equal(logs.match(/resuming [^"]*; run folder/g)?.length, 2, "jobs 2 and 3 each resumed (the engine's line)");
        for (const [i, state] of [[2, "PREEMPTED"], [1, "NODE_FAIL"]] as const) assert.ok(logs.includes(`Slurm job ${done.jobs[i].jobId} ended ${state}`), `${state} in the run's log`);
        const points = await d.eachPointOnce(created.id, STEPS);
        mark("completed");
        console.log(`PREEMPTED (by job ${urgent}), NODE_FAIL, then completed by job ${jobOf(done).jobId} (${at.join(", ")}); ${points.length} points, each once`);
      } finally {
        if (!/State=(IDLE|MIXED|ALLOCATED)\b/.test(scontrol("show", "node", cluster.node))) scontrol("update", `nodename=${cluster.node}`, "state=resume");
        if (urgent) execFileSync("scancel", [urgent], { env: cluster.env });
      }
    });
  });

  describe("C (PostgreSQL; SQLite where none can be started): complete; a time limit hit; killed inside sbatch; sbatch without an answer", { concurrency: false }, () => {
    let d: SlurmDashboard;
    const done = doneWhenOver();
    before(async () => {
      const pg = await pgReady;
      if ("skip" in pg) console.log(`# ${pg.skip}: dashboard C runs on SQLite`);
      d = await SlurmDashboard.start(cluster, "skip" in pg ? undefined : await pg.createDatabase(uniqueDbName("qrag_slurm")));
    });
    after(async () => {
      await d?.stop();
      done();
    });

    test("a tiny run → one sbatch job, the run completed and the job COMPLETED", () => submitToComplete(d, false));

    test("the job's time limit hit mid-run (made 0 by scontrol) → TIMEOUT, the run queued again and resumed by a new job from its last checkpoint: no point lost, none doubled", async () => {
      // long enough never to end before Slurm's limit check (every 30 s); cancelled once the new job trains on
      const t0 = Date.now();
      const created = await d.create("slurm-timeout", 5000);
      const first = await d.trainingIn(created.id, 1, EVAL_INTERVAL);
      const firstJob = jobOf(first.run).jobId!;
      execFileSync("scontrol", ["update", `jobid=${firstJob}`, "timelimit=0"], { env: cluster.env });
      const timedOut = await d.until("job 1 ended TIMEOUT", async () => {
        const r = await d.run(created.id);
        return r.jobs.find((j) => j.number === 1)?.state === "TIMEOUT" ? r : null;
      }, 60_000);
      const s = ((Date.parse(timedOut.jobs.find((j) => j.number === 1)!.endedAt!) - t0) / 1000).toFixed(0);
      const saved = Math.max(...timedOut.checkpoints.map((c) => c.update));
      const second = await d.trainingIn(created.id, 2, saved + 1);
      assert.notEqual(jobOf(second.run).jobId, firstJob);
      assert.ok(second.run.resumeFrom, "job 2 resumed from a checkpoint");
      assert.equal((await api(d.env, "POST", `/api/runs/${created.id}/cancel`)).status, 200);
      const cancelled = await d.until("the run cancelled", async () => {
        const r = await d.run(created.id);
        return r.status === "cancelled" ? r : null;
      }, 30_000);
      assert.deepEqual(cancelled.jobs.map((j) => j.number), [2, 1]);
      const logs = await d.logText(created.id);
      assert.ok(logs.includes(`Slurm job ${firstJob} ended TIMEOUT`) && /resuming [^"]*; run folder/.test(logs), "the TIMEOUT and the resume in the run's log");
      const points = await d.eachPointOnceSoFar(created.id);
      console.log(`time limit: job ${firstJob} TIMEOUT ${s} s after the run was made; job ${jobOf(second.run).jobId} trained on past update ${saved}; ${points} points, each once`);
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
        await d.server.stop();
        await d.restart({ QRAG_SLURM_BIN: bin });
        const created = await d.create(name, 30);
        await d.until("the dashboard inside sbatch", async () => fs.existsSync(path.join(bin, "started")) && jobOf(await d.run(created.id)).state === "SUBMITTING", 30_000);
        await d.server.kill9();
        await d.restart();
        return created.id;
      };
      const named = (id: string) => execFileSync("squeue", ["--noheader", "--states=all", `--name=qrag-${id}`, "--format=%i"], { env: cluster.env, encoding: "utf8" }).trim().split(/\s+/).filter(Boolean);

      // 1. sbatch made the job after the dashboard died: the restarted one adopts it
      const adopted = await killInsideSbatch("slurm-lost-answer");
      await d.until("the orphaned sbatch's job in squeue", async () => named(adopted).length === 1, 30_000);
      const done = await d.completedWithJob(adopted);
      assert.deepEqual(named(adopted), [jobOf(done).jobId], "one job for the run: the one the dead dashboard's sbatch made");
      assert.equal(jobOf(done).jobs, 1);
      assert.deepEqual(done.jobs.map((j) => j.jobId), [jobOf(done).jobId]);
      assert.ok(d.server.lines.some((l) => l.includes(`run ${adopted}: job ${jobOf(done).jobId} was made by an sbatch whose answer was lost`)), d.tails());

      // 2. sbatch made no job: the reservation is undone and the run gets one job
      fs.writeFileSync(path.join(bin, "fail"), "");
      const remade = await killInsideSbatch("slurm-no-job");
      const again = await d.until("a job for the run", async () => {
        const r = await d.run(remade);
        return jobOf(r).jobId ? r : null;
      }, 60_000);
      assert.equal(jobOf(again).jobs, 1, "the attempt that made no job is not counted");
      assert.deepEqual(named(remade), [jobOf(again).jobId]);
      assert.equal((await api(d.env, "POST", `/api/runs/${remade}/cancel`)).status, 200);
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
        return (await d.create(name, 5000)).id;
      };
      /** The run once it has a job (submitted or adopted). */
      const withJob = (id: string, what: string) =>
        d.until(what, async () => {
          const r = await d.run(id);
          return jobOf(r).jobId ? r : null;
        }, 30_000);
      const cancelled = async (id: string) => {
        assert.equal((await api(d.env, "POST", `/api/runs/${id}/cancel`)).status, 200);
        await d.until("the run cancelled", async () => (await d.run(id)).status === "cancelled", 30_000);
      };
      await d.server.stop();
      await d.restart({ QRAG_SLURM_BIN: bin, QRAG_SLURM_COMMAND_TIMEOUT_MS: "1500", QRAG_SLURM_SUBMIT_TRIES: "2" });
      try {
        // 1. sbatch timed out, but slurmctld made the job: it is found by name and adopted, never submitted again
        const slow = await withMode("timeout", "slurm-sbatch-timeout");
        const adopted = await withJob(slow, "the timed-out sbatch's job adopted");
        assert.equal(adopted.status === "failed" ? adopted.error : null, null);
        assert.deepEqual(named(slow), [jobOf(adopted).jobId], "one job for the run");
        assert.equal(callsMade(), 1, "sbatch called once");
        assert.equal(jobOf(adopted).jobs, 1);
        assert.ok(d.server.lines.some((l) => l.includes(`run ${slow}: sbatch got no answer (no answer within 1500 ms)`)), d.tails());
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
        const waiting = await d.until("the run waiting with sbatch's reason", async () => {
          const r = await d.run(down);
          return jobOf(r).state === "SUBMITTING" && jobOf(r).reason ? r : null;
        }, 30_000);
        assert.equal(waiting.status, "queued");
        assert.match(jobOf(waiting).reason!, /^sbatch got no answer 1× \(.*Unable to contact slurm controller/);
        const failed = await d.until("the run failed", async () => {
          const r = await d.run(down);
          return r.status === "failed" ? r : null;
        }, 60_000);
        assert.match(failed.error ?? "", /sbatch got no answer 2× \(.*Unable to contact slurm controller.*\); gave up after 2 tries/);
        assert.equal(callsMade(), 2);
        assert.deepEqual(named(down), []);
        assert.equal(jobOf(failed).jobs, 0);
      } finally {
        await d.server.stop();
        await d.restart();
      }
    });
  });
});

/** A tiny run → one job, RUNNING on the node, the run completed, the job COMPLETED, its output in the log; then, with `sweep`, a sweep of its checkpoint as its own job. */
async function submitToComplete(d: SlurmDashboard, sweep: boolean) {
  const cluster = d.cluster;
  const t0 = Date.now();
  const created = await d.create("slurm-complete", 30);
  assert.equal(created.queue, "slurm");
  assert.deepEqual(created.resources, { cpus: 1, mem_mb: 2000, time_limit_min: 20, gpus: 0 });
  assert.equal(created.executor?.kind, "slurm");
  const running = await d.until("the job RUNNING with the run running", async () => {
    const r = await d.run(created.id);
    return r.status === "running" && jobOf(r).state === "RUNNING" ? r : null;
  });
  assert.match(jobOf(running).jobId ?? "", /^\d+$/);
  assert.equal(jobOf(running).node, cluster.node);
  const ended = await d.completedWithJob(created.id);
  assert.equal(jobOf(ended).jobs, 1, "one job");
  // the job's output reaches the run's log: its worker's own lines on stderr
  const jobId = jobOf(ended).jobId!;
  const logs = await d.until("the job's output in the run's log", async () => {
    const text = JSON.stringify((await api<unknown>(d.env, "GET", `/api/runs/${created.id}/logs?limit=5000`)).body);
    return text.includes(`Slurm job ${jobId} ended COMPLETED`) && text.includes(`[job ${jobId} stderr]`) ? text : null;
  }, 10_000);
  assert.match(logs, new RegExp(`\\[job ${jobId} stderr\\][^"]*assigned run ${created.id}`));
  assert.equal(jobOf(ended).jobId, jobOf(running).jobId, "the same job throughout");
  console.log(`submit → completed in ${((Date.now() - t0) / 1000).toFixed(1)} s (job ${jobOf(ended).jobId})`);

  if (!sweep) return;
  // a sweep of its checkpoint runs on the same queue, as its own Slurm job, and completes
  const t1 = Date.now();
  const made = await api<SweepDto>(d.env, "POST", `/api/runs/${created.id}/sweeps`, { checkpoint: "last", lengths: [20, 60], samples: 2, baselines: false });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const swept = await d.completedWithJob(made.body.run.id);
  assert.equal(swept.queue, "slurm");
  assert.notEqual(jobOf(swept).jobId, jobId, "the sweep's own job");
  const points = (await api<SweepDto>(d.env, "GET", `/api/sweeps/${made.body.run.id}`)).body.points;
  assert.deepEqual(points.map((p) => p.numChunks), [20, 60]);
  console.log(`sweep on Slurm: queued → completed in ${((Date.now() - t1) / 1000).toFixed(1)} s (job ${jobOf(swept).jobId})`);
}
