/**
 * Issue 10's cross-site findings, re-run against the real server (server/main.ts, no Next, a
 * real SQLite file): a foreign Origin, a text/plain or form body, a rebinding Host header and a
 * foreign Origin on the /ui socket are refused and write nothing; the dashboard's own requests
 * and an allowed proxy origin go through.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { io } from "socket.io-client";
import type { RunListDto } from "../lib/contracts/index.ts";
import { UI_NAMESPACE } from "../lib/contracts/index.ts";
import { resolveConfig } from "../server/qrag/index.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { tmpDir } from "./platform-helpers.ts";

let server: RunningServer;
const PROXY = "https://studio.example.org";

before(async () => {
  server = await startServer({ port: 0, dataDir: tmpDir("qrag-origin-"), spawnWorker: false, next: false, allowedOrigins: [PROXY], log: () => {} });
});
after(() => server?.close());

/** A raw request (fetch may not set Host), answered with status and parsed body. */
function raw(method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: { error?: string } | undefined }> {
  const u = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as { error?: string }) : undefined }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const runCount = async () => ((await (await fetch(`${server.url}/api/runs?limit=1`)).json()) as RunListDto).total;
const body = () => JSON.stringify({ config: resolveConfig({ preset: "tiny" }), name: "csrf" });
const own = () => new URL(server.url).host;

test("a cross-site POST is refused and creates nothing; the dashboard's own origin and an allowed proxy go through", async () => {
  const before = await runCount();
  const evil = await raw("POST", "/api/runs", { host: own(), origin: "http://evil.example", "content-type": "application/json" }, body());
  assert.equal(evil.status, 403);
  assert.match(evil.body?.error ?? "", /cross-origin/);
  const sandboxed = await raw("POST", "/api/runs", { host: own(), origin: "null", "content-type": "application/json" }, body());
  assert.equal(sandboxed.status, 403, "an opaque origin (sandboxed frame, file:) is not the dashboard");
  const fetchMeta = await raw("POST", "/api/runs", { host: own(), "sec-fetch-site": "cross-site", "content-type": "application/json" }, body());
  assert.equal(fetchMeta.status, 403);
  assert.equal(await runCount(), before, "nothing was created");

  const mine = await raw("POST", "/api/runs", { host: own(), origin: `http://${own()}`, "content-type": "application/json" }, body());
  assert.equal(mine.status, 201);
  const proxied = await raw("POST", "/api/runs", { host: own(), origin: PROXY, "content-type": "application/json" }, body());
  assert.equal(proxied.status, 201);
  const script = await raw("POST", "/api/runs", { host: own(), "content-type": "application/json; charset=utf-8" }, body());
  assert.equal(script.status, 201, "scripts and the CLI send no Origin");
  assert.equal(await runCount(), before + 3);
});

test("a form or text/plain body (no preflight needed cross-site) is refused with 415, also on body-less actions", async () => {
  const before = await runCount();
  const plain = await raw("POST", "/api/runs", { host: own(), "content-type": "text/plain" }, body());
  assert.equal(plain.status, 415);
  assert.match(plain.body?.error ?? "", /application\/json/);
  const id = ((await (await fetch(`${server.url}/api/runs?limit=1`)).json()) as RunListDto).runs[0]?.id ?? "none";
  const form = await raw("POST", `/api/runs/${id}/cancel`, { host: own(), "content-type": "application/x-www-form-urlencoded" }, "x=1");
  assert.equal(form.status, 415);
  const bare = await raw("POST", `/api/runs/${id}/cancel`, { host: own() });
  assert.equal(bare.status, 415, "a body-less POST without a content type is a simple cross-site request too");
  const patch = await raw("PATCH", `/api/runs/${id}`, { host: own(), "content-type": "text/plain" }, JSON.stringify({ name: "x" }));
  assert.equal(patch.status, 415);
  assert.equal(await runCount(), before);
});

test("DNS rebinding: a foreign Host header gets 421 on reads and writes; loopback names and the proxy's host are served", async () => {
  const port = new URL(server.url).port;
  for (const host of ["evil.example", `evil.example:${port}`, `192.168.1.20:${port}`]) {
    const r = await raw("GET", "/api/runs", { host });
    assert.equal(r.status, 421, host);
    assert.ok(!JSON.stringify(r.body).includes("runs"), "no data in the refusal");
  }
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, "studio.example.org"]) assert.equal((await raw("GET", "/api/runs?limit=1", { host })).status, 200, host);
});

test("the /ui socket refuses a foreign Origin and accepts the dashboard's own", async () => {
  const connect = (origin: string) =>
    new Promise<"connected" | "refused">((resolve) => {
      const s = io(`${server.url}${UI_NAMESPACE}`, { transports: ["polling"], extraHeaders: { origin }, reconnection: false, timeout: 5000 });
      s.on("connect", () => (s.close(), resolve("connected")));
      s.on("connect_error", () => (s.close(), resolve("refused")));
    });
  assert.equal(await connect("http://evil.example"), "refused");
  assert.equal(await connect(`http://${own()}`), "connected");
});
