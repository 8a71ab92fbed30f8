/**
 * The REST API as the dashboard serves it (server/api/router.ts inside server/main.ts, no Next):
 * routing, 404/405/413, the launch form's live check (POST /api/runs/validate) and the schema the
 * form is drawn from, on a real server with a temporary SQLite file.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { ConfigSchemaDto, RunDetailDto, ValidatedConfigDto } from "../lib/contracts/index.ts";
import { MAX_BODY_BYTES } from "../server/api/router.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { resolveConfig } from "../server/qrag/index.ts";
import { tmpDir } from "./platform-helpers.ts";

let server: RunningServer;

before(async () => {
  server = await startServer({ port: 0, dataDir: tmpDir("qrag-api-"), spawnWorker: false, next: false, log: () => {} });
});
after(() => server?.close());

async function call<T>(method: string, path: string, body?: string): Promise<{ status: number; body: T; headers: Headers }> {
  const res = await fetch(`${server.url}${path}`, { method, body, headers: body === undefined ? {} : { "content-type": "application/json" } });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, headers: res.headers };
}

test("routes: unknown paths 404, wrong methods 405 with Allow, path parameters decoded", async () => {
  assert.equal((await call("GET", "/api/health")).status, 200);
  const nope = await call<{ error: string }>("GET", "/api/nope");
  assert.equal(nope.status, 404);
  assert.match(nope.body.error, /no API route \/api\/nope/);
  const put = await call<{ error: string }>("PUT", "/api/runs");
  assert.equal(put.status, 405);
  assert.equal(put.headers.get("allow"), "GET, POST");
  const missing = await call<{ error: string }>("GET", `/api/runs/${encodeURIComponent("no-such-run")}`);
  assert.equal(missing.status, 404);
  assert.match(missing.body.error, /run no-such-run not found/);
  assert.equal((await call("GET", "/api/runs/bad%20id")).status, 400, "a decoded id that fails the contract is a 400");
});

test("a body over the limit is refused with 413 before it is read", async () => {
  const big = JSON.stringify({ notes: "x".repeat(MAX_BODY_BYTES) });
  const r = await call<{ error: string }>("POST", "/api/runs", big);
  assert.equal(r.status, 413);
  assert.match(r.body.error, /request body over/);
  assert.equal((await call<{ total: number }>("GET", "/api/runs?limit=1")).body.total, 0, "nothing was created");
});

test("the form's live check answers the engine's verdict per field, and writes nothing", async () => {
  const tiny = resolveConfig({ preset: "tiny" });
  const ok = await call<ValidatedConfigDto>("POST", "/api/runs/validate", JSON.stringify({ config: tiny }));
  assert.equal(ok.status, 200);
  assert.ok(ok.body.ok);
  assert.deepEqual(ok.body.config, tiny);
  const bad = await call<ValidatedConfigDto>("POST", "/api/runs/validate", JSON.stringify({ config: { ...tiny, steps_count: "many", envs: { ...tiny.envs, task: "qa9" } } }));
  assert.equal(bad.status, 200);
  assert.ok(!bad.body.ok);
  if (!bad.body.ok) {
    assert.equal(bad.body.fieldErrors["config.steps_count"], "must be a number");
    assert.match(bad.body.fieldErrors["config.envs.task"], /expected qa1\.\.qa5/);
  }
  const malformed = await call<{ fieldErrors: Record<string, string> }>("POST", "/api/runs/validate", JSON.stringify({ config: tiny, extra: 1 }));
  assert.equal(malformed.status, 400, "a malformed request is still a 400");
  assert.ok("extra" in malformed.body.fieldErrors);
  assert.equal((await call<{ total: number }>("GET", "/api/runs?limit=1")).body.total, 0);
  const created = await call<RunDetailDto>("POST", "/api/runs", JSON.stringify({ config: tiny, name: "api-router" }));
  assert.equal(created.status, 201);
  assert.deepEqual(created.body.config, ok.body.config, "validate and create run the same pipeline");
});

test("the schema endpoint serves the run config's JSON Schema with descriptions", async () => {
  const r = await call<ConfigSchemaDto>("GET", "/api/schema");
  assert.equal(r.status, 200);
  assert.equal(r.body.schema.type, "object");
  assert.equal(r.body.schema.properties?.steps_count?.description, "optimizer steps");
  assert.ok(r.body.schema.required?.includes("envs"));
  assert.equal(r.body.schema.properties?.envs?.oneOf?.length, 4, "one option per registered dataset");
});
