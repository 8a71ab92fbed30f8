/**
 * The compare view and saved dashboards in a real browser (playwright-core + Debian chromium)
 * against the real server, with runs and metric points seeded straight into its SQLite file:
 * selecting runs in the table (shift ranges), bands per group read back against the seeded
 * points, legend hide/solo, the config diff, and a dashboard saved and reopened by URL.
 * Screenshot: test-results/screenshots/compare.png.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { DashboardDto } from "../lib/contracts/index.ts";
import { SCREENSHOTS, browserUnavailable, ensureNextBuild, launchBrowser, startTestServer, type TestServer, watchedPage } from "./ui-browser-helpers.ts";
import { waitFor } from "./platform-helpers.ts";
import { seedRuns, type SeedRun } from "./compare-seed.ts";

const skip = browserUnavailable();
if (skip) console.log(`browser tests skipped: ${skip}`);

const steps = (last: number, every: number) => Array.from({ length: last / every + 1 }, (_, i) => i * every);
// two qa1 seeds of unequal length (b stops at 60) and one qa2 run
const RUNS: SeedRun[] = [
  { id: "cmpa", name: "qa1 seed 1", set: { "envs.task": "qa1", seed: 1 }, points: { qf_loss: steps(100, 10).map((s) => ({ step: s, value: 1 + s / 100 })), eval_coverage: steps(100, 20).map((s) => ({ step: s, value: s / 100 })) } },
  { id: "cmpb", name: "qa1 seed 2", set: { "envs.task": "qa1", seed: 2 }, points: { qf_loss: steps(60, 10).map((s) => ({ step: s, value: 2 + s / 50 })), eval_coverage: steps(60, 20).map((s) => ({ step: s, value: s / 80 })) } },
  { id: "cmpc", name: "qa2 seed 1", set: { "envs.task": "qa2", seed: 1 }, points: { qf_loss: steps(100, 10).map((s) => ({ step: s, value: 0.5 + Math.sin(s) })), eval_coverage: [{ step: 0, value: 0 }] } },
];
const IDS = RUNS.map((r) => r.id);

/** The band the qa1 group should show for `key`: at the last step both runs logged, mean / sample std / min / max. */
function expectedBand(key: string) {
  const [a, b] = RUNS.slice(0, 2).map((r) => new Map(r.points[key].map((p) => [p.step, p.value])));
  const shared = [...a.keys()].filter((s) => b.has(s));
  const step = Math.max(...shared);
  const vs = [a.get(step)!, b.get(step)!];
  const mean = (vs[0] + vs[1]) / 2;
  const std = Math.sqrt(vs.reduce((acc, v) => acc + (v - mean) ** 2, 0) / (vs.length - 1));
  const endsAt = Math.min(...[...a.keys()].filter((s) => s > step));
  return { step, mean, std, min: Math.min(...vs), max: Math.max(...vs), endsAt };
}

describe("compare runs and dashboards in a real browser", { skip: skip ?? false, timeout: 10 * 60_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];
  const shot = async (name: string) => {
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  };
  const attr = (sel: string, name: string) => page.locator(sel).first().getAttribute(name, { timeout: 2_000 }).catch(() => null);
  const until = (what: string, fn: () => Promise<boolean>) => waitFor(what, async () => (await fn()) || null, 20_000, 100);

  before(async () => {
    ensureNextBuild((m) => console.log(`# ${m}`));
    server = await startTestServer();
    const t0 = Date.now() - 60_000;
    await seedRuns(`file:${path.join(server.dataDir, "qrag.db")}`, RUNS.map((r, i) => ({ ...r, createdAt: new Date(t0 + i * 1000) })));
    browser = await launchBrowser();
    page = await watchedPage(browser, errors, { width: 1360, height: 1000 });
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(`console: ${m.text()}`);
    });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    assert.deepEqual(errors, [], "no page errors");
  });

  test("runs are selected in the table with a shift-click range, and Compare opens them", async () => {
    await page.goto(`${server.url}/`);
    const boxes = page.locator('[data-testid="runs-table"] tbody [data-testid="select-run"]');
    await until("three rows", async () => (await boxes.count()) === 3);
    await boxes.nth(0).click();
    await boxes.nth(2).click({ modifiers: ["Shift"] });
    await until("three selected", async () => /^3 selected/.test((await page.locator('[data-testid="selection-count"]').textContent()) ?? ""));
    await page.click('[data-testid="compare-button"]');
    await page.waitForURL(/\/compare\?runs=/);
    const runs = new URL(page.url()).searchParams.get("runs")!.split(",");
    assert.deepEqual([...runs].sort(), [...IDS].sort());
    await until("three lines in the TD-loss panel", async () => (await attr('[data-testid="compare-chart-qf_loss"]', "data-lines")) === "3");
  });

  test("grouped by envs.task: one band per group, read against the seeded points; the band end is shown", async () => {
    await page.goto(`${server.url}/compare?runs=${IDS.join(",")}`);
    const groupBy = page.locator('[data-testid="group-by"]');
    await until("envs.task offered as a group key", async () => (await groupBy.locator("option").allTextContents()).includes("envs.task"));
    const options = await groupBy.locator("option").allTextContents();
    assert.ok(!options.includes("seed"), `seed is not a group key: ${options.join(", ")}`);
    await groupBy.selectOption("envs.task");
    await page.waitForURL(/group=envs\.task/);
    for (const key of ["qf_loss", "eval_coverage"]) {
      const row = page.locator(`[data-testid="band-summary-${key}"] tr[data-group='g:"qa1"']`);
      await until(`the qa1 band of ${key}`, async () => (await row.getAttribute("data-mean", { timeout: 1_000 }).catch(() => "")) !== "");
      const want = expectedBand(key);
      const got = Object.fromEntries(await Promise.all(["step", "mean", "std", "min", "max", "ends-at", "runs"].map(async (k) => [k, Number(await row.getAttribute(`data-${k}`))])));
      assert.equal(got.runs, 2, "two seeds counted");
      assert.equal(got.step, want.step);
      for (const k of ["mean", "std", "min", "max"] as const) assert.ok(Math.abs(got[k] - want[k]) < 1e-9, `${key} ${k}: ${got[k]} vs ${want[k]}`);
      assert.equal(got["ends-at"], want.endsAt);
      assert.match((await page.locator(`[data-testid="compare-chart-${key}-band-end"]`).textContent()) ?? "", new RegExp(`qa1: band ends at step ${want.endsAt}`));
    }
    const chart = page.locator('[data-testid="compare-chart-qf_loss"]');
    assert.equal(await chart.getAttribute("data-bands"), "1", "qa1 is a band");
    assert.equal(await chart.getAttribute("data-lines"), "1", "qa2 (one run) is a line");
    assert.equal(await page.locator('[data-testid="compare-legend"] [data-testid="legend-item"]').count(), 2);
    await page.locator('[data-testid="band-kind"]').selectOption("minmax");
    await page.waitForURL(/band=minmax/);
    await shot("compare");
  });

  test("grouped, from 1,280 to 1,920 px: no sideways scroll, each stats table inside its own panel, panels apart", async () => {
    const narrow = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    try {
      for (const width of [1280, 1400, 1920]) {
        await narrow.setViewportSize({ width, height: 900 });
        await narrow.goto(`${server.url}/compare?runs=${IDS.join(",")}&group=envs.task&band=minmax`);
        await narrow.locator('[data-testid="band-summary-eval_coverage"] tr[data-group=\'g:"qa1"\'][data-runs="2"]').waitFor({ timeout: 20_000 });
        const layout = await narrow.evaluate(() => {
          const panels = Array.from(document.querySelectorAll('[data-testid^="compare-panel-"]'), (p) => {
            const r = p.getBoundingClientRect();
            const inner = Array.from(p.querySelectorAll(".table-scroll, section"), (c) => c.getBoundingClientRect());
            return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, innerRight: Math.max(...inner.map((c) => c.right)), innerLeft: Math.min(...inner.map((c) => c.left)) };
          });
          return { scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, panels };
        });
        assert.ok(layout.scrollWidth <= layout.innerWidth, `${width} px: the page is ${layout.scrollWidth} px wide`);
        assert.ok(layout.panels.length >= 2, `${width} px: panels drawn`);
        for (const [i, p] of layout.panels.entries()) {
          assert.ok(p.innerLeft >= p.left - 0.5 && p.innerRight <= p.right + 0.5, `${width} px, panel ${i}: its chart and stats (${p.innerLeft}–${p.innerRight}) lie within it (${p.left}–${p.right})`);
          for (const q of layout.panels.slice(i + 1)) {
            const apart = p.right <= q.left + 0.5 || q.right <= p.left + 0.5 || p.bottom <= q.top + 0.5 || q.bottom <= p.top + 0.5;
            assert.ok(apart, `${width} px: panels overlap`);
          }
        }
      }
    } finally {
      await narrow.close();
    }
  });

  test("a panel: 11 px ticks, a hover read-out of every run's raw value at the step, drag to zoom x and reset, log y", async () => {
    await page.goto(`${server.url}/compare?runs=${IDS.join(",")}&panels=qf_loss`);
    const sel = '[data-testid="compare-chart-qf_loss"]';
    await until("three lines drawn", async () => (await page.locator(`${sel} svg [data-line]`).count()) === 3 && Number(await attr(sel, "data-points")) === 11 + 7 + 11);
    const svg = page.locator(`${sel} svg`);
    const fonts = await svg.locator("[data-tick]").evaluateAll((ts) => ts.map((t) => [getComputedStyle(t).fontSize, t.getBoundingClientRect().height]));
    assert.ok(fonts.length >= 4 && fonts.every(([size, h]) => size === "11px" && Number(h) >= 10), `tick labels: ${JSON.stringify(fonts)}`);
    // x of a step on screen: the plot spans 60 px from the left to 10 px from the right, steps 0…100
    const box = (await svg.boundingBox())!;
    const at = (step: number) => ({ x: box.x + 60 + (step / 100) * (box.width - 70), y: box.y + 60 });
    await page.mouse.move(at(50).x, at(50).y);
    const rows = page.locator(`${sel} [data-testid="compare-chart-qf_loss-readout"] .readout-row`);
    await until("the read-out", async () => (await rows.count()) === 3);
    const read = Object.fromEntries(await rows.evaluateAll((rs) => rs.map((r) => [r.getAttribute("data-run"), [Number(r.getAttribute("data-at")), Number(r.getAttribute("data-value"))]])));
    const want: Record<string, [number, number]> = { cmpa: [50, 1.5], cmpb: [50, 3], cmpc: [50, 0.5 + Math.sin(50)] };
    for (const [id, [step, value]] of Object.entries(want)) assert.ok(read[id] && read[id][0] === step && Math.abs(read[id][1] - value) < 1e-9, `${id} at step ${step}: ${JSON.stringify(read[id])}`);
    assert.match((await page.locator(`${sel} .readout > div`).first().textContent()) ?? "", /^step 50/);
    // drag from step 20 to 60: x zooms there; reset brings the whole range back
    await page.mouse.move(at(20).x, at(20).y);
    await page.mouse.down();
    await page.mouse.move(at(60).x, at(60).y, { steps: 4 });
    await page.mouse.up();
    const zoom = (await attr(sel, "data-zoom"))!.split(",").map(Number);
    assert.ok(Math.abs(zoom[0] - 20) < 1 && Math.abs(zoom[1] - 60) < 1, `zoomed to ${zoom}`);
    const xs = await svg.locator('[data-tick="x"]').allTextContents();
    assert.ok(xs.every((t) => Number(t) >= 20 && Number(t) <= 60), `x ticks within the zoom: ${xs.join(", ")}`);
    await page.click('[data-testid="compare-chart-qf_loss-unzoom"]');
    assert.equal(await attr(sel, "data-zoom"), "");
    await page.click('[data-testid="compare-chart-qf_loss-log"]');
    assert.equal(await attr(sel, "data-log"), "yes");
    const ys = (await svg.locator('[data-tick="y"]').allTextContents()).map(Number);
    assert.ok(ys.length >= 2 && ys.every((v) => v > 0) && ys.some((v, i) => i > 0 && v / ys[i - 1] >= 9.99), `log ticks: ${ys.join(", ")}`);
  });

  test("the legend hides a run and solos one (and back)", async () => {
    await page.goto(`${server.url}/compare?runs=${IDS.join(",")}`);
    const lines = () => attr('[data-testid="compare-chart-qf_loss"]', "data-lines");
    await until("three lines", async () => (await lines()) === "3");
    const item = (id: string) => page.locator(`[data-testid="legend-item"][data-id="${id}"]`);
    await item("cmpb").locator('[data-testid="legend-toggle"]').click();
    await until("two lines after hiding", async () => (await lines()) === "2");
    assert.equal(await item("cmpb").getAttribute("data-hidden"), "1");
    assert.match(page.url(), /hidden=cmpb/);
    assert.equal(await page.locator('[data-testid="compare-chart-qf_loss"] [data-line="cmpb"]').count(), 0, "cmpb's path is gone");
    await item("cmpc").locator('[data-testid="legend-solo"]').click();
    await until("one line after solo", async () => (await lines()) === "1");
    assert.equal(await page.locator('[data-testid="compare-chart-qf_loss"] [data-line="cmpc"]').count(), 1);
    await item("cmpc").locator('[data-testid="legend-solo"]').click();
    await until("all lines back", async () => (await lines()) === "3");
  });

  test("the runs table: chosen columns from the URL, a filter expression, sorting on a chosen column; a bad filter names its token", async () => {
    await page.goto(`${server.url}/?cols=${encodeURIComponent("envs.task,best.eval_coverage")}&sort=best.eval_coverage&order=desc`);
    const table = page.locator('[data-testid="runs-table"]');
    const ours = (ids: (string | null)[]) => ids.filter((id) => IDS.includes(id!));
    const order = async () => ours(await table.locator("tbody tr[data-run-id]").evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-run-id"))));
    await until("the chosen columns drawn", async () => (await table.locator('td[data-column="best.eval_coverage"]').count()) >= 3);
    const headers = await table.locator("thead th").allTextContents();
    assert.ok(headers.some((h) => h.startsWith("envs.task")) && headers.some((h) => h.startsWith("best.eval_coverage ▼")), headers.join(" | "));
    assert.deepEqual(await order(), ["cmpa", "cmpb", "cmpc"], "best coverage, highest first");
    const cells = (col: string) => Promise.all(IDS.map((id) => table.locator(`tr[data-run-id="${id}"] td[data-column="${col}"]`).textContent()));
    assert.deepEqual(await cells("best.eval_coverage"), ["1", "0.75", "0"]);
    assert.deepEqual(await cells("envs.task"), ["qa1", "qa1", "qa2"]);
    // a header click turns the order
    await table.locator('th[data-sort="best.eval_coverage"]').click();
    await page.waitForURL(/order=asc/);
    await until("ascending", async () => (await order()).join() === "cmpc,cmpb,cmpa");
    // a filter expression, applied on Enter
    await page.fill('[data-testid="runs-where"]', "envs.task = qa1 and best.eval_coverage >= 0.8");
    await page.press('[data-testid="runs-where"]', "Enter");
    await until("the filtered rows", async () => (await order()).join() === "cmpa");
    assert.match(page.url(), /where=envs\.task/);
    await shot("runs-columns");
    // a bad expression: the error under the box names the token, and no table of stale rows is shown
    await page.fill('[data-testid="runs-where"]', "envs.task qa1");
    await page.press('[data-testid="runs-where"]', "Enter");
    const err = page.locator('[data-testid="runs-query-error"]');
    await err.waitFor();
    assert.equal(await err.textContent(), 'filter: expected an operator (= != >= <= > < ~) after envs.task, got "qa1" at character 11');
    assert.equal(await page.locator('[data-testid="runs-where"]').getAttribute("aria-invalid"), "true");
    // the browser logs the expected 400 as a failed resource load: not a page error
    const expected = errors.filter((e) => /status of 400/.test(e));
    assert.ok(expected.length >= 1, errors.join("\n"));
    errors.splice(0, errors.length, ...errors.filter((e) => !expected.includes(e)));
  });

  test("the Export menu downloads the compared runs' files, every row naming its run", async () => {
    await page.goto(`${server.url}/compare?runs=${IDS.join(",")}`);
    await page.click('[data-testid="export-menu"] summary');
    const links = page.locator('[data-testid="export-link"]');
    await links.first().waitFor();
    assert.deepEqual(await links.evaluateAll((as) => as.map((a) => a.getAttribute("data-file"))), ["metrics.csv", "metrics.json", "episodes.jsonl", "config.yaml", "tfevents"]);
    assert.ok(await links.first().isVisible(), "the menu opens");
    const hrefs = await links.evaluateAll((as) => as.map((a) => a.getAttribute("href")!));
    for (const href of hrefs) {
      const r = await page.request.get(`${server.url}${href}`);
      assert.equal(r.status(), 200, href);
      assert.match(r.headers()["content-disposition"] ?? "", /^attachment; filename="compare-3-runs-/, href);
    }
    const csv = (await (await page.request.get(`${server.url}${hrefs[0]}`)).text()).trim().split("\n");
    assert.equal(csv[0], "run_id,run_name,key,step,update,wall,value");
    assert.deepEqual([...new Set(csv.slice(1).map((l) => l.split(",")[0]))].sort(), [...IDS].sort(), "rows of every compared run");
  });

  test("the config diff lists only the keys that differ", async () => {
    await page.goto(`${server.url}/compare?runs=${IDS.join(",")}`);
    const rows = page.locator('[data-testid="config-diff"] tbody tr');
    // a column per run once every run's config has loaded
    await until("the diff of all three runs", async () => (await page.locator('[data-testid="config-diff"] thead th').count()) === 1 + IDS.length);
    const keys = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-key")));
    assert.deepEqual(keys, ["envs.task", "seed"]);
    const task = await page.locator('[data-testid="config-diff"] tr[data-key="envs.task"] td[data-run-id]').allTextContents();
    assert.deepEqual(task, RUNS.map((r) => String(r.set!["envs.task"])));
  });

  test("a comparison saved as a dashboard reopens from its URL and is listed", async () => {
    await page.goto(`${server.url}/compare?runs=${IDS.join(",")}&group=envs.task&smooth=0.2&panels=qf_loss`);
    await until("the band", async () => (await attr('[data-testid="compare-chart-qf_loss"]', "data-bands")) === "1");
    const name = `qa1 vs qa2 <b>${Date.now()}</b>`;
    await page.fill('[data-testid="dashboard-name"]', name);
    await page.click('[data-testid="save-dashboard"]');
    await page.waitForURL(/\/dashboards\/[\w-]+$/);
    const id = decodeURIComponent(new URL(page.url()).pathname.split("/").pop()!);
    const saved = (await (await fetch(`${server.url}/api/dashboards/${id}`)).json()) as DashboardDto;
    assert.equal(saved.name, name);
    assert.deepEqual(saved.spec.runs, IDS);
    assert.equal(saved.spec.group, "envs.task");
    assert.equal(saved.spec.smoothing, 0.2);
    assert.deepEqual(saved.spec.panels, ["qf_loss"]);

    const fresh = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    try {
      await fresh.goto(`${server.url}/dashboards/${id}`);
      await fresh.locator('[data-testid="band-summary-qf_loss"] tr[data-group=\'g:"qa1"\'][data-runs="2"]').waitFor({ timeout: 20_000 });
      assert.equal(await fresh.locator('[data-testid="dashboard-title"]').inputValue(), name, "the name is text, not markup");
      assert.equal(await fresh.locator('[data-testid="group-by"]').inputValue(), "envs.task");
      assert.equal(await fresh.locator('[data-testid="compare-chart-eval_coverage"]').count(), 0, "only the saved panel");
      await fresh.click('[data-testid="nav-dashboards"]');
      await fresh.waitForURL(/\/dashboards$/);
      const link = fresh.locator(`[data-testid="dashboards-table"] tr[data-dashboard-id="${id}"] a`);
      await link.waitFor({ timeout: 10_000 });
      assert.equal(await link.textContent(), name);
    } finally {
      await fresh.close();
    }
  });
});
