/**
 * The Slurm client's pure parts, on output captured from a real slurmctld 22.05 (test/fixtures/slurm/:
 * squeue with the client's format, sbatch's refusals): job ids, durations, states, the one-line
 * reasons, the request check and sbatch's argv. The real cluster's tests are in slurm-client.test.ts.
 */
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { isTransientReason, oneLineReason } from "../server/executors/slurm/command.ts";
import { parseElapsed, parseSacct, parseSbatchId, parseSqueue } from "../server/executors/slurm/parse.ts";
import { checkJobRequest, JobRequestError, sbatchArgs, type JobRequest } from "../server/executors/slurm/request.ts";
import { isEnded, jobStateFrom } from "../server/executors/slurm/states.ts";

const FIXTURES = path.join(import.meta.dirname, "fixtures", "slurm");

test("sbatch --parsable: the id alone or with its cluster; anything else is no id", () => {
  assert.equal(parseSbatchId("1234\n"), "1234");
  assert.equal(parseSbatchId("1234;gpu-cluster\n"), "1234");
  assert.equal(parseSbatchId("sbatch: warning: something\n77\n"), "77");
  assert.equal(parseSbatchId(""), null);
  assert.equal(parseSbatchId("Submitted batch job 12\n"), null);
});

test("Slurm durations → seconds", () => {
  assert.equal(parseElapsed("0:00"), 0);
  assert.equal(parseElapsed("1:18"), 78);
  assert.equal(parseElapsed("2:03:04"), 2 * 3600 + 3 * 60 + 4);
  assert.equal(parseElapsed("1-00:00:01"), 86_401);
  assert.equal(parseElapsed("00:00:03"), 3);
  for (const s of ["INVALID", "UNLIMITED", "", "1:2:3:4"]) assert.equal(parseElapsed(s), null, s);
});

test("squeue --states=all (captured): every state of the union, with reason, node and time used", () => {
  const jobs = parseSqueue(fs.readFileSync(path.join(FIXTURES, "squeue-states.txt"), "utf8"));
  const by = new Map(jobs.map((j) => [j.jobId, j]));
  assert.equal(jobs.length, 9);
  assert.deepEqual(by.get("1"), { jobId: "1", state: "COMPLETED", node: "vm", reason: null, exitCode: null, elapsedS: 3, partition: "debug" });
  assert.deepEqual(by.get("8"), { jobId: "8", state: "RUNNING", node: "vm", elapsedS: 29, partition: "debug" });
  assert.deepEqual(by.get("9"), { jobId: "9", state: "PENDING", reason: "Resources", elapsedS: 0, partition: "debug" });
  assert.deepEqual(by.get("3"), { jobId: "3", state: "TIMEOUT", node: "vm", reason: "TimeLimit", exitCode: null, elapsedS: 78, partition: "debug" });
  // cancelled while waiting: no node, and the reason it waited for is kept
  assert.deepEqual(by.get("5"), { jobId: "5", state: "CANCELLED", node: null, reason: "MaxMemPerLimit", exitCode: null, elapsedS: 0, partition: "small" });
  assert.equal(by.get("7")?.state, "FAILED");
  assert.deepEqual(jobs.filter(isEnded).map((j) => j.jobId), ["2", "1", "7", "3", "4", "5", "6"]);
});

test("squeue: lines that do not fit (headers, errors, a field more or less) are skipped", () => {
  assert.deepEqual(parseSqueue("JOBID|STATE|REASON|NODELIST|TIME|PARTITION\nslurm_load_jobs error: x\n5|RUNNING|None|vm|0:01\n\n"), []);
});

test("sacct --parsable2 (written in sacct's format: no slurmdbd here to capture from)", () => {
  const out = "41|CANCELLED by 0|None|gpu-07|00:12:03|gpu|0:15\n42|NODE_FAIL|None|gpu-03|1-02:00:00|gpu|0:0\n43|OUT_OF_MEMORY|OutOfMemory|gpu-01|00:00:09|gpu|0:125\n44|PREEMPTED|None|gpu-02|00:30:00|gpu|0:0\n";
  const [a, b, c, d] = parseSacct(out);
  assert.deepEqual(a, { jobId: "41", state: "CANCELLED", node: "gpu-07", reason: null, exitCode: "0:15", elapsedS: 723, partition: "gpu" });
  assert.equal(b.state, "NODE_FAIL");
  assert.equal(b.elapsedS, 93_600);
  assert.deepEqual([c.state, d.state], ["OUT_OF_MEMORY", "PREEMPTED"]);
});

test("states: waiting again and starting fold into PENDING and RUNNING; an unknown name is UNKNOWN with its text", () => {
  assert.deepEqual(jobStateFrom("REQUEUED", "None"), { state: "PENDING", reason: "REQUEUED" });
  assert.deepEqual(jobStateFrom("PENDING", "QOSMaxGRESPerUser"), { state: "PENDING", reason: "QOSMaxGRESPerUser" });
  assert.deepEqual(jobStateFrom("CONFIGURING", "None", "gpu-01"), { state: "RUNNING", node: "gpu-01" });
  assert.deepEqual(jobStateFrom("COMPLETING", "None", "gpu-01"), { state: "COMPLETING", node: "gpu-01" });
  assert.deepEqual(jobStateFrom("WEIRD_NEW"), { state: "UNKNOWN", raw: "WEIRD_NEW" });
});

test("sbatch's refusals (captured) → one printable line naming what is wrong", () => {
  const errors = JSON.parse(fs.readFileSync(path.join(FIXTURES, "sbatch-errors.json"), "utf8")) as Record<string, string>;
  assert.equal(oneLineReason(errors["unknown partition"]), "invalid partition specified: nopart; Batch job submission failed: Invalid partition name specified");
  assert.equal(oneLineReason(errors["memory over the partition's"]), "Batch job submission failed: Memory required by task is not available");
  assert.equal(oneLineReason(errors["gpus on a node without"]), "Invalid generic resource (gres) specification");
  // control characters escaped, long text clipped
  const r = oneLineReason(`sbatch: error: bad \u001b[31m${"x".repeat(1000)}`);
  assert.ok(!r.includes("\u001b") && r.length <= 300 && r.endsWith("…"), r);
});

test("sbatch's refusals are final; a controller out of reach or too busy to answer is worth asking again", () => {
  const errors = JSON.parse(fs.readFileSync(path.join(FIXTURES, "sbatch-errors.json"), "utf8")) as Record<string, string>;
  for (const [what, text] of Object.entries(errors)) assert.equal(isTransientReason(text), false, what);
  for (const text of [
    "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation",
    "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)",
    "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying",
    "sbatch: error: slurm_persist_conn_open_without_init: failed to open persistent connection to host:ctl:6819: Connection refused",
  ]) assert.equal(isTransientReason(text), true, text);
});

const ok: JobRequest = {
  script: "#!/bin/bash\necho hi\n",
  partition: "gpu",
  cpus: 4,
  memMb: 16_000,
  timeLimitMin: 120,
  name: "qrag run 42",
  stdoutPath: "/data/slurm/42.out",
  stderrPath: "/data/slurm/42.err",
};

test("a job request: zero, negative or fractional resources and odd names are refused naming the field", () => {
  const refused = (r: Partial<JobRequest> & Record<string, unknown>) => {
    try {
      checkJobRequest({ ...ok, ...r } as JobRequest);
    } catch (e) {
      assert.ok(e instanceof JobRequestError);
      return Object.keys(e.fields);
    }
    assert.fail(`accepted ${JSON.stringify(r)}`);
  };
  assert.deepEqual(refused({ cpus: 0 }), ["cpus"]);
  assert.deepEqual(refused({ memMb: -1 }), ["memMb"]);
  assert.deepEqual(refused({ timeLimitMin: 0 }), ["timeLimitMin"]);
  assert.deepEqual(refused({ gpus: -1 }), ["gpus"]);
  assert.deepEqual(refused({ cpus: 1.5 }), ["cpus"]);
  assert.deepEqual(refused({ partition: "gpu --uid=0" }), ["partition"]);
  assert.deepEqual(refused({ partition: "-x" }), ["partition"]);
  assert.deepEqual(refused({ gpuType: "a100" }), ["gpuType"]);
  assert.deepEqual(refused({ stdoutPath: "rel/out" }), ["stdoutPath"]);
  assert.deepEqual(refused({ name: "a\nb" }), ["name"]);
  assert.deepEqual(refused({ script: "echo no interpreter" }), ["script"]);
  assert.deepEqual(refused({ env: { "A-B": "x" } }), ["env.A-B"]);
  assert.deepEqual(refused({ env: { ALL: "x" } }), ["env.ALL"]);
  assert.deepEqual(refused({ extra: 1 }), ["request"]);
  assert.deepEqual(refused({ cpus: 0, memMb: 0 }).sort(), ["cpus", "memMb"]);
  assert.equal(checkJobRequest({ ...ok, gpus: 0 }).gpus, 0);
});

test("sbatch's argv: one task, resources as flags, never requeued by Slurm itself, GPUs as gres, only PATH and the job's variables exported", () => {
  const args = sbatchArgs(checkJobRequest({ ...ok, gpus: 2, gpuType: "a100", account: "lab", qos: "normal", env: { QRAG_TOKEN: "t,with,commas", PATH: "/x" } }), "/data/slurm/j.sh", "/data/slurm");
  assert.deepEqual(args, [
    "--parsable",
    "--job-name=qrag run 42",
    "--partition=gpu",
    "--nodes=1",
    "--ntasks=1",
    "--cpus-per-task=4",
    "--mem=16000M",
    "--time=120",
    "--no-requeue",
    "--output=/data/slurm/42.out",
    "--error=/data/slurm/42.err",
    "--chdir=/data/slurm",
    "--export=PATH,QRAG_TOKEN",
    "--gres=gpu:a100:2",
    "--account=lab",
    "--qos=normal",
    "/data/slurm/j.sh",
  ]);
  assert.ok(!sbatchArgs(checkJobRequest(ok), "/j.sh", "/").some((a) => a.startsWith("--gres") || a.startsWith("--account") || a.startsWith("--qos")));
});
