/**
 * Scale-out in a real browser: two dashboard processes (Next production build + socket.io) on one
 * PostgreSQL database, a real worker connected to A, and Chromium on B's run page. The page shows
 * the run's live progress while A's worker trains it (updates counted up without a reload) and
 * its end, carried from A to B by the PostgreSQL adapter. The worker starts only once B's page shows
 * the run queued, so the page watches the whole run. Skipped with the reason when PostgreSQL
 * or Chromium is missing.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
import type { RunDetailDto, WorkerDto } from "../lib/contracts/index.ts";
import { GiveUp, startPostgres, uniqueDbName, waitFor, type Pg } from "./platform-helpers.ts";
import { Proc, api, getRun, startNode, startWorker, waitNodesMeet, type Node } from "./scale-out-helpers.ts";
import { browserUnavailable, ensureNextBuild, launchBrowser } from "./ui-browser-helpers.ts";

const pg = await startPostgres();
const skip = "skip" in pg ? pg.skip : (browserUnavailable() ?? undefined);
const STEPS = 80;

describe("browser on node B, run on node A's worker", { skip, timeout: 15 * 60_000 }, () => {
  let a: Node;
  let b: Node;
  let worker: Proc;
  let browser: Browser;
  const tails = () => [a?.proc, b?.proc, worker].filter(Boolean).map((p) => p.tail()).join("\n");

  before(async () => {
    ensureNextBuild((m) => console.log(`# ${m}`));
    const url = await (pg as Pg).createDatabase(uniqueDbName("browser_scale"));
    a = await startNode("a", url, { next: true });
    b = await startNode("b", url, { next: true });
    await waitNodesMeet([a, b]);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    for (const p of [worker, b?.proc, a?.proc]) await p?.stop();
    (pg as Pg).stop();
  });

  test("B's run page shows the live progress of a run trained by a worker on A", async () => {
    const r = await api<RunDetailDto>(a, "POST", "/api/runs", { preset: "tiny", name: "scale-out-browser", overrides: [`steps_count=${STEPS}`, "eval_interval=20", "eval_episodes=4", "eval_episodes_logged=1"] });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const id = r.body.id;
    const page = await browser.newPage();
    try {
      await page.goto(`${b.url}/runs/${id}`);
      // no worker yet: the run waits queued until B's page is up, so the page sees it train from 0
      // however slowly the page loads (it once loaded after a fast run had reached 67 of 80)
      await page.locator(`[data-testid="run-page"][data-run-id="${id}"][data-status="queued"]`).waitFor({ timeout: 60_000 });
      worker = startWorker(a, "on-a");
      await waitFor("the worker online", async () => {
        if (!worker.alive()) throw new GiveUp(`worker exited\n${worker.tail()}`);
        return (await api<WorkerDto[]>(a, "GET", "/api/workers")).body.some((w) => w.name === "on-a");
      }, 60_000);
      const shown = () =>
        page.evaluate(() => {
          const m = /(\d+) \/ (\d+) updates/.exec(document.body.innerText);
          return { done: m ? Number(m[1]) : -1, status: document.querySelector("[data-testid=run-page]")?.getAttribute("data-status") ?? "" };
        });
      // the counts the page showed, in order: they must climb while it stays open
      const seen: number[] = [];
      const end = await waitFor("the page to show the run completed", async () => {
        const s = await shown();
        if (s.done >= 0 && s.done !== seen.at(-1)) seen.push(s.done);
        return s.status === "completed" ? s : null;
      }, 180_000, 100).catch((e: Error) => assert.fail(`${e.message}; counts seen ${seen.join(",")}\n${tails()}`));
      assert.equal(end.done, STEPS, "the page shows the final count");
      const between = seen.filter((n) => n > 0 && n < STEPS);
      assert.ok(between.length >= 2, `live progress between start and end, without a reload: ${seen.join(" → ")}`);
      const run = await getRun(b, id);
      assert.equal(run.workerName, "on-a", "trained on A's worker");
    } finally {
      await page.close();
    }
  });
});
