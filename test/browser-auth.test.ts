/**
 * Signing in and out in a real browser (playwright-core + Debian chromium) against the real
 * server started with QRAG_AUTH=on: / sends a signed-out browser to /login, a wrong password
 * shows the error as text, signing in lands on the runs list with the user's name in the top bar
 * (and the live socket connected), and signing out returns to /login and locks the pages again.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { ROOT, browserUnavailable, ensureNextBuild, launchBrowser, startTestServer, type TestServer } from "./ui-browser-helpers.ts";

const skip = browserUnavailable();
if (skip) console.log(`browser tests skipped: ${skip}`);
const PASSWORD = "a long enough password";

describe("sign-in in a real browser", { skip: skip ?? false, timeout: 10 * 60_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  before(async () => {
    ensureNextBuild((m) => console.log(`# ${m}`));
    server = await startTestServer({ env: { QRAG_AUTH: "on" } });
    // the first admin, as an operator adds one (npm run user -- add), on the server's database
    const r = spawnSync(process.execPath, ["--import", "tsx", path.join(ROOT, "server/cli/user.ts"), "add", "ada", "--role", "admin", "--password-stdin"], {
      cwd: ROOT, input: `${PASSWORD}\n`, encoding: "utf8", env: { ...process.env, QRAG_DATA_DIR: server.dataDir, DATABASE_URL: `file:${path.join(server.dataDir, "qrag.db")}` },
    });
    assert.equal(r.status, 0, r.stderr);
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("/ redirects to /login; signing in shows the runs list and the user's name; signing out returns to /login", async () => {
    // the server itself redirects pages (the client's 401 fallback is a second line only)
    const first = await fetch(`${server.url}/runs/new`, { redirect: "manual" });
    assert.equal(first.status, 302);
    assert.equal(first.headers.get("location"), "/login?next=%2Fruns%2Fnew");
    await page.goto(`${server.url}/`);
    await page.waitForURL(/\/login\?next=%2F$/);

    await page.fill("#login-name", "ada");
    await page.fill("#login-password", "not the password");
    await page.click('button[type="submit"]');
    assert.equal(await page.locator('[data-testid="login-error"]').textContent(), "wrong name or password");

    await page.fill("#login-password", PASSWORD);
    await page.click('button[type="submit"]');
    await page.waitForURL(`${server.url}/`);
    await page.locator('[data-testid="runs-search"]').waitFor();
    assert.equal(await page.locator('[data-testid="user-name"]').textContent(), "ada");
    await page.locator('.topbar .badge.ok', { hasText: "live" }).waitFor({ timeout: 20_000 });

    await page.click('[data-testid="sign-out"]');
    await page.waitForURL(/\/login$/);
    await page.goto(`${server.url}/runs/new`);
    await page.waitForURL(/\/login\?next=%2Fruns%2Fnew$/);
    assert.deepEqual(errors, []);
  });
});
