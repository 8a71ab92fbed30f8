/**
 * One worker id, one worker: real worker processes against a real server.
 *   - A second process with the id of a connected worker is refused (it keeps retrying and takes
 *     over only once the first is gone); the first is never disconnected by it.
 *   - A dashboard killed with -9 leaves its local worker running; the next dashboard on the same
 *     data folder ends it (other URL) or adopts it (same URL) instead of starting a second worker
 *     with the same id, and ends it when it shuts down.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import type { WorkerDto } from "../lib/contracts/index.ts";
import { startServer as startInProcess, type RunningServer } from "../server/main.ts";
import { freePort, processes, tmpDir, waitFor } from "./platform-helpers.ts";
import { TOKEN, api, startServer, startWorker, waitHealthy, type Env, type Proc } from "./e2e-helpers.ts";
import { workerBundle } from "./test-bundles.ts";

const procs: Proc[] = [];
let inProcess: RunningServer | null = null;
after(async () => {
  for (const p of procs) await p.kill9();
  await inProcess?.close();
});

const alive = (pid: number) => fs.existsSync(`/proc/${pid}`) && !/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"));

/** Pids of worker processes serving `dataDir`. */
function workersOf(dataDir: string): number[] {
  return processes((pid) => {
    const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return cmd.some((a) => a.endsWith(path.join("worker", "main.ts"))) && cmd.includes(dataDir) && alive(pid);
  });
}

test("a second process with a connected worker's id is refused, and takes over once the first is gone", async () => {
  const lines: string[] = [];
  const dataDir = tmpDir("qrag-ident-");
  inProcess = await startInProcess({ port: 0, dataDir, spawnWorker: false, next: false, workerToken: TOKEN, log: (m) => lines.push(m) });
  const env: Env = { dbUrl: inProcess.databaseUrl, dataDir, port: inProcess.port, url: inProcess.url };
  const workers = async () => (await api<WorkerDto[]>(env, "GET", "/api/workers")).body;
  // both use <dataDir>/worker-twin/worker-twin.id: one id
  // bundles of the worker's sources (test-bundles.ts): each start ~2.5 s of CPU quicker than under tsx
  const first = startWorker(env, "twin", workerBundle());
  procs.push(first);
  const online = await waitFor("the first worker online", async () => (await workers()).find((w) => w.name === "twin" && w.status !== "offline"), 60_000);
  const second = startWorker(env, "twin", workerBundle());
  procs.push(second);
  await waitFor("the second worker refused", () => second.lines.some((l) => /already connected/.test(l)), 60_000);
  assert.ok(first.alive() && second.alive());
  assert.ok(!lines.some((l) => /twin socket closed/.test(l)), `the first worker was not disconnected:\n${lines.join("\n")}`);
  const now = (await workers()).filter((w) => w.id === online.id);
  assert.equal(now.length, 1);
  assert.notEqual(now[0].status, "offline");

  await first.kill9();
  await waitFor("the second worker to take over", () => second.lines.some((l) => /connected to http/.test(l)), 60_000);
  await waitFor("the worker online again", async () => (await workers()).find((w) => w.id === online.id && w.status !== "offline"), 30_000);
  await inProcess.close();
  inProcess = null;
});

test("a restarted dashboard ends (other URL) or adopts (same URL) the local worker a killed one left, and ends it on exit", { skip: process.platform !== "linux" ? "reads /proc" : false }, async () => {
  const dataDir = tmpDir("qrag-local-");
  const dbUrl = `file:${path.join(dataDir, "qrag.db")}`;
  const envAt = (port: number): Env => ({ dbUrl, dataDir, port, url: `http://127.0.0.1:${port}` });
  const pidIn = (p: Proc) => [...p.lines.join("\n").matchAll(/local worker started \(pid (\d+)\)/g)].map((m) => Number(m[1])).at(-1);
  const up = async (env: Env): Promise<Proc> => {
    const p = startServer(env, { worker: true, next: false });
    procs.push(p);
    await waitHealthy(env, p);
    return p;
  };
  const localOnline = (env: Env) =>
    waitFor("the local worker online", async () => (await api<WorkerDto[]>(env, "GET", "/api/workers")).body.find((w) => w.name === "local" && w.status !== "offline"), 60_000);

  let env = envAt(await freePort());
  let server = await up(env);
  const first = await waitFor("the local worker's pid", () => pidIn(server), 30_000);
  await localOnline(env);
  await server.kill9();
  assert.ok(alive(first), "kill -9 of the dashboard leaves its local worker running");

  // another port: the stale worker serves a URL nobody answers; it is ended and replaced
  env = envAt(await freePort());
  server = await up(env);
  const second = await waitFor("a new local worker", () => pidIn(server), 30_000);
  assert.notEqual(second, first);
  await waitFor("the stale worker ended", () => !alive(first), 15_000);
  assert.ok(server.lines.some((l) => l.includes(`ending the local worker (pid ${first})`)), server.tail());
  await localOnline(env);
  assert.deepEqual(workersOf(dataDir), [second], "one local worker");

  // the same URL again: the running worker is adopted, not doubled
  await server.kill9();
  server = await up(env);
  await waitFor("the adoption", () => server.lines.some((l) => l.includes(`(pid ${second})`) && l.includes("adopted")), 30_000);
  assert.equal(pidIn(server), undefined, "no second worker started");
  await localOnline(env);
  assert.deepEqual(workersOf(dataDir), [second], "still one local worker");

  // a clean shutdown ends the adopted worker too
  await server.stop();
  await waitFor("the adopted worker to exit", () => !alive(second), 15_000);
  assert.ok(!fs.existsSync(path.join(dataDir, "local-worker.json")), "its record is removed");
});
