/**
 * GET /api/runs under its shared-answer cache (server/runs/list-cache.ts): identical queries
 * share one read, and no answer is stale after a change (create, edit, cancel), on the real server
 * (SQLite file, real HTTP) and in the cache itself. Also the page bound: at most 500 rows.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { RunDetailDto, RunListDto } from "../lib/contracts/index.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { createListCache } from "../server/runs/list-cache.ts";
import { tmpDir } from "./platform-helpers.ts";

const bytes = (s: string) => new TextEncoder().encode(s);
const text = async (p: Promise<Uint8Array>) => new TextDecoder().decode(await p);

describe("list cache", () => {
  test("identical concurrent queries share one computation; a change drops it, in flight or done", async () => {
    const cache = createListCache({ ttlMs: 60_000 });
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = async () => {
      const n = ++calls;
      await gate;
      return bytes(`v${n}`);
    };
    const first = [cache.get("k", slow), cache.get("k", slow), cache.get("k", slow)];
    assert.equal(calls, 1, "joined the one in flight");
    assert.equal(await text(cache.get("other", async () => bytes("o"))), "o", "another key is another query");
    cache.invalidate(); // a change committed while v1 was being read
    const afterChange = cache.get("k", slow);
    assert.equal(calls, 2, "a request after the change does not join the older read");
    release();
    assert.deepEqual(await Promise.all(first.map(text)), ["v1", "v1", "v1"]);
    assert.equal(await text(afterChange), "v2");
    assert.equal(await text(cache.get("k", slow)), "v2", "answered from the cache");
    assert.equal(calls, 2);
    cache.invalidate();
    assert.equal(await text(cache.get("k", slow)), "v3");
  });

  test("a failed read is not remembered", async () => {
    const cache = createListCache();
    await assert.rejects(cache.get("k", async () => Promise.reject(new Error("db down"))));
    assert.equal(await text(cache.get("k", async () => bytes("ok"))), "ok");
  });
});

describe("GET /api/runs on the server", () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer({ port: 0, dataDir: tmpDir("qrag-runs-list-"), spawnWorker: false, next: false, log: () => {} });
  });
  after(() => server.close());

  const call = async <T>(method: string, p: string, body?: unknown) => {
    const res = await fetch(`${server.url}${p}`, {
      method,
      headers: method === "GET" ? {} : { "content-type": "application/json", origin: server.url },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as T };
  };
  const list = async (q = "") => (await call<RunListDto>("GET", `/api/runs${q}`)).body;
  const create = async (name: string) => {
    const r = await call<RunDetailDto>("POST", "/api/runs", { preset: "tiny", name });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };

  test("the next answer after each change shows it, while identical requests come in concurrently", async () => {
    const a = await create("list-a");
    const load = () => Promise.all(Array.from({ length: 20 }, () => list("?limit=50")));
    const before = await load();
    assert.ok(before.every((l) => l.total === before[0].total && l.runs.some((r) => r.id === a.id)));

    // created: in the next answer
    const busy = load(); // concurrent readers while the run is created
    const b = await create("list-b");
    const [now] = await Promise.all([list("?limit=50"), busy]);
    assert.equal(now.total, before[0].total + 1);
    assert.ok(now.runs.some((r) => r.id === b.id), "the new run is listed");

    // renamed: in the next answer
    const busy2 = load();
    assert.equal((await call("PATCH", `/api/runs/${a.id}`, { name: "list-a renamed" })).status, 200);
    const [renamed] = await Promise.all([list("?limit=50"), busy2]);
    assert.equal(renamed.runs.find((r) => r.id === a.id)?.name, "list-a renamed");

    // cancelled: in the next answer
    assert.equal((await call("POST", `/api/runs/${b.id}/cancel`)).status, 200);
    assert.equal((await list("?limit=50")).runs.find((r) => r.id === b.id)?.status, "cancelled");
  });

  test("pages: at most 500 rows, limit and offset", async () => {
    assert.equal((await call("GET", "/api/runs?limit=500")).status, 200);
    const over = await call<{ fieldErrors?: Record<string, string> }>("GET", "/api/runs?limit=501");
    assert.equal(over.status, 400);
    assert.ok(over.body.fieldErrors && "limit" in over.body.fieldErrors, JSON.stringify(over.body));
    for (let i = 0; i < 3; i++) await create(`page-${i}`);
    const page = await list("?limit=2&offset=1");
    assert.equal(page.runs.length, 2);
    assert.ok(page.total >= 4);
  });
});
