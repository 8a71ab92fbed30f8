/**
 * The launch form's resource request and the run page's job state in words (lib/resource-form.ts,
 * lib/job-state.ts): the request checked with the contract's own bounds, each error under its
 * field's path as the server's 400 names it; Slurm's states as a research group reads them.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRunBody, RESOURCE_LIMITS } from "../lib/contracts/index.ts";
import { resourceDraft, resourceRequestOf } from "../lib/resource-form.ts";
import { jobSeconds, jobStateText, jobStateTone } from "../lib/job-state.ts";

test("a queue's defaults fill the fields, and the fields give back the same request", () => {
  const defaults = { cpus: 2, mem_mb: 4096, time_limit_min: 60, gpus: 0, account: "lab" };
  const draft = resourceDraft(defaults);
  assert.deepEqual(draft, { cpus: "2", mem_mb: "4096", time_limit_min: "60", gpus: "0", account: "lab" });
  assert.deepEqual(resourceRequestOf(draft), { request: defaults, errors: {} });
  // a blank field is left out (the queue's default applies on the server)
  assert.deepEqual(resourceRequestOf({ cpus: " ", gpus: "1", gpu_type: "a100" }), { request: { gpus: 1, gpu_type: "a100" }, errors: {} });
});

test("each out-of-bounds or malformed field is an error under its own path, the server's words", () => {
  const { errors } = resourceRequestOf({ gpus: String(RESOURCE_LIMITS.gpus.max + 1), cpus: "0", mem_mb: "1.5", time_limit_min: "ten", qos: "-x" });
  assert.deepEqual(Object.keys(errors).sort(), ["resources.cpus", "resources.gpus", "resources.mem_mb", "resources.qos", "resources.time_limit_min"]);
  assert.equal(errors["resources.gpus"], "at most 64");
  assert.equal(errors["resources.cpus"], "at least 1");
  assert.equal(errors["resources.mem_mb"], "a whole number");
  assert.equal(errors["resources.time_limit_min"], "a whole number");
  // the same body the server parses fails on the same fields
  const server = createRunBody.safeParse({ resources: { gpus: 65, cpus: 0 } });
  assert.equal(server.success, false);
  assert.deepEqual(server.error!.issues.map((i) => i.path.join(".")).sort(), ["resources.cpus", "resources.gpus"]);
  // at the bounds: accepted
  assert.deepEqual(resourceRequestOf({ gpus: "64", cpus: "1" }).errors, {});
});

test("Slurm's states in words: why a job waits, where it runs, how it ended", () => {
  assert.equal(jobStateText({ state: "PENDING", node: null, reason: "Resources" }), "PENDING (Resources)");
  assert.equal(jobStateText({ state: "RUNNING", node: "gpu07", reason: null }), "RUNNING on gpu07");
  assert.equal(jobStateText({ state: "TIMEOUT", node: "gpu07", reason: null }), "TIMEOUT on gpu07");
  assert.equal(jobStateText({ state: "CANCELLED", node: null, reason: "Priority" }), "CANCELLED (Priority)");
  assert.equal(jobStateText({ state: "COMPLETED", node: "gpu07", reason: "None" }), "COMPLETED on gpu07");
  assert.equal(jobStateText({ state: "SUBMITTING", node: null, reason: null }), "SUBMITTING (sbatch)");
  assert.equal(jobStateText({ state: "SUBMITTING", node: null, reason: "sbatch got no answer 1× (no answer within 20000 ms)" }), "SUBMITTING (sbatch got no answer 1× (no answer within 20000 ms))");
  assert.equal(jobStateText({ state: null, node: null, reason: null }), "not submitted yet");
  assert.deepEqual(["PENDING", "RUNNING", "COMPLETED", "PREEMPTED", "NODE_FAIL", "TIMEOUT"].map(jobStateTone), ["queued", "running", "completed", "cancelled", "failed", "failed"]);
});

test("a job's elapsed time: start to end, or to now while it runs; none before it started", () => {
  const t0 = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(jobSeconds({ startedAt: null, endedAt: null }, t0), null);
  assert.equal(jobSeconds({ startedAt: "2026-01-01T00:00:00Z", endedAt: null }, t0 + 90_000), 90);
  assert.equal(jobSeconds({ startedAt: "2026-01-01T00:00:00Z", endedAt: "2026-01-01T00:02:00Z" }, t0 + 900_000), 120);
});
