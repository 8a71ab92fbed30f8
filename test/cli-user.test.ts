/**
 * `npm run user` (server/cli/user.ts) as an operator runs it, in a child process on a real SQLite
 * file: the first admin is added from stdin, and the personal token it mints signs in to a server
 * that requires accounts. Its refusals (short passwords, unknown roles) are tested in process in
 * test/cli-args.test.ts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { startServer } from "../server/main.ts";
import { ROOT, tmpDir } from "./platform-helpers.ts";

test("npm run user: add (password from stdin), list, mint a token the server accepts", async () => {
  const dataDir = tmpDir("qrag-cli-user-");
  const databaseUrl = `file:${path.join(dataDir, "qrag.db")}`;
  const user = (args: string[], input = "") =>
    spawnSync(process.execPath, ["--import", "tsx", path.join(ROOT, "server/cli/user.ts"), ...args], {
      cwd: ROOT, input, encoding: "utf8", env: { ...process.env, QRAG_DATA_DIR: dataDir, DATABASE_URL: databaseUrl },
    });

  const added = user(["add", "root", "--role", "admin", "--password-stdin"], "long enough password\n");
  assert.equal(added.status, 0, added.stderr);
  assert.match(user(["list"]).stdout, /^root\tadmin\t/m);
  const minted = user(["token", "root", "--label", "ci"]);
  assert.equal(minted.status, 0, minted.stderr);
  const secret = minted.stdout.trim();
  assert.match(secret, /^qt_[\w-]{43}$/);

  const server = await startServer({ port: 0, dataDir, databaseUrl, spawnWorker: false, next: false, auth: true, log: () => {} });
  try {
    assert.equal((await fetch(`${server.url}/api/runs`)).status, 401);
    const me = await fetch(`${server.url}/api/auth/me`, { headers: { authorization: `Bearer ${secret}` } });
    assert.deepEqual(await me.json(), { name: "root", role: "admin", authRequired: true });
  } finally {
    await server.close();
  }
});
