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
import { ROOT, browserUnavailable, ensureNextBuild, launchBrowser, startTestServer, type TestServer, watchedPage } from "./ui-browser-helpers.ts";

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
    for (const [name, role] of [["ada", "admin"], ["mo", "member"]]) {
      const r = spawnSync(process.execPath, ["--import", "tsx", path.join(ROOT, "server/cli/user.ts"), "add", name, "--role", role, "--password-stdin"], {
        cwd: ROOT, input: `${PASSWORD}\n`, encoding: "utf8", env: { ...process.env, QRAG_DATA_DIR: server.dataDir, DATABASE_URL: `file:${path.join(server.dataDir, "qrag.db")}` },
      });
      assert.equal(r.status, 0, r.stderr);
    }
    browser = await launchBrowser();
    page = await watchedPage(browser, errors, { width: 1280, height: 900 });
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

  test("another member sees a dashboard read-only (no save, no delete) and saves a copy they own", async () => {
    const post = (p: string, body: unknown, cookie?: string) =>
      fetch(`${server.url}${p}`, { method: "POST", headers: { origin: server.url, "content-type": "application/json", ...(cookie ? { cookie } : {}) }, body: JSON.stringify(body) });
    const login = await post("/api/auth/login", { name: "ada", password: PASSWORD });
    const ada = login.headers.getSetCookie()[0].split(";")[0];
    const made = (await (await post("/api/dashboards", { name: "ada's board", spec: { runs: ["r1"], panels: ["qf_loss"] } }, ada)).json()) as { id: string };

    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const mo = await ctx.newPage();
      await mo.goto(`${server.url}/login`);
      await mo.fill("#login-name", "mo");
      await mo.fill("#login-password", PASSWORD);
      await mo.click('button[type="submit"]');
      await mo.waitForURL(`${server.url}/`);
      await mo.goto(`${server.url}/dashboards/${made.id}`);
      const owner = mo.locator('[data-testid="dashboard-owner"]');
      await owner.waitFor();
      assert.equal(await owner.textContent(), "saved by ada · read-only for you");
      assert.equal(await mo.locator('[data-testid="save-dashboard-changes"]').count(), 0, "no save for a dashboard of someone else");
      await mo.click('[data-testid="save-dashboard-copy"]');
      await mo.waitForURL((u) => /\/dashboards\/[\w-]+$/.test(u.pathname) && !u.pathname.endsWith(made.id));
      await mo.locator('[data-testid="dashboard-owner"]', { hasText: "saved by mo" }).waitFor();
      assert.equal(await mo.locator('[data-testid="dashboard-title"]').inputValue(), "ada's board (copy)");
      assert.equal(await mo.locator('[data-testid="save-dashboard-changes"]').count(), 1, "their own copy saves");
      const copyId = decodeURIComponent(new URL(mo.url()).pathname.split("/").pop()!);

      await mo.goto(`${server.url}/dashboards`);
      const row = (id: string) => mo.locator(`[data-testid="dashboards-table"] tr[data-dashboard-id="${id}"]`);
      await row(copyId).waitFor();
      assert.deepEqual(
        [await row(made.id).locator("td").nth(3).textContent(), await row(made.id).getByRole("button", { name: "delete" }).count()],
        ["ada", 0],
        "the owner column, and no delete on ada's",
      );
      assert.deepEqual([await row(copyId).locator("td").nth(3).textContent(), await row(copyId).getByRole("button", { name: "delete" }).count()], ["mo", 1]);
    } finally {
      await ctx.close();
    }
  });
});
