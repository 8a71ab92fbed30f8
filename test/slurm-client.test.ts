/**
 * The Slurm client against a real single-node Slurm (test/slurm-cluster.ts: Debian's slurm-wlm and
 * munge, started here, no systemd): submit → RUNNING on the node → COMPLETED with the job's output
 * written; scancel → CANCELLED; sbatch's refusals carried as errors naming what is wrong; bad
 * requests refused before sbatch. The tests run side by side, each job on 1 CPU of the node. A
 * time limit hit (TIMEOUT within 30 s of `scontrol update timelimit=0`: Slurm checks limits every
 * 30 s), pre-emption and a node failure are tested end to end in slurm-executor.test.ts, where the
 * run is resumed by a new job.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { SlurmCommandError } from "../server/executors/slurm/command.ts";
import { SlurmClient } from "../server/executors/slurm/client.ts";
import { JobRequestError, type JobRequest } from "../server/executors/slurm/request.ts";
import type { SlurmJob } from "../server/executors/slurm/states.ts";
import { waitFor } from "./platform-helpers.ts";
import { slurmSkip, startSlurmCluster, type SlurmCluster } from "./slurm-cluster.ts";

describe("Slurm client on a real cluster", { skip: slurmSkip, concurrency: true, timeout: 240_000 }, () => {
  let cluster: SlurmCluster;
  let client: SlurmClient;
  before(async () => {
    cluster = await startSlurmCluster();
    // a secret in the dashboard's environment, which no job may see
    client = new SlurmClient({ jobsDir: path.join(cluster.jobsDir, "scripts"), env: { ...cluster.env, QRAG_TEST_SECRET: "dashboard-only" } });
  });
  after(() => cluster?.stop());

  const request = (name: string, script: string, more: Partial<JobRequest> = {}): JobRequest => ({
    script,
    partition: "debug",
    cpus: 1,
    memMb: 100,
    timeLimitMin: 5,
    name,
    stdoutPath: path.join(cluster.jobsDir, `${name}-%j.out`),
    stderrPath: path.join(cluster.jobsDir, `${name}-%j.err`),
    ...more,
  });
  const stateOf = async (id: string): Promise<SlurmJob> => (await client.jobStates([id]))[0];
  const until = (id: string, want: SlurmJob["state"], ms = 60_000) =>
    waitFor(`job ${id} to be ${want}`, async () => {
      const j = await stateOf(id);
      lastSeen.set(id, j);
      return j.state === want ? j : null;
    }, ms, 250, () => `last: ${JSON.stringify(lastSeen.get(id))}\n${cluster.logs()}`);
  const lastSeen = new Map<string, SlurmJob>();
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  test("submit → RUNNING on the node → COMPLETED, its stdout written, its variables (and no others) exported", async () => {
    const go = path.join(cluster.jobsDir, "go-complete");
    const id = await client.submit(
      request("complete", `#!/bin/bash\necho "hello $QRAG_GREETING"\necho "secret=\${QRAG_TEST_SECRET:-none}"\nwhile [ ! -e ${go} ]; do sleep 0.2; done\necho done\n`, {
        env: { QRAG_GREETING: "from a job, with, commas" },
      }),
    );
    assert.match(id, /^\d+$/);
    const running = await until(id, "RUNNING");
    assert.equal(running.state === "RUNNING" && running.node, cluster.node);
    fs.writeFileSync(go, "");
    const done = await until(id, "COMPLETED");
    assert.equal(done.partition, "debug");
    assert.equal(fs.readFileSync(path.join(cluster.jobsDir, `complete-${id}.out`), "utf8"), "hello from a job, with, commas\nsecret=none\ndone\n");
    // the script went to a file of its own in the jobs folder
    assert.equal(fs.readdirSync(path.join(cluster.jobsDir, "scripts")).filter((f) => f.startsWith("complete-")).length, 1);
  });

  test("scancel → CANCELLED, the job's process gone", async () => {
    const pidFile = path.join(cluster.jobsDir, "cancel.pid");
    const id = await client.submit(request("cancel", `#!/bin/bash\nsleep 600 &\necho $! > ${pidFile}\nwait\n`));
    await until(id, "RUNNING");
    const pid = Number(await waitFor("the job's pid", () => fs.existsSync(pidFile) && fs.readFileSync(pidFile, "utf8").trim()));
    assert.ok(alive(pid));
    await client.cancel(id);
    const j = await until(id, "CANCELLED", 30_000);
    assert.equal(j.state === "CANCELLED" && j.node, cluster.node);
    await waitFor(`the job's process ${pid} to end`, () => !alive(pid), 15_000);
    await client.cancel(id); // a second cancel of an ended job is no error
  });

  test("an unknown partition → sbatch's reason naming it", async () => {
    await assert.rejects(client.submit(request("nopart", "#!/bin/bash\ntrue\n", { partition: "no-such-part" })), (e: unknown) => {
      assert.ok(e instanceof SlurmCommandError, String(e));
      assert.match(e.reason, /invalid partition specified: no-such-part/);
      assert.ok(!e.reason.includes("\n"));
      return true;
    });
  });

  test("more than the partition allows → sbatch's reason", async () => {
    for (const [more, why] of [
      [{ memMb: 2048 }, /Memory required by task is not available/],
      [{ cpus: 2 }, /More processors requested than permitted/],
      [{ timeLimitMin: 10 }, /time limit is invalid/],
    ] as const) {
      await assert.rejects(client.submit(request("toobig", "#!/bin/bash\ntrue\n", { partition: "small", ...more })), (e: unknown) => e instanceof SlurmCommandError && why.test(e.reason));
    }
  });

  test("zero or negative resources are refused before sbatch: no script written, no job", async () => {
    const scripts = () => (fs.existsSync(path.join(cluster.jobsDir, "scripts")) ? fs.readdirSync(path.join(cluster.jobsDir, "scripts")).filter((f) => f.startsWith("bad-")) : []);
    for (const bad of [{ cpus: 0 }, { memMb: -5 }, { timeLimitMin: 0 }, { gpus: -1 }] as const) {
      await assert.rejects(client.submit(request("bad", "#!/bin/bash\ntrue\n", bad)), (e: unknown) => {
        assert.ok(e instanceof JobRequestError, String(e));
        assert.deepEqual(Object.keys(e.fields), Object.keys(bad));
        return true;
      });
    }
    assert.deepEqual(scripts(), []);
  });

  test("jobStates: one answer per id in the order asked; an id Slurm does not know is UNKNOWN", async () => {
    const id = await client.submit(request("states", "#!/bin/bash\ntrue\n"));
    await until(id, "COMPLETED");
    const [a, b, c] = await client.jobStates(["999999", id, "999998"]);
    assert.deepEqual([a.jobId, a.state, b.jobId, b.state, c.state], ["999999", "UNKNOWN", id, "COMPLETED", "UNKNOWN"]);
    assert.deepEqual(await client.jobStates(["999997"]), [{ jobId: "999997", state: "UNKNOWN", raw: "not known to squeue or sacct", elapsedS: null, partition: null }]);
    await assert.rejects(client.jobStates(["1,2"]), RangeError);
  });
});
