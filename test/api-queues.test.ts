/**
 * GET /api/queues and the queue on runs, on the real server (server/main.ts as a child process,
 * no local worker, no Next) configured with a Slurm queue (QRAG_EXECUTOR=slurm) whose commands
 * are not installed where it looks (QRAG_SLURM_BIN: an empty folder), so its runs fail at sbatch:
 *   - the queues with their executor, partition, settings' defaults, the contract's bounds and
 *     counts of waiting runs per queue;
 *   - the runs list filtered and sorted by queue, a bad queue name → 400 naming it;
 *   - a clone keeps its source's queue and request unless told otherwise; a request sbatch never
 *     took leaves no job among the run's jobs;
 *   - a sweep, and an agent job (issue 30), run on the queue of the run they evaluate, asking for
 *     the same resources.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import type { FieldErrorsDto, QueueDto, RunDetailDto, RunListDto, SweepDto } from "../lib/contracts/index.ts";
import { getDb } from "../server/db/client.ts";
import { resolveConfig } from "../server/qrag/index.ts";
import { writeTinyGguf } from "../server/qrag/reader/tiny-gguf.ts";
import { RESOURCE_LIMITS } from "../lib/contracts/index.ts";
import { freePort, tmpDir, waitFor } from "./platform-helpers.ts";
import { api, getRun, startServer, waitHealthy, type Env, type Proc } from "./e2e-helpers.ts";

describe("queues over the API", { timeout: 120_000 }, () => {
  let server: Proc;
  let env: Env;
  before(async () => {
    const dataDir = tmpDir("qrag-queues-");
    const port = await freePort();
    env = { dbUrl: `file:${path.join(dataDir, "qrag.db")}`, dataDir, port, url: `http://127.0.0.1:${port}` };
    server = startServer(env, {
      worker: false,
      next: false,
      env: { QRAG_EXECUTOR: "slurm", QRAG_SLURM_PARTITION: "gpu", QRAG_SLURM_CPUS: "4", QRAG_SLURM_MEM_MB: "8000", QRAG_SLURM_GPUS: "1", QRAG_SLURM_ACCOUNT: "lab", QRAG_SLURM_BIN: tmpDir("qrag-no-slurm-") },
    });
    await waitHealthy(env, server);
  });
  after(async () => server?.stop());

  const create = async (body: object) => {
    const r = await api<RunDetailDto>(env, "POST", "/api/runs", { preset: "tiny", ...body });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };
  const queues = async () => (await api<QueueDto[]>(env, "GET", "/api/queues")).body;

  test("the queues: executor, partition, defaults, bounds and waiting runs per queue", async () => {
    const before = await queues();
    assert.deepEqual(before, [
      { name: "workers", kind: "workers", partition: null, defaults: {}, limits: RESOURCE_LIMITS, pending: before[0].pending, running: 0 },
      { name: "slurm", kind: "slurm", partition: "gpu", defaults: { cpus: 4, mem_mb: 8000, time_limit_min: 60, gpus: 1, account: "lab" }, limits: RESOURCE_LIMITS, pending: 0, running: 0 },
    ]);
    // no worker here: runs of the workers queue wait, and are counted there
    await create({ name: "w1" });
    await create({ name: "w2" });
    const after = await queues();
    assert.equal(after[0].pending, before[0].pending + 2);
    assert.equal(after[1].pending, 0);
  });

  test("the runs list by queue: filtered, sorted, a bad queue name refused", async () => {
    const w = await create({ name: "on workers" });
    const s = await create({ name: "on slurm", queue: "slurm", resources: { cpus: 2 } });
    assert.equal(s.queue, "slurm");
    assert.deepEqual(s.resources, { cpus: 2, mem_mb: 8000, time_limit_min: 60, gpus: 1, account: "lab" });
    const only = (await api<RunListDto>(env, "GET", "/api/runs?queue=slurm")).body;
    assert.ok(only.runs.some((r) => r.id === s.id));
    assert.ok(only.runs.every((r) => r.queue === "slurm" && r.executor?.kind === "slurm"), JSON.stringify(only.runs.map((r) => r.queue)));
    const workers = (await api<RunListDto>(env, "GET", "/api/runs?queue=workers")).body;
    assert.ok(workers.runs.some((r) => r.id === w.id) && workers.runs.every((r) => r.queue === "workers" && r.executor === null));
    for (const order of ["asc", "desc"] as const) {
      const list = (await api<RunListDto>(env, "GET", `/api/runs?sort=queue&order=${order}`)).body.runs.map((r) => r.queue);
      assert.deepEqual(list, [...list].sort((a, b) => (order === "asc" ? a.localeCompare(b) : b.localeCompare(a))));
      assert.ok(new Set(list).size === 2, "both queues listed");
    }
    const bad = await api<FieldErrorsDto>(env, "GET", "/api/runs?queue=NO%20SUCH");
    assert.equal(bad.status, 400);
    assert.deepEqual(Object.keys(bad.body.fieldErrors), ["queue"]);
  });

  test("a clone keeps its source's queue and request; a job sbatch never took is not among the run's jobs", async () => {
    const src = await create({ name: "slurm source", queue: "slurm", resources: { cpus: 3, time_limit_min: 15, gpus: 0 } });
    // sbatch is not where the settings say: the run fails with the reason, and lists no job
    const failed = await waitFor("the run to fail at submission", async () => {
      const r = await getRun(env, src.id);
      return r.status === "failed" ? r : null;
    }, 30_000, 100, () => server.tail());
    assert.match(failed.error ?? "", /sbatch refused the job: .*sbatch not found/);
    assert.deepEqual(failed.jobs, []);
    const clone = await api<RunDetailDto>(env, "POST", `/api/runs/${src.id}/clone`, {});
    assert.equal(clone.status, 201, JSON.stringify(clone.body));
    assert.equal(clone.body.queue, "slurm");
    assert.deepEqual(clone.body.resources, src.resources);
    const moved = await api<RunDetailDto>(env, "POST", `/api/runs/${src.id}/clone`, { queue: "workers" });
    assert.equal(moved.body.queue, "workers");
    assert.equal(moved.body.executor, null);
    const tooMany = await api<FieldErrorsDto>(env, "POST", `/api/runs/${src.id}/clone`, { resources: { gpus: 65 } });
    assert.equal(tooMany.status, 400);
    assert.deepEqual(Object.keys(tooMany.body.fieldErrors), ["resources.gpus"]);
  });

  test("a sweep and an agent job run on the queue of the run they evaluate, with its request", async () => {
    // a finished Slurm run with a checkpoint, stored as the executor would have left it
    const h = await getDb(env.dbUrl);
    const resources = { cpus: 2, mem_mb: 8000, time_limit_min: 30, gpus: 1, account: "lab" };
    const seed = async (id: string, queue: string) =>
      h.write((db) =>
        db.run.create({
          data: {
            id, name: id, status: "completed", config: JSON.stringify(resolveConfig({ preset: "tiny" })), envName: "babilong", task: "qa1", queue, resources: JSON.stringify(queue === "slurm" ? resources : {}),
            checkpoints: { create: [{ step: 100, update: 10, path: "/nowhere/checkpoints/best", best: true }] },
          },
        }),
      );
    await seed("sweptonslurm", "slurm");
    await seed("sweptonworkers", "workers");
    const onSlurm = await api<SweepDto>(env, "POST", "/api/runs/sweptonslurm/sweeps", { lengths: [20], samples: 2 });
    assert.equal(onSlurm.status, 201, JSON.stringify(onSlurm.body));
    assert.equal(onSlurm.body.run.queue, "slurm");
    assert.deepEqual((await getRun(env, onSlurm.body.run.id)).resources, resources);
    const onWorkers = await api<SweepDto>(env, "POST", "/api/runs/sweptonworkers/sweeps", { lengths: [20], samples: 2 });
    assert.equal(onWorkers.body.run.queue, "workers");
    assert.equal(onWorkers.body.run.executor, null);
    // an agent job ("Run agent…") the same way
    fs.mkdirSync(path.join(env.dataDir, "models"), { recursive: true });
    writeTinyGguf(path.join(env.dataDir, "models", "tiny.gguf"));
    const agent = { model: { provider: "gguf", file: "models/tiny.gguf" }, retriever: "bm25", lengths: [20], samples: 2 };
    const agentOnSlurm = await api<SweepDto>(env, "POST", "/api/runs/sweptonslurm/agent", agent);
    assert.equal(agentOnSlurm.status, 201, JSON.stringify(agentOnSlurm.body));
    assert.equal(agentOnSlurm.body.spec.source, "agent");
    assert.equal(agentOnSlurm.body.run.queue, "slurm");
    assert.equal(agentOnSlurm.body.run.executor?.kind, "slurm");
    assert.deepEqual((await getRun(env, agentOnSlurm.body.run.id)).resources, resources);
    const agentOnWorkers = await api<SweepDto>(env, "POST", "/api/runs/sweptonworkers/agent", agent);
    assert.equal(agentOnWorkers.body.run.queue, "workers");
  });
});
