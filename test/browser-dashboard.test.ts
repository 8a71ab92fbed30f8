/**
 * Real-browser tests of the dashboard (playwright-core + Debian chromium), against the real
 * server (server/main.ts, production Next build) and its real local worker running the engine's
 * tiny preset. Screenshots go to test-results/screenshots/.
 *
 * Without chromium the tests are skipped with a message, except under CI=true where that fails.
 * QRAG_E2E_URL=http://… reuses a running server instead of starting one.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { EpisodeDto } from "../lib/contracts/index.ts";
import { thresholdView } from "../lib/analysis/threshold.ts";
import { fmtNum } from "../lib/format.ts";
import { SCREENSHOTS, browserUnavailable, ensureNextBuild, launchBrowser, startTestServer, type TestServer, watchedPage } from "./ui-browser-helpers.ts";
import { waitFor } from "./platform-helpers.ts";

const skip = browserUnavailable();
if (skip) console.log(`browser tests skipped: ${skip}`);

describe("dashboard in a real browser", { skip: skip ?? false, timeout: 15 * 60_000 }, () => {
  let server: TestServer | null = null;
  let base = process.env.QRAG_E2E_URL ?? "";
  let browser: Browser;
  let page: Page;
  /** The run launched from the form; the later tests open its episodes and cancel it. */
  let runId = "";
  const errors: string[] = [];

  const shot = async (name: string, p: Page = page) => {
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await p.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  };
  const points = (testId: string) => page.locator(`[data-testid="${testId}"]`).getAttribute("data-points").then((v) => Number(v ?? 0));

  before(async () => {
    if (!base) {
      ensureNextBuild((m) => console.log(`# ${m}`));
      server = await startTestServer();
      base = server.url;
    }
    browser = await launchBrowser();
    page = await watchedPage(browser, errors, { width: 1360, height: 900 });
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(`console: ${m.text()}`);
    });
    // the local worker must be connected before a run can start
    await waitFor("a connected worker", async () => {
      const r = await fetch(`${base}/api/workers`);
      const ws = (await r.json()) as { status: string }[];
      return ws.some((w) => w.status !== "offline");
    }, 60_000);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("an invalid field shows its message, before submit and from the server", async () => {
    await page.goto(`${base}/runs/new`);
    await page.selectOption('[data-testid="preset-select"]', "tiny");
    const steps = page.locator('[data-field="steps_count"] input');
    const stepsError = page.locator('[data-field="steps_count"] .field-error');
    // the server checks the config as it is typed (POST /api/runs/validate)
    const shows = (loc: typeof stepsError, want: RegExp) => waitFor(`"${want.source}" shown`, async () => want.test((await loc.textContent({ timeout: 250 }).catch(() => "")) ?? ""), 10_000);
    await steps.fill("-1");
    await shows(stepsError, /^must be ≥ 1$/);
    await steps.fill("many");
    await shows(stepsError, /^must be a number$/);
    await page.click('[data-testid="advanced-fields"] > summary');
    await page.locator('[data-field="algo.encoder.dim"] input').fill("30");
    await shows(page.locator('[data-field="algo.encoder.dim"] .field-error'), /divisible by 4/);
    // submitting an invalid form sends nothing and keeps the messages
    let posted = 0;
    page.on("request", (r) => {
      if (r.method() === "POST" && r.url().endsWith("/api/runs")) posted++;
    });
    await page.click('[data-testid="launch-button"]');
    assert.equal(posted, 0);
    assert.ok(page.url().endsWith("/runs/new"));
    await shot("form-invalid");

    // a 400 from the server puts its fieldErrors under the fields
    await steps.fill("60");
    await page.locator('[data-field="algo.encoder.dim"] input').fill("32");
    await page.route("**/api/runs", (route) =>
      route.request().method() === "POST"
        ? route.fulfill({ status: 400, contentType: "application/json", body: JSON.stringify({ error: "invalid config: envs.task", fieldErrors: { "envs.task": "the server refused this task" } }) })
        : route.continue(),
    );
    await page.click('[data-testid="launch-button"]');
    await page.locator('[data-field="envs.task"] .field-error').waitFor();
    assert.equal(await page.locator('[data-field="envs.task"] .field-error').textContent(), "the server refused this task");
    await page.unroute("**/api/runs");
    errors.length = 0; // the browser logs the mocked 400 as a failed resource load
  });

  test("the launch form: the task is a select, values changed from the preset are marked with a reset, and listed before launch", async () => {
    await page.goto(`${base}/runs/new`);
    await page.selectOption('[data-testid="preset-select"]', "tiny");
    const task = page.locator('[data-field="envs.task"] select');
    const TASKS = ["qa1_single-supporting-fact", "qa2_two-supporting-facts", "qa3_three-supporting-facts", "qa4_two-arg-relations", "qa5_three-arg-relations"];
    assert.deepEqual(await task.locator("option").allTextContents(), TASKS, "the tasks to pick from");
    assert.equal(await task.inputValue(), TASKS[0]);
    const changes = page.locator('[data-testid="config-changes"]');
    assert.equal(await changes.getAttribute("data-count"), "0");
    assert.equal(await page.locator('[data-field][data-changed="yes"]').count(), 0, "nothing marked on the preset as it is");
    await task.selectOption(TASKS[2]);
    await page.locator('[data-field="steps_count"] input').fill("90");
    await page.locator('[data-field="envs.task"][data-changed="yes"]').waitFor();
    assert.deepEqual(await page.locator('[data-field][data-changed="yes"]').evaluateAll((fs) => fs.map((f) => f.getAttribute("data-field")).sort()), ["envs.task", "steps_count"]);
    assert.equal(await changes.getAttribute("data-count"), "2");
    assert.deepEqual(await changes.locator("li").allTextContents(), ["steps_count 60 → 90", `envs.task ${TASKS[0]} → ${TASKS[2]}`]);
    // reset puts the preset's value back and unmarks the field
    await page.locator('[data-field="envs.task"] [data-testid="field-reset"]').click();
    assert.equal(await task.inputValue(), TASKS[0]);
    await page.locator('[data-field="envs.task"]:not([data-changed])').waitFor();
    assert.deepEqual(await changes.locator("li").allTextContents(), ["steps_count 60 → 90"]);
    // the common fields come first; the rest wait under "Advanced", closed, which counts them
    const advanced = page.locator('[data-testid="advanced-fields"]');
    assert.equal(await advanced.getAttribute("open"), null, "Advanced starts closed on the preset as it is");
    assert.ok(Number(await advanced.getAttribute("data-fields")) > 30, `advanced fields: ${await advanced.getAttribute("data-fields")}`);
    assert.ok(await page.locator('[data-field="steps_count"]').isVisible());
    assert.equal(await page.locator('[data-field="algo.encoder.dim"]').count(), 0, "advanced fields are not drawn while closed");
    const summaryText = () => advanced.locator("> summary").textContent();
    assert.match((await summaryText()) ?? "", /^Advanced: \d+ more fields$/);
    await advanced.locator("> summary").click();
    await page.locator('[data-field="algo.encoder.dim"] input').fill("48");
    await page.locator('[data-field="algo.encoder.dim"][data-changed="yes"]').waitFor();
    assert.match((await summaryText()) ?? "", /\(1 changed\)$/);
    // closed again, a changed advanced field is still counted on the summary, and the change list names it
    await advanced.locator("> summary").click();
    assert.equal(await page.locator('[data-field="algo.encoder.dim"]').count(), 0);
    assert.match((await summaryText()) ?? "", /\(1 changed\)$/);
    assert.ok((await changes.locator("li").allTextContents()).includes("algo.encoder.dim 32 → 48"));
    await advanced.locator("> summary").click();
    await page.locator('[data-field="algo.encoder.dim"] [data-testid="field-reset"]').click();
    // a fixed value is a select of one, not an editable-looking box
    const fixed = page.locator('[data-field="envs.feedback.type"] select');
    assert.deepEqual([await fixed.isDisabled(), await fixed.locator("option").allTextContents()], [true, ["gt"]]);
  });

  test("the launch form shows the data root and suggests what it holds for path fields", async (t) => {
    if (!server) return t.skip("an external server's data root is not ours to write");
    fs.mkdirSync(path.join(server!.dataDir, "books"), { recursive: true });
    fs.writeFileSync(path.join(server!.dataDir, "books", "moby.txt"), "Call me Ishmael.\n");
    await page.goto(`${base}/runs/new`);
    await page.selectOption('[data-testid="preset-select"]', "tiny");
    const root = page.locator('[data-testid="data-root"]');
    await waitFor("the data root shown", async () => ((await root.textContent()) ?? "").includes(server!.dataDir), 10_000);
    // the noise folder field (under Advanced) suggests the folders of the root; the datalists hold its entries, not internals
    await page.click('[data-testid="advanced-fields"] > summary');
    assert.equal(await page.locator('[data-field="envs.noise"] input').getAttribute("list"), "data-files-dir");
    const options = (kind: string) => page.locator(`datalist#data-files-${kind} option`).evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
    assert.ok((await options("dir")).includes("books"), `dirs: ${await options("dir")}`);
    const files = await options("file");
    assert.ok(files.includes("books/moby.txt"), `files: ${files}`);
    assert.ok(!files.some((f) => f.endsWith(".db") || f === "worker-token" || f.startsWith("runs")), `internals listed: ${files}`);
  });

  test("launch a run from the form and watch the TD-loss chart gain points live", async () => {
    await page.goto(`${base}/runs/new`);
    await page.selectOption('[data-testid="preset-select"]', "tiny");
    // long enough to watch it stream and to cancel it later; TD loss is logged every 10 updates
    await page.locator('[data-field="steps_count"] input').fill("3000");
    await page.locator('[data-field="eval_interval"] input').fill("50");
    await page.locator('[data-field="name"] input').fill("e2e-launch");
    await page.locator("#f-tags").fill("e2e, browser");
    await page.click('[data-testid="launch-button"]');
    await page.waitForURL((u) => /^\/runs\/(?!new$)[^/]+$/.test(u.pathname), { timeout: 15_000 });
    runId = page.url().split("/").pop()!;
    assert.equal(await page.locator('[data-testid="run-name"]').textContent(), "e2e-launch");

    await page.waitForFunction(() => Number(document.querySelector('[data-testid="chart-qf_loss"]')?.getAttribute("data-points")) > 0, null, { timeout: 60_000 });
    const first = await points("chart-qf_loss");
    await page.waitForFunction((n) => Number(document.querySelector('[data-testid="chart-qf_loss"]')?.getAttribute("data-points")) >= n + 3, first, { timeout: 60_000 });
    assert.equal(await page.locator('[data-testid="run-page"]').getAttribute("data-status"), "running");
    // drawn, not only counted: the TD-loss curve is an SVG path (raw; a smoothed one joins once the series is dense)
    assert.ok((await page.locator('[data-testid="chart-qf_loss"] .recharts-line-curve').count()) >= 1);
    await page.locator('[data-testid="backend-badge"]').waitFor();
    await page.waitForTimeout(1500);
    await shot("run-live");
  });

  test("open an episode and see its steps", async () => {
    assert.ok(runId, "needs the launched run");
    const link = page.locator('[data-testid="episode-link"]').first();
    await link.waitFor({ timeout: 60_000 });
    await link.click();
    await page.waitForURL(/\/episodes\/\d+$/);
    await page.locator('[data-testid="episode-view"]').waitFor();
    const question = (await page.locator('[data-testid="episode-question"]').textContent()) ?? "";
    assert.ok(question.trim().length > 0);
    assert.ok((await page.locator('[data-testid="episode-step"]').count()) >= 1);
    assert.ok((await page.locator('[data-testid="gold-facts"] li').count()) >= 1);
    assert.match((await page.locator('[data-testid="oracle-label"]').textContent()) ?? "", /oracle stop/);

    // the Q-threshold slider: kept steps and scores as the engine's definitions give them
    const episodeId = /\/episodes\/(\d+)$/.exec(page.url())![1];
    const { record } = (await (await fetch(`${base}/api/runs/${runId}/episodes/${episodeId}`)).json()) as EpisodeDto;
    assert.ok(record);
    // thresholds just below and just above each pick's Q (on the slider's 0.01 grid), so the kept
    // prefix changes between them wherever a Q lies inside (0, 1)
    const grid = (v: number) => Math.round(Math.min(1, Math.max(0, v)) * 100) / 100;
    const ts = [...new Set([0, 1, record.filtered.threshold, ...record.q_values.flatMap((q) => [grid(Math.floor(q * 100) / 100 - 0.01), grid(Math.ceil(q * 100) / 100)])])];
    const keptCounts = new Set(ts.map((t) => thresholdView(record, t).kept));
    if (record.q_values.some((q) => q > 0.02 && q < 0.98)) assert.ok(keptCounts.size >= 2, "the thresholds tried change what is kept");
    for (const t of ts) {
      await page.locator('[data-testid="threshold-slider"]').fill(String(t));
      const want = thresholdView(record, t);
      await waitFor(`threshold ${t} applied`, async () => (await page.locator('[data-testid="threshold-value"]').textContent()) === fmtNum(t, 2), 10_000);
      assert.equal(await page.locator('[data-testid="episode-step"][data-kept="yes"]').count(), want.kept, `kept steps at Q > ${t}`);
      const cells = await page.locator('[data-testid="threshold-row"] td.num').allTextContents();
      assert.deepEqual(cells, [want.precision, want.recall, want.f1, want.coverage].map((v) => fmtNum(v, 3)), `scores at Q > ${t}`);
      // the evaluated row and the slider's row: one row when they are the same threshold, never two alike
      const labels = (await page.locator('[data-testid="episode-metrics"] tbody tr td:first-child').allTextContents()).filter((l) => l.startsWith("Q >") && !l.includes("prune"));
      const atOwn: boolean = t === record.filtered.threshold && want.kept === record.filtered.kept;
      assert.equal(labels.length, atOwn ? 1 : 2, `threshold rows at Q > ${t}: ${labels.join(" | ")}`);
    }
    const own = thresholdView(record, record.filtered.threshold);
    assert.deepEqual([own.kept, own.f1], [record.filtered.kept, record.filtered.f1], "at its own threshold the view is the engine's filtered score");
    await shot("episode-threshold");

    // the step player on the run's longest stored episode: keys move the highlighted step, the
    // URL names it, and opening that URL shows the same step
    const list = (await (await fetch(`${base}/api/runs/${runId}/episodes?limit=100`)).json()) as EpisodeDto[];
    const full = await Promise.all(list.map(async (e) => (await (await fetch(`${base}/api/runs/${runId}/episodes/${e.id}`)).json()) as EpisodeDto));
    const longest = full.reduce((a, b) => ((b.record?.steps.length ?? 0) > (a.record?.steps.length ?? 0) ? b : a));
    const n = longest.record!.steps.length;
    assert.ok(n >= 2, `an episode with at least 2 steps to step through (longest has ${n})`);
    await page.goto(`${base}/runs/${runId}/episodes/${longest.id}`);
    const current = page.locator('[data-testid="episode-step"][data-current="yes"]');
    const at = async (k: number) => {
      await waitFor(`step ${k} highlighted`, async () => (await page.locator('[data-testid="step-position"]').textContent()) === `step ${k} of ${n}`, 10_000);
      assert.equal(await current.count(), 1);
      assert.equal(await page.locator('[data-testid="episode-step"]').nth(k - 1).getAttribute("data-current"), "yes");
      assert.equal(new URL(page.url()).searchParams.get("step"), k === 1 && !new URL(page.url()).searchParams.has("step") ? null : String(k));
    };
    await page.locator('[data-testid="step-position"]').waitFor();
    await at(1);
    await page.keyboard.press("ArrowRight");
    await at(2);
    await page.keyboard.press("End");
    await at(n);
    await page.keyboard.press("ArrowRight");
    await at(n);
    await page.keyboard.press("ArrowLeft");
    await at(n - 1);
    await page.keyboard.press("Home");
    await at(1);
    await page.goto(`${base}/runs/${runId}/episodes/${longest.id}?step=${n}`);
    await page.locator('[data-testid="step-position"]').waitFor();
    await at(n);
    assert.match((await current.textContent()) ?? "", new RegExp(`chunk #${longest.record!.steps[n - 1].index}(?!\\d)`), "the highlighted card is that step's chunk");
  });

  test("cancel a run and see status cancelled", async () => {
    await page.goto(`${base}/runs/${runId}`);
    await page.locator('[data-testid="run-page"][data-status="running"]').waitFor({ timeout: 30_000 });
    await page.locator('[data-testid="stream-badge"]', { hasText: "streaming" }).waitFor();
    // a misclick asks first: dismissed, nothing is sent and the run goes on
    const cancels: string[] = [];
    const onRequest = (r: { method(): string; url(): string }) => r.method() === "POST" && r.url().endsWith("/cancel") && cancels.push(r.url());
    page.on("request", onRequest);
    const asked: string[] = [];
    page.once("dialog", (d) => {
      asked.push(d.message());
      void d.dismiss();
    });
    await page.click('[data-testid="cancel-button"]');
    assert.match(asked[0] ?? "", /^Cancel "e2e-launch"\?/);
    await page.evaluate(() => fetch("/api/health").then((r) => r.ok)); // a round trip after the click's handler
    assert.deepEqual(cancels, [], "no cancel sent when the question is dismissed");
    assert.equal(await page.locator('[data-testid="run-page"]').getAttribute("data-status"), "running");
    page.once("dialog", (d) => void d.accept());
    await page.click('[data-testid="cancel-button"]');
    await page.locator('[data-testid="run-page"][data-status="cancelled"]').waitFor({ timeout: 60_000 });
    page.off("request", onRequest);
    assert.equal(cancels.length, 1);
    assert.equal(await page.locator('[data-testid="status-badge"]').first().getAttribute("data-status"), "cancelled");
    await page.locator('[data-testid="resume-button"]').waitFor();
    assert.equal(await page.locator('[data-testid="stream-badge"]').count(), 0, "an ended run is not 'streaming'");
    // one row per checkpoint folder, however many evals saved it
    const names = await page.locator('[data-testid="checkpoints-table"] tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-name")));
    assert.ok(names.includes("last"), `checkpoint rows: ${names.join(", ")}`);
    assert.equal(new Set(names).size, names.length, `one row per checkpoint: ${names.join(", ")}`);
    // every export downloads from the menu
    await page.click('[data-testid="export-menu"] summary');
    const links = page.locator('[data-testid="export-link"]');
    assert.deepEqual(await links.evaluateAll((as) => as.map((a) => a.getAttribute("data-file"))), ["metrics.csv", "metrics.json", "episodes.jsonl", "config.yaml", "tfevents"]);
    for (const href of await links.evaluateAll((as) => as.map((a) => a.getAttribute("href")!))) {
      const r = await page.request.get(`${base}${href}`);
      assert.equal(r.status(), 200, href);
      assert.match(r.headers()["content-disposition"] ?? "", /^attachment; filename=/, href);
    }
    await shot("run-cancelled");
    // clone it into the form: the fields come back with the run's config
    await page.click('[data-testid="clone-link"]');
    await page.waitForURL(/\/runs\/new\?clone=/);
    await page.locator('[data-testid="launch-form"]').waitFor();
    assert.equal(await page.locator('[data-field="steps_count"] input').inputValue(), "3000");
    assert.equal(await page.locator('[data-field="name"] input').inputValue(), "e2e-launch");
    assert.equal(await page.locator('[data-testid="preset-select"]').inputValue(), "tiny");
  });

  test("a fresh load never shows the top bar 'offline' before the live socket connects", async () => {
    const fresh = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    try {
      // every text the top bar's badges take, from the first paint on (no named functions in here:
      // the test's transpiler would wrap them in a helper the page does not have)
      await fresh.addInitScript(() => {
        const w = window as unknown as { __badges: string[] };
        w.__badges = [];
        new MutationObserver(() => {
          for (const b of Array.from(document.querySelectorAll(".topbar .workers .badge"))) {
            const t = b.textContent ?? "";
            if (!w.__badges.includes(t)) w.__badges.push(t);
          }
        }).observe(document, { subtree: true, childList: true, characterData: true });
      });
      await fresh.goto(`${base}/`);
      await fresh.locator('[data-testid="socket-badge"][data-state="live"]').waitFor({ timeout: 20_000 });
      const badges = await fresh.evaluate(() => (window as unknown as { __badges: string[] }).__badges);
      assert.ok(badges.includes("live"), badges.join(" | "));
      assert.ok(!badges.includes("offline"), `the badge said offline on a normal load: ${badges.join(" | ")}`);
    } finally {
      await fresh.close();
    }
  });

  test("the runs table lists the run with its tags; light and dark screenshots", async () => {
    await page.goto(`${base}/`);
    const row = page.locator(`[data-testid="runs-table"] tr[data-run-id="${runId}"]`);
    await row.waitFor();
    assert.match((await row.textContent()) ?? "", /e2e-launch.*cancelled/);
    await row.locator("button.chip", { hasText: "browser" }).click();
    await page.waitForURL(/tag=browser/);
    await row.waitFor();
    await shot("runs-light");
    const dark = await browser.newPage({ viewport: { width: 1360, height: 900 }, colorScheme: "dark" });
    await dark.goto(`${base}/runs/${runId}`);
    await dark.locator('[data-testid="chart-qf_loss"] .recharts-line-curve').first().waitFor();
    await dark.waitForTimeout(500);
    await shot("run-dark", dark);
    await dark.close();
    assert.deepEqual(errors, []);
  });
});
