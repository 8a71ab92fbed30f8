/**
 * The playground in a real browser (playwright-core + Debian chromium) against the real server,
 * with a tiny run trained into its data folder: from the run's checkpoint list ("Try in
 * playground"), load a benchmark sample (its text, question and gold facts fill the form), then
 * upload a document and ask a question, run, and read the replay player — every step's
 * pick, its Q bars (values as the API gives them for the same input), the soft-value line and the
 * threshold; a chunk holding `<img onerror>` is shown as literal text and runs nothing; nothing is
 * stored until "Save as episode", after which the run lists it and it opens in the episode page.
 * Screenshot: test-results/screenshots/playground.png.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import type { EpisodeDto, PlaygroundResultDto, PlaygroundSampleDto } from "../lib/contracts/index.ts";
import { fmtNum } from "../lib/format.ts";
import { SCREENSHOTS, browserUnavailable, ensureNextBuild, launchBrowser, startTestServer, type TestServer, watchedPage } from "./ui-browser-helpers.ts";
import { waitFor } from "./platform-helpers.ts";
import { tinyRunInto } from "./playground-helpers.ts";

const skip = browserUnavailable();
if (skip) console.log(`browser tests skipped: ${skip}`);

const RUN = "pg-browser";
const XSS_LINE = `Bob shouted <img src=x onerror="window.__xss=1"> in the hall.`;
// one chunk per line, fewer than max_steps (6): every chunk is picked, the XSS one too
const DOCUMENT = ["Mary went to the kitchen.", "John took the apple there.", XSS_LINE, "Sandra moved to the garden."].join("\n");
const QUESTION = "Where is Mary?";

describe("playground in a real browser", { skip: skip ?? false, timeout: 10 * 60_000 }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  before(async () => {
    ensureNextBuild((m) => console.log(`# ${m}`));
    server = await startTestServer();
    await tinyRunInto(server.dataDir, `file:${path.join(server.dataDir, "qrag.db")}`, RUN);
    browser = await launchBrowser();
    page = await watchedPage(browser, errors, { width: 1360, height: 1000 });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  const position = () => page.locator('[data-testid="step-position"]').textContent();
  const playgroundEpisodes = async () => (await (await fetch(`${server.url}/api/runs/${RUN}/episodes?phase=playground`)).json()) as EpisodeDto[];

  test("paste, run, replay step by step (Q bars, soft value, threshold), literal text; save finds it in the run", async () => {
    await page.goto(`${server.url}/runs/${RUN}`);
    await page.locator('tr[data-name="best"] [data-testid="try-playground"]').click();
    await page.waitForURL(/\/playground\?run=pg-browser&checkpoint=best/);
    await page.locator('[data-testid="pg-checkpoint"]').waitFor();
    assert.equal(await page.locator('[data-testid="pg-run"]').inputValue(), RUN);
    // a benchmark sample of the run's own dataset, to edit: its chunks one per line, its gold facts kept
    await waitFor("the run's checkpoints loaded", () => page.locator('[data-testid="pg-load-sample"]').isEnabled(), 15_000);
    await page.locator('[data-testid="pg-sample-index"]').fill("2");
    await page.locator('[data-testid="pg-load-sample"]').click();
    const sample = (await (await fetch(`${server.url}/api/runs/${RUN}/playground/sample?index=2`)).json()) as PlaygroundSampleDto;
    await waitFor("the sample in the form", async () => (await page.locator('[data-testid="pg-document"]').inputValue()) === sample.document, 15_000);
    assert.equal(await page.locator('[data-testid="pg-question"]').inputValue(), sample.question);
    assert.match((await page.locator('[data-testid="pg-gold"]').textContent()) ?? "", new RegExp(`^${sample.gold.length} gold fact`));
    await page.locator('[data-testid="pg-gold"] button').click();
    // then our own document, uploaded as a .txt file (read in the browser)
    await page.locator('[data-testid="pg-upload"]').setInputFiles({ name: "doc.txt", mimeType: "text/plain", buffer: Buffer.from(DOCUMENT) });
    await waitFor("the uploaded text in the form", async () => (await page.locator('[data-testid="pg-document"]').inputValue()) === DOCUMENT, 10_000);
    await page.locator('[data-testid="pg-question"]').fill(QUESTION);
    await waitFor("the Run button enabled", () => page.locator('[data-testid="pg-run-button"]').isEnabled(), 15_000);
    await page.locator('[data-testid="pg-run-button"]').click();
    await waitFor("the episode (or an error)", async () => {
      const err = page.locator('[data-testid="pg-error"]');
      if (await err.count()) assert.fail(`the page says: ${await err.textContent()}`);
      return page.locator('[data-testid="episode-view"]').isVisible();
    }, 60_000, 100, () => `${errors.join("\n")}\n${server.output().slice(-1500)}`);
    assert.match((await page.locator('[data-testid="pg-latency"]').textContent()) ?? "", /4 chunks .* answered in \d+ ms .* not stored/);

    // the same input through the API (deterministic): what every step must show
    const res = await fetch(`${server.url}/api/runs/${RUN}/playground`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ checkpoint: "best", document: DOCUMENT, question: QUESTION }) });
    const { record } = (await res.json()) as PlaygroundResultDto;
    const n = record.steps.length;
    assert.equal(n, 4, "every chunk picked");
    assert.equal(await page.locator('[data-testid="threshold-value"]').textContent(), fmtNum(0.5, 2));
    assert.equal(await page.locator('[data-testid="episode-metrics"]').count(), 0, "no scores against no gold facts");
    assert.match((await page.locator('[data-testid="no-gold"]').textContent()) ?? "", /No gold facts/);
    let xssStep = -1;
    for (let k = 0; k < n; k++) {
      if (k > 0) await page.keyboard.press("ArrowRight");
      const s = record.steps[k];
      await waitFor(`step ${k + 1}`, async () => (await position()) === `step ${k + 1} of ${n}`, 10_000);
      assert.equal(await page.locator('[data-testid="step-chosen-text"]').textContent(), s.text, `step ${k + 1}: the pick's text, literally`);
      const bars = page.locator('[data-testid="q-bar"]');
      assert.deepEqual(await bars.evaluateAll((els) => els.map((e) => [Number(e.getAttribute("data-index")), Number(e.getAttribute("data-q"))])), s.topk.map((c) => [c.index, c.q]), `step ${k + 1}: Q bars`);
      const shown = await page.locator('[data-testid="q-bars"] text').allTextContents();
      for (const c of s.topk) assert.ok(shown.includes(fmtNum(c.q, 3)), `step ${k + 1}: Q ${fmtNum(c.q, 3)} written beside its bar (${shown.join(" | ")})`);
      assert.equal(Number(await page.locator('[data-testid="soft-value-line"]').getAttribute("data-v")), s.v, `step ${k + 1}: soft value`);
      assert.ok(shown.includes(`V(s) ${fmtNum(s.v, 3)}`), `step ${k + 1}: V(s) written`);
      if (s.text === XSS_LINE) xssStep = k;
    }
    assert.ok(xssStep >= 0, "the chunk with markup was picked and shown");
    assert.equal(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined, "nothing ran");
    assert.equal(await page.locator('img[src="x"]').count(), 0, "no element was made from the text");
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, "playground.png"), fullPage: true });
    assert.deepEqual(await playgroundEpisodes(), [], "nothing stored by running");

    await page.locator('[data-testid="pg-save"]').click();
    await page.locator('[data-testid="pg-saved-link"]').waitFor({ timeout: 60_000 });
    const stored = await playgroundEpisodes();
    assert.equal(stored.length, 1);
    await page.goto(`${server.url}/runs/${RUN}`);
    const row = page.locator('[data-testid="episodes-playground"] [data-testid="episode-link"]');
    await row.waitFor();
    assert.equal(await row.count(), 1);
    assert.match((await page.locator('[data-testid="episodes-playground"]').textContent()) ?? "", new RegExp(stored[0].sampleId));
    await row.click();
    await page.waitForURL(new RegExp(`/runs/${RUN}/episodes/${stored[0].id}$`));
    await waitFor("the saved episode's player", async () => (await position()) === `step 1 of ${n}`, 15_000);
    assert.equal(await page.locator('[data-testid="step-chosen-text"]').textContent(), record.steps[0].text);
    assert.deepEqual(errors, []);
  });
});
