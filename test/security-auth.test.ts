/**
 * Issue 10, part 1 re-run against real servers (server/main.ts, no Next, one real SQLite file
 * shared by three servers in this process): one on loopback with sign-in forced (auth: true), one
 * listening on 0.0.0.0 without QRAG_AUTH (sign-in required because it is beyond loopback), and
 * one on loopback by default (nothing in the way). Every REST route without credentials answers
 * 401; the /ui socket needs a session; roles are enforced; personal and worker tokens stop
 * working when revoked; audit rows name the actor.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { io, type Socket } from "socket.io-client";
import type { DashboardDto, NewTokenDto, PrincipalDto, RunDetailDto, UserDto } from "../lib/contracts/index.ts";
import { UI_NAMESPACE, WORKER_NAMESPACE } from "../lib/contracts/index.ts";
import { resolveConfig } from "../server/qrag/index.ts";
import { startServer, type RunningServer } from "../server/main.ts";
import { API_ROUTES } from "../server/api/router.ts";
import { getDb } from "../server/db/client.ts";
import { createUser } from "../server/auth/accounts.ts";
import { LoginThrottle } from "../server/auth/login-throttle.ts";
import { clientAddressOf } from "../server/http/client-address.ts";
import { sqliteUrl, tmpDir, waitFor } from "./platform-helpers.ts";

const PASSWORD = "correct horse battery";
let forced: RunningServer; // loopback, auth: true
let wide: RunningServer; // 0.0.0.0, no QRAG_AUTH
let open: RunningServer; // loopback default
let wideBase: string;

const databaseUrl = sqliteUrl(); // one database per process: every server here shares it

before(async () => {
  const common = { port: 0, spawnWorker: false, next: false, databaseUrl, log: () => {} } as const;
  forced = await startServer({ ...common, dataDir: tmpDir("qrag-auth-a-"), auth: true });
  wide = await startServer({ ...common, dataDir: tmpDir("qrag-auth-b-"), host: "0.0.0.0" });
  open = await startServer({ ...common, dataDir: tmpDir("qrag-auth-c-") });
  wideBase = `http://127.0.0.1:${wide.port}`;
  const db = await getDb(databaseUrl);
  await createUser(db, { name: "vera", password: PASSWORD, role: "viewer" });
  await createUser(db, { name: "mia", password: PASSWORD, role: "member" });
  await createUser(db, { name: "ada", password: PASSWORD, role: "admin" });
  await createUser(db, { name: "lou", password: PASSWORD, role: "member" }); // locked out by the throttle test
  await createUser(db, { name: "noor", password: PASSWORD, role: "member" }); // owns dashboards
  await createUser(db, { name: "otto", password: PASSWORD, role: "member" }); // another member
});
let proxied: RunningServer | undefined; // started by the trusted-proxy test
after(async () => {
  // they share one database handle: close it last
  await proxied?.close();
  await wide?.close();
  await open?.close();
  await forced?.close();
});

interface Answer<T = unknown> {
  status: number;
  body: T;
  setCookie: string[];
}
/** A call with the dashboard's own Origin and a JSON content type (the same-origin guard's rules). */
async function call<T = unknown>(base: string, method: string, path: string, o: { cookie?: string; bearer?: string; body?: unknown } = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { origin: base, "content-type": "application/json" };
  if (o.cookie) headers.cookie = o.cookie;
  if (o.bearer) headers.authorization = `Bearer ${o.bearer}`;
  const res = await fetch(`${base}${path}`, { method, headers, body: method === "GET" ? undefined : JSON.stringify(o.body ?? {}) });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, setCookie: res.headers.getSetCookie() };
}

/** Signs in; returns the Cookie header value for later calls. */
async function login(base: string, name: string): Promise<string> {
  const r = await call<PrincipalDto>(base, "POST", "/api/auth/login", { body: { name, password: PASSWORD } });
  assert.equal(r.status, 200, `login ${name}: ${JSON.stringify(r.body)}`);
  return r.setCookie[0].split(";")[0];
}

const tinyRun = (name: string) => ({ config: resolveConfig({ preset: "tiny" }), name });
const PUBLIC = new Set(["GET /api/health", "POST /api/auth/login", "POST /api/auth/logout"]);
const concrete = (pattern: string) => pattern.replace(":episodeId", "1").replace(":file", "metrics.csv").replace(/:\w+/g, "x1");

for (const [label, base] of [
  ["loopback with QRAG_AUTH=on", () => forced.url],
  ["listening on 0.0.0.0", () => wideBase],
] as const) {
  describe(label, () => {
    test("every REST route and method answers 401 without credentials; public ones reveal nothing", async () => {
      let checked = 0;
      for (const r of API_ROUTES) {
        for (const m of r.methods) {
          if (PUBLIC.has(`${m} ${r.pattern}`)) continue;
          const res = await call<{ error: string }>(base(), m, concrete(r.pattern));
          assert.equal(res.status, 401, `${m} ${r.pattern} → ${res.status}`);
          assert.match(res.body.error, /sign in/);
          checked++;
        }
      }
      assert.ok(checked > 30, `checked ${checked} route methods`);
      assert.equal((await call(base(), "GET", "/api/no-such-route")).status, 401, "unknown routes do not reveal the route map");
      assert.deepEqual((await call(base(), "GET", "/api/health")).body, { ok: true }, "health says up, nothing more");
      assert.equal(server(base()).authRequired, true);
    });

    test("the /ui socket is refused without a session and accepted with one", async () => {
      await assert.rejects(connectUi(base()), /unauthorized/);
      await assert.rejects(connectUi(base(), "qrag_session=qs_forged"), /unauthorized/);
      const s = await connectUi(base(), await login(base(), "vera"));
      assert.ok(s.connected);
      s.disconnect();
    });
  });
}

function server(base: string): RunningServer {
  return base === wideBase ? wide : forced;
}

function connectUi(base: string, cookie?: string): Promise<Socket> {
  const s = io(`${base}${UI_NAMESPACE}`, { transports: ["websocket"], reconnection: false, extraHeaders: cookie ? { cookie } : {} });
  return new Promise((resolve, reject) => {
    s.once("connect", () => resolve(s));
    s.once("connect_error", (e) => {
      s.close();
      reject(e);
    });
  });
}

test("a wrong password and an unknown user get the same answer; the session cookie is HttpOnly and SameSite=Lax", async () => {
  const wrong = await call(forced.url, "POST", "/api/auth/login", { body: { name: "mia", password: "not the password" } });
  const unknown = await call(forced.url, "POST", "/api/auth/login", { body: { name: "nobody", password: "not the password" } });
  assert.equal(wrong.status, 401);
  assert.deepEqual([unknown.status, unknown.body], [wrong.status, wrong.body]);
  assert.deepEqual(wrong.setCookie, []);
  const missing = await call<{ fieldErrors: Record<string, string> }>(forced.url, "POST", "/api/auth/login", { body: { name: "mia" } });
  assert.equal(missing.status, 400);
  assert.ok("password" in missing.body.fieldErrors, "the 400 names the field");

  const ok = await call<PrincipalDto>(forced.url, "POST", "/api/auth/login", { body: { name: "mia", password: PASSWORD } });
  assert.deepEqual(ok.body, { name: "mia", role: "member", authRequired: true });
  const flags = ok.setCookie[0].split(";").map((f) => f.trim().toLowerCase());
  assert.ok(flags.includes("httponly"), ok.setCookie[0]);
  assert.ok(flags.includes("samesite=lax"), ok.setCookie[0]);
  assert.ok(flags.includes("path=/"), ok.setCookie[0]);
  const cookie = ok.setCookie[0].split(";")[0];
  assert.equal((await call<PrincipalDto>(forced.url, "GET", "/api/auth/me", { cookie })).body.name, "mia");

  // signing out ends the session on the server, not only in the browser
  assert.equal((await call(forced.url, "POST", "/api/auth/logout", { cookie })).status, 200);
  assert.equal((await call(forced.url, "GET", "/api/auth/me", { cookie })).status, 401);
});

test("roles: a viewer reads but cannot launch; a member launches and cancels but cannot manage users or worker tokens; an admin can", async () => {
  const viewer = await login(forced.url, "vera");
  const member = await login(forced.url, "mia");
  const admin = await login(forced.url, "ada");

  assert.equal((await call(forced.url, "GET", "/api/runs", { cookie: viewer })).status, 200);
  const denied = await call<{ error: string }>(forced.url, "POST", "/api/runs", { cookie: viewer, body: tinyRun("viewer") });
  assert.equal(denied.status, 403);
  assert.match(denied.body.error, /member role/);

  const created = await call<RunDetailDto>(forced.url, "POST", "/api/runs", { cookie: member, body: tinyRun("by mia") });
  assert.equal(created.status, 201);
  assert.equal(created.body.createdBy, "mia", "the run names who launched it");
  assert.equal((await call(forced.url, "POST", `/api/runs/${created.body.id}/cancel`, { cookie: member })).status, 200);

  for (const [m, p] of [["GET", "/api/users"], ["POST", "/api/users"], ["GET", "/api/worker-tokens"], ["POST", "/api/worker-tokens"], ["GET", "/api/audit"]] as const) {
    const r = await call<{ error: string }>(forced.url, m, p, { cookie: member, body: { name: "x", password: PASSWORD } });
    assert.equal(r.status, 403, `member ${m} ${p}`);
    assert.match(r.body.error, /admin role/);
  }
  const user = await call<UserDto>(forced.url, "POST", "/api/users", { cookie: admin, body: { name: "nico", password: PASSWORD, role: "viewer" } });
  assert.equal(user.status, 201);
  const short = await call<{ fieldErrors: Record<string, string> }>(forced.url, "POST", "/api/users", { cookie: admin, body: { name: "sam", password: "short" } });
  assert.equal(short.status, 400);
  assert.ok("password" in short.body.fieldErrors);
  const promoted = await call<UserDto>(forced.url, "PATCH", `/api/users/${user.body.id}`, { cookie: admin, body: { role: "member" } });
  assert.equal(promoted.body.role, "member");
  const nico = await login(forced.url, "nico");
  await call(forced.url, "PATCH", `/api/users/${user.body.id}`, { cookie: admin, body: { disabled: true } });
  assert.equal((await call(forced.url, "GET", "/api/runs", { cookie: nico })).status, 401, "disabling a user ends their sessions");
  assert.equal((await call(forced.url, "GET", "/api/worker-tokens", { cookie: admin })).status, 200);
});

test("a personal API token works as a Bearer token until it is revoked", async () => {
  const member = await login(forced.url, "mia");
  const t = await call<NewTokenDto>(forced.url, "POST", "/api/tokens", { cookie: member, body: { name: "ci" } });
  assert.equal(t.status, 201);
  assert.match(t.body.secret, /^qt_/);
  assert.equal((await call(forced.url, "GET", "/api/runs", { bearer: t.body.secret })).status, 200);
  const made = await call<RunDetailDto>(forced.url, "POST", "/api/runs", { bearer: t.body.secret, body: tinyRun("scripted") });
  assert.equal(made.body.createdBy, "mia");
  const listed = await call<NewTokenDto[]>(forced.url, "GET", "/api/tokens", { bearer: t.body.secret });
  assert.ok(listed.body.every((x) => !("secret" in x)), "the secret is shown once, on creation");

  assert.equal((await call(forced.url, "DELETE", `/api/tokens?id=${t.body.id}`, { cookie: member })).status, 200);
  assert.equal((await call(forced.url, "GET", "/api/runs", { bearer: t.body.secret })).status, 401);
});

test("a revoked worker token disconnects its live worker at once and is refused on reconnect; the server's own token still works", async () => {
  const admin = await login(forced.url, "ada");
  const t = await call<NewTokenDto>(forced.url, "POST", "/api/worker-tokens", { cookie: admin, body: { name: "gpu-box" } });
  assert.equal(t.status, 201);
  const worker = (token: string, id: string) =>
    io(`${forced.url}${WORKER_NAMESPACE}`, { transports: ["websocket"], reconnection: false, auth: { token, workerId: id, name: id } });
  const connected = (s: Socket) =>
    new Promise<Socket>((resolve, reject) => {
      s.once("connect", () => resolve(s));
      s.once("connect_error", (e) => {
        s.close();
        reject(e);
      });
    });
  const remote = await connected(worker(t.body.secret, "remote-1"));
  const local = await connected(worker(forced.workerToken, "local-1"));
  await assert.rejects(connected(worker("qw_wrong", "forged")), /unauthorized/);

  let gone = false;
  remote.on("disconnect", () => (gone = true));
  const revoked = await call(forced.url, "POST", `/api/worker-tokens/${t.body.id}/revoke`, { cookie: admin });
  assert.equal(revoked.status, 200);
  await waitFor("the revoked worker's socket closes", () => gone, 5000, 20);
  await assert.rejects(connected(worker(t.body.secret, "remote-1")), /unauthorized/);
  assert.ok(local.connected, "the local worker (shared token) stays");
  local.disconnect();
});

test("audit rows name who created and cancelled a run", async () => {
  const member = await login(forced.url, "mia");
  const admin = await login(forced.url, "ada");
  assert.equal((await call(forced.url, "POST", "/api/auth/login", { body: { name: "mallory", password: "guess guess" } })).status, 401);
  const run = await call<RunDetailDto>(forced.url, "POST", "/api/runs", { cookie: member, body: tinyRun("audited") });
  await call(forced.url, "POST", `/api/runs/${run.body.id}/cancel`, { cookie: member });
  const trail = await call<{ actor: string; action: string; targetId: string | null }[]>(forced.url, "GET", "/api/audit", { cookie: admin });
  const about = trail.body.filter((e) => e.targetId === run.body.id).map((e) => `${e.actor} ${e.action}`);
  assert.deepEqual(about.sort(), ["mia run.cancel", "mia run.create"]);
  assert.ok(trail.body.some((e) => e.action === "login.failed" && e.actor === "mallory"), "failed logins are recorded by name");
});

test("on loopback by default nobody signs in: the local user is an implicit admin", async () => {
  assert.equal(open.authRequired, false);
  const me = await call<PrincipalDto>(open.url, "GET", "/api/auth/me");
  assert.deepEqual(me.body, { name: "local", role: "admin", authRequired: false });
  const made = await call<RunDetailDto>(open.url, "POST", "/api/runs", { body: tinyRun("local") });
  assert.equal(made.status, 201);
  assert.equal(made.body.createdBy, "local");
  const s = await connectUi(open.url);
  assert.ok(s.connected);
  s.disconnect();
});

test("signing out, revoking a token and changing a user end the live /ui sockets they opened", async () => {
  const disconnected = (s: Socket) =>
    new Promise<string>((r) => {
      const t = setTimeout(() => r("still connected after 10 s"), 10_000);
      s.once("disconnect", (why) => (clearTimeout(t), r(why)));
    });
  const admin = await login(forced.url, "ada");
  await call(forced.url, "POST", "/api/users", { cookie: admin, body: { name: "sam", password: PASSWORD, role: "viewer" } });
  const users = await call<{ id: number; name: string }[]>(forced.url, "GET", "/api/users", { cookie: admin });
  const sam = users.body.find((u) => u.name === "sam")!;

  // sign-out ends this session's socket, not the same user's other session
  const c1 = await login(forced.url, "sam");
  const c2 = await login(forced.url, "sam");
  const s1 = await connectUi(forced.url, c1);
  const s2 = await connectUi(forced.url, c2);
  const gone1 = disconnected(s1);
  assert.equal((await call(forced.url, "POST", "/api/auth/logout", { cookie: c1 })).status, 200);
  assert.equal(await gone1, "io server disconnect");
  assert.ok(s2.connected, "the other session's socket stays");

  // a revoked personal token ends the socket it opened
  const t = await call<NewTokenDto>(forced.url, "POST", "/api/tokens", { cookie: c2, body: { name: "live" } });
  const st = io(`${forced.url}${UI_NAMESPACE}`, { transports: ["websocket"], reconnection: false, extraHeaders: { authorization: `Bearer ${t.body.secret}` } });
  await new Promise<void>((resolve, reject) => (st.once("connect", () => resolve()), st.once("connect_error", reject)));
  const goneT = disconnected(st);
  assert.equal((await call(forced.url, "DELETE", `/api/tokens?id=${t.body.id}`, { cookie: c2 })).status, 200);
  assert.equal(await goneT, "io server disconnect");
  assert.ok(s2.connected);

  // disabling the user ends the rest, and they cannot come back
  const gone2 = disconnected(s2);
  assert.equal((await call(forced.url, "PATCH", `/api/users/${sam.id}`, { cookie: admin, body: { disabled: true } })).status, 200);
  assert.equal(await gone2, "io server disconnect");
  await assert.rejects(connectUi(forced.url, c2), /unauthorized/);
});

test("sign-in throttle over HTTP: after 10 failures the name is refused (429) even with the right password; other names still sign in", async () => {
  for (let i = 0; i < 10; i++) assert.equal((await call(forced.url, "POST", "/api/auth/login", { body: { name: "lou", password: `guess ${i}` } })).status, 401);
  const locked = await call<{ error: string }>(forced.url, "POST", "/api/auth/login", { body: { name: "LOU", password: PASSWORD } });
  assert.equal(locked.status, 429, "the name is locked whatever its case and address");
  assert.match(locked.body.error, /too many failed sign-ins/);
  await login(forced.url, "mia");
});

test("sign-in throttle: per name whatever the address, per address over all names, a global bound, a spray cannot unlock a name, the window ends it", () => {
  let now = 0;
  const t = new LoginThrottle({ perName: 3, perAddress: 20, global: 50, windowMs: 1000, now: () => now });
  const A = "203.0.113.7";
  for (let i = 0; i < 3; i++) t.failed("Victim", A);
  assert.equal(t.allowed("victim", A), false);
  assert.equal(t.allowed("victim", "198.51.100.1"), false, "another address does not unlock the name");
  assert.equal(t.allowed("someone", A), true);
  // one address spraying names: that address is refused before the global bound, others are not
  for (let i = 0; i < 17; i++) t.failed(`guess-${i}`, A);
  assert.equal(t.allowed("someone", A), false, "the address reached its bound");
  assert.equal(t.allowed("someone", "198.51.100.1"), true, "other clients still sign in");
  // spraying names from many addresses: the global bound refuses everyone, and the victim stays locked
  for (let i = 0; i < 10_000; i++) t.failed(`spray-${i}`, `10.0.${i >> 8}.${i & 255}`);
  assert.equal(t.allowed("someone", "198.51.100.1"), false, "global bound reached");
  assert.equal(t.allowed("victim", "198.51.100.1"), false);
  now = 1001; // the window is over
  assert.equal(t.allowed("victim", A), true);
  assert.equal(t.allowed("someone", A), true);
  t.failed("victim", A);
  t.succeeded("VICTIM");
  t.failed("victim", A);
  t.failed("victim", A);
  assert.equal(t.allowed("victim", A), true, "a success clears the name's count");
});

test("behind a trusted proxy the client's address comes from X-Forwarded-For; from anyone else the header is ignored", async () => {
  assert.throws(() => clientAddressOf(["loopback", "not-a-net"]), /^Error: QRAG_TRUSTED_PROXIES: entry 2 is not an address/, "a bad entry stops the start, naming the setting");
  const viaProxy = await startServer({ port: 0, spawnWorker: false, next: false, log: () => {}, auth: true, databaseUrl, dataDir: tmpDir("qrag-auth-p-"), trustedProxies: ["loopback"] });
  proxied = viaProxy;
  const direct = forced; // no trusted proxy
  await createUser(await getDb(databaseUrl), { name: "pat", password: PASSWORD, role: "admin" });
  const from = (base: string, xff: string, name: string, password = "wrong") =>
    fetch(`${base}/api/auth/login`, { method: "POST", headers: { origin: base, "content-type": "application/json", "x-forwarded-for": xff }, body: JSON.stringify({ name, password }) });
  // one client behind the proxy guesses 50 names: that client is refused, a neighbour is not
  for (let i = 0; i < 50; i++) assert.equal((await from(viaProxy.url, "203.0.113.7", `nobody-${i}`)).status, 401);
  assert.equal((await from(viaProxy.url, "203.0.113.7", "pat", PASSWORD)).status, 429, "the guessing client is refused");
  assert.equal((await from(viaProxy.url, "198.51.100.1, 203.0.113.7", "pat", PASSWORD)).status, 429, "a hop the client added is not believed");
  const ok = await from(viaProxy.url, "203.0.113.8", "pat", PASSWORD);
  assert.equal(ok.status, 200, "another client behind the same proxy signs in");
  const cookie = ok.headers.getSetCookie()[0].split(";")[0];
  const audit = await call<{ actor: string; action: string; detail: { address?: string } }[]>(viaProxy.url, "GET", "/api/audit", { cookie });
  assert.equal(audit.body.find((a) => a.action === "login" && a.actor === "pat")?.detail.address, "203.0.113.8", "the audit names the client, not the proxy");
  // no trusted proxy: the header is the client's word only, the peer is the address
  assert.equal((await from(direct.url, "203.0.113.99", "nobody-direct")).status, 401);
  const seen = await call<{ actor: string; action: string; detail: { address?: string } }[]>(direct.url, "GET", "/api/audit", { cookie: await login(direct.url, "pat") });
  assert.match(seen.body.find((a) => a.action === "login.failed" && a.actor === "nobody-direct")?.detail.address ?? "", /^(::ffff:)?127\.0\.0\.1$|^::1$/);
});

test("dashboards have owners: the owner or an admin edits and deletes; another member reads, is refused (403 naming the owner) and saves a copy of their own", async () => {
  const [noor, otto, ada] = [await login(forced.url, "noor"), await login(forced.url, "otto"), await login(forced.url, "ada")];
  const spec = { runs: ["r1", "r2"], panels: ["qf_loss"] };
  const made = await call<DashboardDto>(forced.url, "POST", "/api/dashboards", { cookie: noor, body: { name: "noor's board", spec } });
  assert.equal(made.status, 201);
  assert.deepEqual([made.body.owner, made.body.canEdit], ["noor", true]);
  const id = made.body.id;

  const seen = await call<DashboardDto>(forced.url, "GET", `/api/dashboards/${id}`, { cookie: otto });
  assert.deepEqual([seen.status, seen.body.owner, seen.body.canEdit], [200, "noor", false], "others read it, marked read-only");
  assert.equal((await call<DashboardDto[]>(forced.url, "GET", "/api/dashboards", { cookie: otto })).body.find((d) => d.id === id)?.canEdit, false);
  for (const [method, body] of [["PATCH", { name: "taken over" }], ["DELETE", undefined]] as const) {
    const refused = await call<{ error: string }>(forced.url, method, `/api/dashboards/${id}`, { cookie: otto, body });
    assert.equal(refused.status, 403, method);
    assert.match(refused.body.error, /owner \(noor\) or an admin.*save a copy/);
  }
  assert.equal((await call<DashboardDto>(forced.url, "GET", `/api/dashboards/${id}`, { cookie: noor })).body.name, "noor's board", "nothing changed");

  const copy = await call<DashboardDto>(forced.url, "POST", "/api/dashboards", { cookie: otto, body: { name: "otto's copy", spec: seen.body.spec } });
  assert.deepEqual([copy.status, copy.body.owner, copy.body.canEdit], [201, "otto", true]);
  assert.equal((await call(forced.url, "PATCH", `/api/dashboards/${copy.body.id}`, { cookie: otto, body: { name: "mine now" } })).status, 200);

  assert.equal((await call(forced.url, "PATCH", `/api/dashboards/${id}`, { cookie: noor, body: { name: "renamed by noor" } })).status, 200, "the owner edits");
  const byAdmin = await call<DashboardDto>(forced.url, "PATCH", `/api/dashboards/${id}`, { cookie: ada, body: { name: "renamed by ada" } });
  assert.deepEqual([byAdmin.status, byAdmin.body.canEdit, byAdmin.body.owner], [200, true, "noor"], "an admin edits; the owner stays");
  assert.equal((await call(forced.url, "DELETE", `/api/dashboards/${id}`, { cookie: noor })).status, 200, "the owner deletes");
  assert.equal((await call(forced.url, "GET", `/api/dashboards/${id}`, { cookie: otto })).status, 404);
});
