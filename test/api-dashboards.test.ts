/**
 * Saved dashboards over REST (GET/POST /api/dashboards, GET/PATCH/DELETE /api/dashboards/:id) on
 * the real server with a temporary SQLite file, and on PostgreSQL when one can be started: specs
 * round-trip, bounds are enforced per field (nothing written), unknown ids answer 404.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { DashboardDto, DashboardSpec } from "../lib/contracts/index.ts";
import { MAX_COMPARE_RUNS, MAX_RUN_COLUMNS, MAX_WHERE } from "../lib/contracts/index.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { startPostgres, tmpDir, uniqueDbName } from "./platform-helpers.ts";

async function call<T>(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${base}${path}`, { method, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body), headers: method === "GET" ? {} : { "content-type": "application/json" } });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

const spec: DashboardSpec = { runs: ["r1", "r2", "r3"], panels: ["qf_loss", "eval_coverage"], group: "envs.task", band: "minmax", smoothing: 0.3, x: "step", hidden: ["r2"] };

type Opened = { server: RunningServer; done?: () => Promise<void> | void } | { skip: string };

/** The suites run one after the other: each opens its server in `before` (one database per process). */
function suite(label: string, open: () => Promise<Opened>) {
  describe(`dashboards API (${label})`, () => {
    let opened: Opened = { skip: "not started" };
    let base = "";
    before(async () => {
      opened = await open();
      if ("server" in opened) base = opened.server.url;
      else console.log(`# ${label}: ${opened.skip}`);
    });
    after(async () => {
      if (!("server" in opened)) return;
      await opened.server.close();
      await opened.done?.();
    });

    test("create, read, list, rename, change the spec, delete", async (t) => {
      if ("skip" in opened) return t.skip(opened.skip);
      const created = await call<DashboardDto>(base, "POST", "/api/dashboards", { name: "  qa2 seeds  ", spec });
      assert.equal(created.status, 201);
      assert.equal(created.body.name, "qa2 seeds", "the name is trimmed");
      assert.deepEqual(created.body.spec, spec);
      const id = created.body.id;
      const got = await call<DashboardDto>(base, "GET", `/api/dashboards/${id}`);
      assert.equal(got.status, 200);
      assert.deepEqual(got.body, created.body);
      const list = await call<DashboardDto[]>(base, "GET", "/api/dashboards");
      assert.ok(list.body.some((d) => d.id === id && d.name === "qa2 seeds"));

      const renamed = await call<DashboardDto>(base, "PATCH", `/api/dashboards/${id}`, { name: "renamed" });
      assert.equal(renamed.status, 200);
      assert.equal(renamed.body.name, "renamed");
      assert.deepEqual(renamed.body.spec, spec, "a rename keeps the spec");
      const filterSpec: DashboardSpec = { filter: { status: ["running", "completed"], q: "qa2", tag: "sweep-a" }, group: "algo.encoder.type" };
      const respec = await call<DashboardDto>(base, "PATCH", `/api/dashboards/${id}`, { spec: filterSpec });
      assert.deepEqual(respec.body.spec, filterSpec);
      assert.equal((await call<DashboardDto>(base, "GET", `/api/dashboards/${id}`)).body.spec.filter?.q, "qa2");

      // a saved runs view: its filter expression, chosen columns and sort, and a panel's axis order and scales, kept as saved
      const viewSpec: DashboardSpec = {
        filter: { status: ["completed"], where: "envs.task = qa2 and best.eval_coverage >= 0.9" },
        table: { cols: ["algo.optimizer.lr", "best.eval_coverage", "min.qf_loss"], sort: "best.eval_coverage", order: "asc" },
        pcoord: { axes: ["envs.task", "algo.optimizer.lr"], metric: "best.eval_coverage", scales: [{ key: "algo.optimizer.lr", scale: "log" }] },
      };
      assert.equal((await call(base, "PATCH", `/api/dashboards/${id}`, { spec: viewSpec })).status, 200);
      assert.deepEqual((await call<DashboardDto>(base, "GET", `/api/dashboards/${id}`)).body.spec, viewSpec);

      const del = await call<{ deleted: string }>(base, "DELETE", `/api/dashboards/${id}`);
      assert.equal(del.status, 200);
      assert.equal((await call(base, "GET", `/api/dashboards/${id}`)).status, 404);
      assert.equal((await call(base, "DELETE", `/api/dashboards/${id}`)).status, 404);
      assert.equal((await call(base, "PATCH", `/api/dashboards/${id}`, { name: "x" })).status, 404);
    });

    test("bad input is a 400 naming the field, and nothing is written", async (t) => {
      if ("skip" in opened) return t.skip(opened.skip);
      const count = async () => (await call<DashboardDto[]>(base, "GET", "/api/dashboards")).body.length;
      const before = await count();
      const bad = async (body: unknown, field: string, message?: RegExp) => {
        const r = await call<{ error: string; fieldErrors: Record<string, string> }>(base, "POST", "/api/dashboards", body);
        assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 80)} is refused`);
        assert.ok(field in r.body.fieldErrors, `${field} named in ${JSON.stringify(r.body.fieldErrors)}`);
        if (message) assert.match(r.body.fieldErrors[field], message);
      };
      await bad({ name: "x".repeat(201), spec }, "name", /at most 200/);
      await bad({ name: "   ", spec }, "name");
      await bad({ name: "many", spec: { runs: Array.from({ length: MAX_COMPARE_RUNS + 1 }, (_, i) => `r${i}`) } }, "spec.runs", /at most 200 runs/);
      await bad({ name: "none", spec: { panels: ["qf_loss"] } }, "spec.runs", /at least one run or a filter/);
      await bad({ name: "both", spec: { runs: ["a"], filter: { q: "x" } } }, "spec.runs", /not both/);
      await bad({ name: "key", spec: { runs: ["a"], group: "envs.task; drop" } }, "spec.group");
      await bad({ name: "smooth", spec: { runs: ["a"], smoothing: 5 } }, "spec.smoothing");
      await bad({ name: "panels", spec: { runs: ["a"], panels: Array.from({ length: 21 }, (_, i) => `k${i}`) } }, "spec.panels");
      await bad({ name: "status", spec: { filter: { status: ["bogus"] } } }, "spec.filter.status.0");
      await bad({ name: "extra", spec: { runs: ["a"] }, extra: 1 }, "extra");
      // the runs-table panel, the filter expression and the axis scales: bounded, each bad key named
      await bad({ name: "cols", spec: { runs: ["a"], table: { cols: Array.from({ length: MAX_RUN_COLUMNS + 1 }, (_, i) => `k${i}`) } } }, "spec.table.cols", /at most 12 columns/);
      await bad({ name: "col", spec: { runs: ["a"], table: { cols: ["envs.task", "best.nope"] } } }, "spec.table.cols.1", /unknown metric nope/);
      await bad({ name: "sort", spec: { runs: ["a"], table: { cols: [], sort: "a b" } } }, "spec.table.sort", /not a column/);
      await bad({ name: "order", spec: { runs: ["a"], table: { cols: [], order: "up" } } }, "spec.table.order");
      await bad({ name: "where", spec: { filter: { where: `envs.task = ${"x".repeat(MAX_WHERE)}` } } }, "spec.filter.where", /at most 500 characters/);
      await bad({ name: "token", spec: { filter: { where: "envs.task => qa2" } } }, "spec.filter.where", /qa2|>/);
      await bad({ name: "scale", spec: { runs: ["a"], pcoord: { axes: ["envs.task"], metric: "best.eval_coverage", scales: [{ key: "envs.task", scale: "cubic" }] } } }, "spec.pcoord.scales.0.scale");
      const long = await call<{ error: string; fieldErrors: Record<string, string> }>(base, "POST", "/api/dashboards", { name: "echo", spec: { filter: { where: `envs.task = ${"y".repeat(5000)}` } } });
      assert.ok(!JSON.stringify(long.body).includes("y".repeat(100)), "a long expression is not echoed back");
      const notJson = await call<{ error: string }>(base, "POST", "/api/dashboards", "{ not json");
      assert.equal(notJson.status, 400);
      assert.equal(await count(), before, "nothing was created");
      assert.equal((await call(base, "GET", "/api/dashboards/bad%20id")).status, 400);
      assert.equal((await call(base, "PUT", "/api/dashboards")).status, 405);
    });
  });
}

suite("SQLite", async () => ({ server: await startServer({ port: 0, dataDir: tmpDir("qrag-dash-"), spawnWorker: false, next: false, log: () => {} }) }));
suite("PostgreSQL", async () => {
  const pg = await startPostgres();
  if ("skip" in pg) return pg;
  const databaseUrl = await pg.createDatabase(uniqueDbName("qrag_dash"));
  const server = await startServer({ port: 0, dataDir: tmpDir("qrag-dash-pg-"), databaseUrl, spawnWorker: false, next: false, log: () => {} });
  return { server, done: () => pg.stop() };
});
