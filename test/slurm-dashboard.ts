/**
 * One dashboard (server/main.ts, QRAG_EXECUTOR=slurm, no local worker, no Next) on the test
 * cluster, on SQLite or on a PostgreSQL database, with the helpers the executor tests share:
 * create a `tiny` run on the slurm queue, wait for a condition (failing with the dashboard's and
 * the cluster's last lines), wait for a run to complete with its job COMPLETED, and check that
 * every logged update's point is stored exactly once. Several can run at once on one cluster.
 * The dashboard is a bundle of the sources (test-bundles.ts), so its jobs run the worker's bundle
 * beside it (server/worker-entry.ts: a job's worker starts in about half the time, 2.4 s instead
 * of 5 s here); test/browser-slurm.test.ts runs its jobs on the sources, under tsx.
 */
import assert from "node:assert/strict";
import path from "node:path";
import { metricKeysEmitted, type MetricsDto, type RunDetailDto } from "../lib/contracts/index.ts";
import { freePort, tmpDir, waitFor } from "./platform-helpers.ts";
import { api, getRun, startServer, storedPoints, waitHealthy, type Env, type Proc } from "./e2e-helpers.ts";
import { slurmDashboardEnv, type SlurmCluster } from "./slurm-cluster.ts";
import { serverBundle } from "./test-bundles.ts";

export const EVAL_INTERVAL = 10;
const LOG_EVERY = Math.max(1, Math.min(10, Math.floor(EVAL_INTERVAL / 5)));
const overrides = (steps: number) => [`steps_count=${steps}`, `eval_interval=${EVAL_INTERVAL}`, "eval_episodes=8", "eval_episodes_logged=1"];
export const slurmRun = { queue: "slurm", resources: { cpus: 1, mem_mb: 2000, time_limit_min: 20 } };
export const jobOf = (r: RunDetailDto) => r.executor!;
const ENDED = ["completed", "failed", "cancelled"];

export class SlurmDashboard {
  server!: Proc;
  readonly env: Env;
  private constructor(
    readonly cluster: SlurmCluster,
    env: Env,
  ) {
    this.env = env;
  }

  /** A dashboard on `dbUrl` (a PostgreSQL database), else on a fresh SQLite file; started. */
  static async start(cluster: SlurmCluster, dbUrl?: string): Promise<SlurmDashboard> {
    const dataDir = tmpDir("qrag-slurm-exec-");
    const port = await freePort();
    const d = new SlurmDashboard(cluster, { dbUrl: dbUrl ?? `file:${path.join(dataDir, "qrag.db")}`, dataDir, port, url: `http://127.0.0.1:${port}` });
    await d.restart();
    return d;
  }

  /** Starts the dashboard (again) with the test settings plus `extra`; the old one must be stopped. */
  async restart(extra: Record<string, string> = {}): Promise<void> {
    this.server = startServer(this.env, { worker: false, next: false, env: slurmDashboardEnv(this.cluster, { QRAG_SLURM_STALE_SUBMIT_MS: "3000", ...extra }), bundle: serverBundle() });
    await waitHealthy(this.env, this.server);
  }

  async create(name: string, steps: number, more: object = slurmRun): Promise<RunDetailDto> {
    const r = await api<RunDetailDto>(this.env, "POST", "/api/runs", { preset: "tiny", name, overrides: overrides(steps), ...more });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  }

  run(id: string): Promise<RunDetailDto> {
    return getRun(this.env, id);
  }

  tails(): string {
    return `${this.server.tail(30)}\n${this.cluster.logs().slice(-2000)}`;
  }

  until<T>(what: string, fn: () => Promise<T | null | undefined | false>, ms = 180_000): Promise<T> {
    return waitFor(what, fn, ms, 200).catch((e: Error) => assert.fail(`${e.message}\n${this.tails()}`));
  }

  /** The run's log as one JSON text. */
  async logText(id: string): Promise<string> {
    return JSON.stringify((await api<unknown>(this.env, "GET", `/api/runs/${id}/logs?limit=5000`)).body);
  }

  /** Waits for the run to end (it must have completed). */
  async ended(id: string): Promise<RunDetailDto> {
    const done = await this.until("the run to end", async () => {
      const r = await this.run(id);
      return ENDED.includes(r.status) ? r : null;
    });
    assert.equal(done.status, "completed", `${done.error}\n${this.tails()}`);
    return done;
  }

  /** Waits for the run to complete, then for its job to read COMPLETED. */
  async completedWithJob(id: string): Promise<RunDetailDto> {
    await this.ended(id);
    return this.until("the job COMPLETED", async () => {
      const r = await this.run(id);
      return jobOf(r).state === "COMPLETED" ? r : null;
    }, 30_000);
  }

  /** Every logged update's point of every per-update key stored exactly once (none lost, none doubled). */
  async eachPointOnce(id: string, steps: number) {
    const points = await storedPoints(this.env, id);
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
  }

  /**
   * For a run stopped mid-way: every per-update key's points are at one update each, every
   * LOG_EVERY updates from its first to its last, with no gap (none lost) and none twice.
   */
  async eachPointOnceSoFar(id: string): Promise<number> {
    const m = (await api<MetricsDto>(this.env, "GET", `/api/runs/${id}/metrics?width=20000`)).body;
    let checked = 0;
    let points = 0;
    for (const key of metricKeysEmitted("update")) {
      const updates = (m.series[key] ?? []).map((p) => p.update).sort((a, b) => a - b);
      if (!updates.length) continue;
      checked++;
      points += updates.length;
      const want = Array.from({ length: (updates.at(-1)! - updates[0]) / LOG_EVERY + 1 }, (_, i) => updates[0] + i * LOG_EVERY);
      assert.deepEqual(updates, want, `${key}: one point every ${LOG_EVERY} updates, none missing, none twice`);
    }
    assert.ok(checked >= 3, `per-update keys checked: ${checked}`);
    return points;
  }

  /**
   * Waits for the run to train in its `jobs`-th job: that job RUNNING, a checkpoint at `update` or
   * later saved and a later update's metric stored. Answers the run and its newest checkpoint's update.
   */
  async trainingIn(id: string, jobs: number, update: number): Promise<{ run: RunDetailDto; checkpoint: number }> {
    return this.until(`job ${jobs} training past a checkpoint at update ${update}`, async () => {
      const r = await this.run(id);
      const checkpoint = Math.max(-1, ...r.checkpoints.map((c) => c.update));
      return r.status === "running" && jobOf(r).jobs === jobs && jobOf(r).state === "RUNNING" && checkpoint >= update && (r.summary.update ?? 0) > checkpoint ? { run: r, checkpoint } : null;
    });
  }

  stop(): Promise<void> {
    return this.server?.stop() ?? Promise.resolve();
  }
}
